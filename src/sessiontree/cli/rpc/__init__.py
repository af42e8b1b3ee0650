"""``sessiontree rpc``: pi's RPC protocol on stdin / stdout (``command`` the command line, ``server`` the loop,
``commands`` the handlers, ``framing`` the lines)."""
