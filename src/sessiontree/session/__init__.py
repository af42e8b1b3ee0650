"""The session layer: ``SessionManager`` (pi's session API) and what works on one session through it.

``manager`` the manager, ``store_access`` store URLs bound to it, ``lookup`` finding an entry or a session
from what a person typed, ``check`` and ``stats``, ``copying`` between stores. Imports ``storage``, ``tree``,
``format`` and (for token estimates) ``llm``.
"""
