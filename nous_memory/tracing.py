"""OpenTelemetry spans of the store's operations, named as the GenAI semantic conventions
name memory operations (``search_memory``, ``update_memory``, ``delete_memory``,
``delete_memory_store``).

Every operation of the facade that reads or changes an agent's memory is one span, with
the agent as the memory store (``gen_ai.memory.store.id``, ``gen_ai.agent.id``), the
episode as the conversation (``gen_ai.conversation.id``), the memory a single-record
operation names (``gen_ai.memory.record.id``), what came back (records, tokens) and,
when it fails, the error's type.  Texts never go on a span: queries and records are
private (the conventions make both opt-in).  With no tracer provider configured the
spans cost nothing measurable (OpenTelemetry's no-op tracer); without the
``opentelemetry-api`` package (it comes with FastAPI and the MCP SDK) nothing is
wrapped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sized
from typing import Any, TypeVar

try:
    from opentelemetry import trace
except ImportError:  # pragma: no cover - the API comes with fastapi and mcp
    trace = None  # type: ignore[assignment]

SEARCH, UPDATE, DELETE, DELETE_STORE = (
    "search_memory", "update_memory", "delete_memory", "delete_memory_store")

# the facade's operations on memory: method -> the conventions' operation name
OPERATIONS: Mapping[str, str] = {
    "recall": SEARCH, "assemble_context": SEARCH, "upcoming": SEARCH, "expand": SEARCH,
    "get": SEARCH, "list": SEARCH, "fact_history": SEARCH, "transcript": SEARCH,
    "latest_messages": SEARCH, "build_prompt": SEARCH, "export_agent_to": SEARCH,
    "remember": UPDATE, "remember_many": UPDATE, "update": UPDATE, "learn_fact": UPDATE,
    "start_episode": UPDATE, "append": UPDATE, "close_episode": UPDATE, "ingest": UPDATE,
    "edit_message": UPDATE, "import_agent": UPDATE, "restore_deleted": UPDATE,
    "resolve_conflict": UPDATE,
    "delete": DELETE, "delete_message": DELETE, "forget_message": DELETE,
    "forget_person": DELETE,
    "forget_agent": DELETE_STORE,
}
# operations whose second argument is an episode (the conversation), or a memory
_EPISODE_SECOND = frozenset({"transcript", "latest_messages", "build_prompt", "append",
                             "close_episode", "edit_message", "delete_message",
                             "forget_message"})
_RECORD_SECOND = frozenset({"get", "update", "delete", "fact_history", "restore_deleted"})

C = TypeVar("C", bound=type)


def traced(cls: C) -> C:
    """``cls`` with each of its ``OPERATIONS`` wrapped in a span (unchanged without the
    OpenTelemetry API)."""
    if trace is None:
        return cls
    for name, operation in OPERATIONS.items():
        method = getattr(cls, name, None)
        if method is not None:
            setattr(cls, name, _wrap(name, operation, method))
    return cls


def _wrap(name: str, operation: str, method: Callable[..., Any]) -> Callable[..., Any]:
    tracer = trace.get_tracer("nous_memory")

    @functools.wraps(method)
    async def span(self: Any, *args: Any, **kwargs: Any) -> Any:
        agent = args[0] if args and isinstance(args[0], str) else kwargs.get("agent_id")
        attributes: dict[str, Any] = {"gen_ai.operation.name": operation,
                                      "nous_memory.operation": name}
        if isinstance(agent, str):
            attributes["gen_ai.memory.store.id"] = attributes["gen_ai.agent.id"] = agent
        if len(args) > 1 and (name in _EPISODE_SECOND or name in _RECORD_SECOND):
            key = ("gen_ai.conversation.id" if name in _EPISODE_SECOND
                   else "gen_ai.memory.record.id")
            attributes[key] = str(args[1])
        title = f"{operation} {agent}" if isinstance(agent, str) else operation
        with tracer.start_as_current_span(title, kind=trace.SpanKind.INTERNAL,
                                          attributes=attributes,
                                          record_exception=False) as current:
            try:
                result = await method(self, *args, **kwargs)
            except BaseException as exc:
                current.set_attribute("error.type", type(exc).__name__)
                current.set_status(trace.Status(trace.StatusCode.ERROR))
                raise
            for key, value in _outcome(result).items():
                current.set_attribute(key, value)
            return result

    return span


def _outcome(result: Any) -> dict[str, Any]:
    """What a result says in numbers: records returned, tokens of a context, a learn's
    action (no text)."""
    out: dict[str, Any] = {}
    items = getattr(result, "items", None)
    if isinstance(items, Sized) and not callable(items):
        out["nous_memory.records.count"] = len(items)
    elif isinstance(result, list):
        out["nous_memory.records.count"] = len(result)
    tokens = getattr(result, "tokens_used", None)
    if isinstance(tokens, int):
        out["nous_memory.context.tokens"] = tokens
    action = getattr(result, "action", None)
    if action is not None:
        out["nous_memory.action"] = str(getattr(action, "value", action))
    return out
