"""``sessiontree chat``: an interactive agent over ``sessiontree.agent.AgentHarness`` on a pi session.

One module per job: the command line (``command``, over the agent session layer ``agent.host``), the REPL loop
(``app``), the input line (``input_line``), drawing harness events (``render``), the footer (``footer``),
slash commands (``slash``) and ``!cmd`` shell runs (``shell``). The REPL holds no session logic: every
change goes through the harness or a library function. Only this package imports prompt_toolkit and the
textual pickers.
"""
