"""Adapters that let framework users keep their sessions as sessiontree trees: the OpenAI Agents SDK's
``Session`` (``integrations.openai_agents``) and LangChain's chat history (``integrations.langchain``).

Each needs its extra (``sessiontree[openai-agents]``, ``sessiontree[langchain]``); this package imports
neither, and nothing else in sessiontree imports this package.
"""
