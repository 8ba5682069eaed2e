"""The remote client: one behaviour suite run against the in-process store and against
``AsyncMemoryClient`` on a served instance (uvicorn on 127.0.0.1), which must agree
call for call, errors included; then the blocking wrapper and the key header."""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import io
import json
import os
import sys
import textwrap
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from nous_memory import MemoryStore
from nous_memory.client import AsyncMemoryClient, MemoryClient
from nous_memory.errors import (
    AuthenticationError,
    ConflictError,
    ContentionError,
    InvalidInputError,
    NotFoundError,
    NousMemoryError,
    PermissionDeniedError,
)
from nous_memory.history import HistorySession, HistoryTurn, IngestProgress
from tests.integration.client_helpers import Normaliser, served
from tests.unit.test_readme import doc_blocks

KEY = "client-suite-key-0123456789"
LIMITED = "client-suite-limited-0123456789"


@pytest.fixture
async def base_url(store: MemoryStore) -> AsyncIterator[str]:
    async with served(store) as url:
        yield url


@pytest.fixture(params=["store", "client"])
async def surface(request: pytest.FixtureRequest, store: MemoryStore,
                  base_url: str) -> AsyncIterator[Any]:
    """The object the suite calls: the store itself, or the client of a served store."""
    if request.param == "store":
        yield store
        return
    async with AsyncMemoryClient(base_url) as client:
        yield client


async def _error(call: Any) -> tuple[str, Any]:
    try:
        await call
    except NousMemoryError as exc:
        fields = [p.field for p in exc.problems] if isinstance(exc, InvalidInputError) else None
        return type(exc).__name__, fields
    raise AssertionError("the call did not fail")


