"""Load the provider's SDK in the background when the chat starts, so the first request does not wait for
``import openai`` / ``import anthropic`` (seconds on a loaded machine) after the person has typed.

A daemon thread imports the wire-format module of the model's API; Python's import lock makes an import of
the same module on the main thread wait for it rather than run twice. Failures are left for the first
request to report.
"""

from __future__ import annotations

import contextlib
import importlib
import threading

__all__ = ["PROVIDER_MODULES", "preload_provider"]

PROVIDER_MODULES = {
    "openai-completions": "sessiontree.llm.providers.openai_completions",
    "openai-responses": "sessiontree.llm.providers.openai_responses",
    "anthropic-messages": "sessiontree.llm.providers.anthropic",
}


def _load(module: str) -> None:
    with contextlib.suppress(Exception):  # reported by the first request, with its own message
        importlib.import_module(module)


def preload_provider(api: str) -> threading.Thread | None:
    """Start importing ``api``'s provider module (None when the API has no built-in module)."""
    module = PROVIDER_MODULES.get(api)
    if module is None:
        return None
    thread = threading.Thread(target=_load, args=(module,), name="sessiontree-preload", daemon=True)
    thread.start()
    return thread
