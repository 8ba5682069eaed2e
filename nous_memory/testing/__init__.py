"""Test kit shipped with the package, for this project's tests and users' own.

- ``FakeEmbedder``: deterministic pseudo-embeddings for pure unit tests (similar texts
  are not close; thresholds and ranking need the real model).
- ``ScriptedLLMServer``: an OpenAI-compatible endpoint on 127.0.0.1 that plays a
  script of steps (``JSONReply``, ``TextReply``, ``ToolCallReply``, ``StatusReply``,
  ``DropConnection``, ``Delayed``), so LLM paths run through the real ``openai`` client.
"""

from .embedder import FakeEmbedder
from .llm_server import ScriptedLLMServer
from .script import (
    Delayed,
    DropConnection,
    JSONReply,
    Responder,
    ScriptStep,
    StatusReply,
    TextReply,
    ToolCallReply,
    Usage,
)

__all__ = [
    "Delayed",
    "DropConnection",
    "FakeEmbedder",
    "JSONReply",
    "Responder",
    "ScriptStep",
    "ScriptedLLMServer",
    "StatusReply",
    "TextReply",
    "ToolCallReply",
    "Usage",
]