async def scenario(m: Any, agent: str) -> list[tuple[str, Any]]:
    """Every call the service serves, with the behaviour each must show; returns what
    each returned, normalised, for the comparison of the two surfaces."""
    norm = Normaliser(agent)
    out: list[tuple[str, Any]] = []

    def record(label: str, value: Any) -> Any:
        out.append((label, norm(value)))
        return value

    decision = record("remember", await m.remember(
        agent, "decision", description="Chose Postgres for storage", outcome="success",
        confidence=0.85, pattern="Unify", tags=["infra"]))
    assert decision.summary.startswith("Chose Postgres for storage [success]")
    facts = [record("remember_fact", await m.remember(agent, "fact", **fields)) for fields in (
        {"content": "Ana is vegetarian", "category": "preference"},
        {"content": "The weekly sync is on Tuesdays"})]  # apart: a list has one order
    record("remember_many", await m.remember_many(agent, [
        {"kind": "procedure", "name": "Deploy", "core_patterns": ["test", "ship"]},
        {"kind": "censor", "action": "block", "trigger_pattern": "drop table",
         "reason": "production data is never dropped by hand"}]))
    updated = record("update", await m.update(agent, facts[1].id,
                                              content="The weekly sync moved to Wednesdays"))
    assert updated.version == 2
    record("get", await m.get(agent, facts[1].id))
    events = record("history", await m.history(agent, facts[1].id))
    assert [e.event for e in events] == ["created", "updated"]
    page = record("list", await m.list(agent, kind="fact", limit=1))
    assert len(page.items) == 1 and page.next_cursor
    record("list_next", await m.list(agent, kind="fact", limit=1, cursor=page.next_cursor))
    record("list_tag", await m.list(agent, tag="infra"))
    await m.delete(agent, decision.id)
    record("get_deleted", await m.get(agent, decision.id, include_deleted=True))

    learned = [record(f"learn_{i}", await m.learn_fact(agent, text, subject="project"))
               for i, text in enumerate(["The project deadline is March 3",
                                         "the project deadline is March 3.",
                                         "The project deadline is March 10"])]
    assert [r.action.value for r in learned] == ["created", "confirmed", "superseded"]
    record("fact_history", await m.fact_history(agent, learned[2].fact.id))

    episode = record("start_episode", await m.start_episode(
        agent, title="Trip planning", participants=["Ana", "assistant"]))
    record("append", await m.append(agent, episode.id, [
        {"role": "user", "name": "Ana", "content": "We fly to Porto on Friday.",
         "metadata": {"turn": 1}},
        {"role": "assistant", "content": "Booked.", "tool_call_id": "call-1"}]))
    transcript = record("transcript", [dataclasses.asdict(t) for t in
                                       await m.transcript(agent, episode.id)])
    assert transcript[1]["tool_call_id"] == "call-1"
    record("close", await m.close_episode(agent, episode.id))
    record("get_episode", await m.get_episode(agent, episode.id))
    record("facts_from_episode", await m.facts_from_episode(agent, episode.id))

    recalled = record("recall", await m.recall(agent, "what does Ana eat?", k=5))
    assert recalled.items[0].text == "Ana is vegetarian"
    record("recall_kinds", await m.recall(agent, "deadline March 10", kinds=["fact"], k=3,
                                          include_superseded=True))
    context = await m.assemble_context(
        agent, "When is the project deadline?", budget_tokens=300,
        sections={"facts": 200, "decisions": 100}, extraction="off")
    # token counts of a text with refs depend on the ids' hex digits: not compared
    record("context", context.model_dump(mode="json", exclude={
        "tokens_used": True, "items": {"__all__": {"tokens"}}}))
    assert context.tokens_used <= 300 and context.items
    record("expand", await m.expand(agent, context.items[0].ref))

    record("e_unknown", await _error(m.get(agent, "6f1d2c3b-8e4a-4f5b-9c7d-1a2b3c4d5e6f")))
    record("e_bad_id", await _error(m.get(agent, "not-a-uuid")))
    record("e_confidence", await _error(m.remember(agent, "fact", content="x y z",
                                                   confidence=2)))
    record("e_k", await _error(m.recall(agent, "anything", k=0)))
    record("e_kind", await _error(m.recall(agent, "anything", kinds=["nonsense"])))
    record("e_budget", await _error(m.assemble_context(agent, "q", budget_tokens=1)))
    record("e_closed", await _error(m.append(agent, episode.id,
                                             [{"role": "user", "content": "late"}])))
    record("e_ref", await _error(m.expand(agent, "fact:00000000")))
    assert out[-8][1][0] == "NotFoundError" and out[-6][1] == ["InvalidInputError",
                                                               ["confidence"]]
    assert out[-2][1][0] == "ConflictError"

    # working memory: the policy, a prompt that folds, the summary, edits behind the
    # watermark, the chain, and the errors of each call
    talk = await m.start_episode(agent, title="Porto stops")
    await m.append(agent, talk.id, [
        {"role": "user", "name": "Ana", "content": f"Ana plans stop {i} in Porto at {i + 8} am."}
        for i in range(12)])
    policy = record("set_policy", await m.set_conversation_policy(
        agent, mode="rule", protect_tail=3, trigger_messages=10, window_tokens=8192))
    assert policy.protect_tail == 3 and policy.mode == "rule"
    record("policy", await m.conversation_policy(agent))
    prompt = record("build_prompt", await m.build_prompt(agent, talk.id, "Be brief.", 300))
    assert prompt.summarized is not None and prompt.summarized.folded == 9
    assert prompt.tokens <= 300 and prompt.tail_messages == 3
    summary = record("conversation_summary", await m.conversation_summary(agent, talk.id))
    assert summary.watermark_seq == 8 and "Porto" in summary.facets.entities
    edited = record("edit_message", await m.edit_message(agent, talk.id, 1, "Ana skips Braga."))
    assert edited.invalidated and edited.action == "edited"
    run = record("summarize", await m.summarize_conversation(agent, talk.id))
    assert run.invalidated == "message 1 edited behind the watermark"
    deleted = record("delete_message", await m.delete_message(agent, talk.id, 11))
    assert not deleted.invalidated
    latest = record("latest_messages", await m.latest_messages(agent, talk.id, limit=2))
    assert [x.seq for x in latest] == [9, 10]  # the deleted newest (11) is not among them
    assert 11 not in [x.seq for x in record("transcript_live", await m.transcript(agent, talk.id))]
    chain = record("summary_history", await m.summary_history(agent, talk.id))
    assert [(r.op, r.status) for r in chain] == [("fold", "invalidated"), ("rebuild", "current")]
    record("summary_history_page", await m.summary_history(agent, talk.id, limit=1, offset=1))
    record("prompt_kept", await m.build_prompt(agent, talk.id, "Be brief.", 120, query="Porto",
                                               summarize=False, policy={"protect_tail": 2}))
    record("summarize_forced", await m.summarize_conversation(agent, talk.id, force=True,
                                                              policy={"protect_tail": 1}))
    record("policy_reset", await m.set_conversation_policy(agent, protect_tail=None))
    record("e_seq", await _error(m.edit_message(agent, talk.id, -1, "x")))
    record("e_content", await _error(m.edit_message(agent, talk.id, 2, "nul \x00")))
    record("e_policy", await _error(m.set_conversation_policy(agent, protect_tail=-2)))
    record("e_knob", await _error(m.set_conversation_policy(agent, colour="blue")))
    record("e_mode", await _error(m.summarize_conversation(agent, talk.id,
                                                           policy={"mode": "psychic"})))
    record("e_tiny", await _error(m.build_prompt(agent, talk.id, "word " * 50, 5)))
    record("e_limit", await _error(m.summary_history(agent, talk.id, limit=0)))
    record("e_message", await _error(m.delete_message(agent, talk.id, 99)))
    record("e_other", await _error(m.conversation_summary("someone-else", talk.id)))
    await m.close_episode(agent, talk.id)
    closed = record("e_closed_edit", await _error(m.edit_message(agent, talk.id, 0, "late")))
    assert closed[0] == "ConflictError"
    seen = dict(out)
    assert {name: seen[name] for name in ("e_seq", "e_policy", "e_limit", "e_message",
                                          "e_other")} == {
        "e_seq": ["InvalidInputError", ["seq"]],
        "e_policy": ["InvalidInputError", ["policy.protect_tail"]],
        "e_limit": ["InvalidInputError", ["limit"]],
        "e_message": ["NotFoundError", None], "e_other": ["NotFoundError", None]}

    # history import: a record and a mapping, the same again (skipped), its status
    sessions: list[Any] = [
        HistorySession(key="trip-1", started_at=datetime(2024, 5, 3, 9, tzinfo=UTC),
                       title="Lisbon", turns=[
                           HistoryTurn(role="user", name="Ana", content="We moved to Lisbon."),
                           HistoryTurn(role="assistant", content="Congratulations!")]),
        {"key": "trip-2", "started_at": "2024-06-01T10:00:00+00:00",
         "turns": [{"role": "user", "content": "Ana starts at the clinic in June."}]}]
    reports: list[IngestProgress] = []
    ingested = record("ingest", await m.ingest(agent, sessions, progress=reports.append))
    assert ingested.sessions_imported == 2 and reports[-1].sessions_done == 2
    again = record("ingest_again", await m.ingest(agent, sessions))
    assert again.sessions_skipped == 2 and again.episode_ids == []
    record("ingest_status", await m.ingest_status(agent))
    record("e_session", await _error(m.ingest(agent, [{"key": "x", "turns": []}])))

    exported = io.BytesIO()
    summary = record("export", await m.export_agent_to(agent, exported))
    assert summary.rows > 0 and summary.bytes == len(exported.getvalue())
    receipt = await m.forget_agent(agent)
    # the actor over a service is the service's to record, never the caller's claim
    record("forget", receipt.model_dump(mode="json", exclude={"actor"}))
    assert receipt.total_rows > 0
    record("e_forgotten", await _error(m.get(agent, facts[0].id)))
    exported.seek(0)
    imported = record("import", await m.import_agent(exported))
    assert imported.agent_id == agent and sum(imported.inserted.values()) == summary.rows
    record("after_import", await m.get(agent, facts[0].id))
    return out


