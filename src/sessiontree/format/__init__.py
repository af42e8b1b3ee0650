"""The format layer: what pi's session files are made of, with no I/O.

Entries and messages as pi writes them (``entries``, ``messages``), ids and clocks (``ids``), JSON with
JavaScript's semantics (``pi_json``) and text made safe to show (``safe_text``). Imports nothing of
sessiontree but ``errors``.
"""
