"""The tree layer: the id/parentId tree over a store and the context at a leaf, with no I/O of its own.

``entry_store`` is the protocol every back end implements (entries in append order, lines by position);
``tree_index`` the cycle-safe index over it; ``session_index`` what a ``SessionManager`` reads and writes
through; ``context`` the pure functions from a path to the messages and settings in force; ``views`` flat
rows and one-line previews for display. Imports only ``format`` and ``errors``.
"""
