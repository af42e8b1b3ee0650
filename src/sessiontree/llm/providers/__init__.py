"""Wire formats: one module per API, each registering its stream function with ``llm.stream``.

Importing this package imports the SDKs; nothing here is needed to build or estimate a context.
"""