async def test_behaviour_suite(surface: Any) -> None:
    await scenario(surface, f"suite-{type(surface).__name__}")


async def test_client_and_store_agree_call_for_call(store: MemoryStore, base_url: str) -> None:
    local = await scenario(store, "agree-local")
    async with AsyncMemoryClient(base_url) as client:
        remote = await scenario(client, "agree-remote")
    assert [label for label, _ in remote] == [label for label, _ in local]
    for (label, mine), (_, theirs) in zip(local, remote, strict=True):
        assert theirs == mine, f"{label}:\n{_diff(mine, theirs)}"


def _diff(mine: Any, theirs: Any) -> str:
    lines = [json.dumps(side, indent=1, sort_keys=True).splitlines() for side in (mine, theirs)]
    return "\n".join(difflib.unified_diff(*lines, lineterm="", n=1))


async def test_errors_keep_their_fields_and_types(base_url: str) -> None:
    async with AsyncMemoryClient(base_url) as client:
        with pytest.raises(InvalidInputError) as bad:
            await client.remember("a", "fact", content="ok fine", importance=5, bogus=1)
        assert {p.field for p in bad.value.problems} == {"importance", "bogus"}
        with pytest.raises(NotFoundError) as missing:
            await client.expand("a", "6f1d2c3b-8e4a-4f5b-9c7d-1a2b3c4d5e6f")
        assert "not found" in str(missing.value)
        with pytest.raises(ConflictError):
            episode = await client.start_episode("a")
            await client.close_episode("a", episode.id)
            await client.append("a", episode.id, [{"role": "user", "content": "x"}])


