"""OpenTelemetry spans of the store's operations (nous_memory/tracing.py), read with the
SDK's in-memory exporter: the GenAI conventions' operation names and attributes, counts
and tokens, the error type, and never a text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from nous_memory import MemoryStore
from nous_memory.errors import NotFoundError

A = "traced-agent"
_EXPORTER = InMemorySpanExporter()


class _WhileTesting(SimpleSpanProcessor):
    """Exports only during a test of this module: the provider, set once a process,
    outlives it, and the rest of the suite's spans must not pile up in memory."""

    on = False

    def on_end(self, span: ReadableSpan) -> None:
        if self.on:
            super().on_end(span)


_PROCESSOR = _WhileTesting(_EXPORTER)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(_PROCESSOR)
        trace.set_tracer_provider(provider)  # once a process, as an application does
    _EXPORTER.clear()
    _PROCESSOR.on = True
    try:
        yield _EXPORTER
    finally:
        _PROCESSOR.on = False
        _EXPORTER.clear()


async def test_each_operation_is_a_span_named_by_the_conventions(
        store: MemoryStore, spans: InMemorySpanExporter) -> None:
    fact = await store.remember(A, "fact", content="Ana's door code hint is the blue pot")
    episode = await store.start_episode(A)
    await store.append(A, episode.id, [{"role": "user", "content": "I live in Porto."}])
    found = await store.recall(A, "where does Ana live?")
    context = await store.assemble_context(A, "where does Ana live?", budget_tokens=500)
    await store.forget_message(A, episode.id, 0)
    await store.delete(A, fact.id, purge=True)
    with pytest.raises(NotFoundError):
        await store.get(A, fact.id)
    await store.forget_agent(A)

    finished = {s.attributes["nous_memory.operation"]: s for s in spans.get_finished_spans()
                if s.attributes and "nous_memory.operation" in s.attributes}
    expected = {"remember": "update_memory", "start_episode": "update_memory",
                "append": "update_memory", "recall": "search_memory",
                "assemble_context": "search_memory", "forget_message": "delete_memory",
                "delete": "delete_memory", "get": "search_memory",
                "forget_agent": "delete_memory_store"}
    for method, operation in expected.items():
        span = finished[method]
        assert span.name == f"{operation} {A}"
        assert span.attributes["gen_ai.operation.name"] == operation
        assert span.attributes["gen_ai.memory.store.id"] == A
        assert span.attributes["gen_ai.agent.id"] == A
    assert finished["recall"].attributes["nous_memory.records.count"] == len(found.items)
    assert finished["assemble_context"].attributes["nous_memory.context.tokens"] == (
        context.tokens_used)
    assert finished["append"].attributes["gen_ai.conversation.id"] == str(episode.id)
    assert finished["delete"].attributes["gen_ai.memory.record.id"] == str(fact.id)
    failed = finished["get"]
    assert failed.status.status_code is trace.StatusCode.ERROR
    assert failed.attributes["error.type"] == "NotFoundError"
    assert not failed.events  # no exception message (it may name private things)
    # no text of a memory or a query is on any span
    for span in spans.get_finished_spans():
        values = " ".join(str(v) for v in (span.attributes or {}).values())
        assert "Porto" not in values and "blue pot" not in values and "Ana" not in values
