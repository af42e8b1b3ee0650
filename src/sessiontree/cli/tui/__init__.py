"""Full-screen pickers for ``sessiontree chat``: the ``/tree`` navigator and the ``/resume`` and ``/fork``
pickers (textual apps), with their row logic in plain modules that tests drive without a terminal.

Only the ``*_app`` modules import textual; nothing here touches a session: the apps get rows and callbacks
and return what was chosen.
"""