async def test_blocking_client_is_the_same_calls(store: MemoryStore, base_url: str) -> None:
    def work() -> tuple[str, list[str]]:
        with MemoryClient(base_url) as client:
            client.remember("sync", "fact", content="Tim prefers Celsius")
            result = client.recall("sync", "temperature unit Tim likes", k=3)
            with pytest.raises(NotFoundError):
                client.get("sync", "6f1d2c3b-8e4a-4f5b-9c7d-1a2b3c4d5e6f")
            return type(result).__name__, [item.text for item in result.items]

    name, texts = await asyncio.to_thread(work)
    assert name == "RecallResult" and texts[0] == "Tim prefers Celsius"
    assert (await store.counts("sync"))["fact"]["active"] == 1


async def test_key_is_sent_as_the_service_expects(store: MemoryStore) -> None:
    store.settings = store.settings.with_changes(api_keys=f"{KEY},{LIMITED}:only-this")
    async with served(store) as url:
        async with AsyncMemoryClient(url) as anonymous:
            with pytest.raises(AuthenticationError):
                await anonymous.list("a")
        async with AsyncMemoryClient(url, api_key="wrong-key-0123456789abc") as wrong:
            with pytest.raises(AuthenticationError):
                await wrong.list("a")
        async with AsyncMemoryClient(url, api_key=LIMITED) as limited:
            with pytest.raises(PermissionDeniedError):
                await limited.list("a")
            assert (await limited.list("only-this")).items == []
        async with AsyncMemoryClient(url, api_key=KEY) as client:
            assert (await client.list("a")).items == []



async def test_readme_client_example_runs(base_url: str) -> None:
    (block,) = doc_blocks("surfaces/client.md", "python3")  # needs a served instance
    program = textwrap.dedent(block).replace("http://127.0.0.1:8765", base_url) + (
        "\nimport asyncio\nasyncio.run(remember_and_recall(None))\nassemble(None)\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", program, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert out.decode().split() == ["Ana", "is", "vegetarian", "True"]


async def test_a_call_that_lost_to_contention_is_sent_again(
        store: MemoryStore, base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service answers 409 with Retry-After when another transaction held what the
    call needed (nothing was written): the client sends the call again, a write too,
    and raises ContentionError only when it runs out of attempts."""
    await store.learn_fact("held", "The user's sister Mia lives in Porto.")
    forget = store.forget_agent
    refusals = [ContentionError("another transaction held what this one needed (40P01); "
                                "nothing was written, retry")]

    async def contended(agent_id: str, /, *, actor: str = "python") -> Any:
        if refusals:
            raise refusals.pop()
        return await forget(agent_id, actor=actor)

    monkeypatch.setattr(store, "forget_agent", contended)
    async with AsyncMemoryClient(base_url, max_attempts=1) as once:
        with pytest.raises(ContentionError):
            await once.forget_agent("held")
    refusals.append(ContentionError("deadlock; retry"))
    async with AsyncMemoryClient(base_url) as client:
        receipt = await client.forget_agent("held")
    assert receipt.total_rows > 0 and not refusals
