"""``sessiontree chat``: an interactive agent over ``sessiontree.agent.AgentHarness`` on a pi session.

One module per job: the command line (``command``, over the agent session layer ``agent.host``), the REPL loop
(``app``), the input line (``input_line``), drawing harness events (``render``) with streamed replies cut
into blocks (``stream_view``) and rendered as markdown (``markdown_view``), the footer (``footer``), slash
commands (``slash``), ``!cmd`` shell runs (``shell``), the session's writer role (``writer_lock``), loading
the provider SDK early (``preload``), the hint printed at the end (``continuing``) and leaving the process
(``exiting``). The REPL holds no session logic: every change goes through the harness or a library
function. Only this package imports prompt_toolkit and the textual pickers.
"""
