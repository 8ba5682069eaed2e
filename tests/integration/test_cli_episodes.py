"""``nous-memory episodes|worker|llm usage``: four real subprocess runs (a close loads the
model, ~10 s), then the worker, errors and text output in-process via ``main``."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nous_memory import MemoryStore
from nous_memory.cli.main import main
from nous_memory.db import Database
from nous_memory.llm import CallOutcome, LLMCall, PostgresCallRecorder

from .test_cli import Result, cli_command, cli_env, run_process

AGENT = "cli-episodes"
MESSAGES = [
    {"role": "user", "name": "Ana", "content": "The boiler is leaking again.",
     "metadata": {"ticket": 7}},
    {"role": "assistant", "content": "I booked a plumber for Tuesday at 9."},
    {"role": "user", "name": "Ana", "content": "Great, the gate is at 4711 Elm Street."},
]


@pytest.fixture(autouse=True)
def no_settings_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs read os.environ: keep a developer's NOUS_MEMORY_* out of them."""
    for name in list(os.environ):
        if name.startswith("NOUS_MEMORY_"):
            monkeypatch.delenv(name)


async def in_process(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``main`` on its own event loop in a thread; returns (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
async def recorded_calls(database_url: str) -> AsyncIterator[None]:
    """llm_calls rows written the way the LLM client writes them."""
    db = await Database.connect(database_url, min_size=1, max_size=1)
    recorder = PostgresCallRecorder(db)

    def call(agent: str, purpose: str, outcome: CallOutcome, tokens: tuple[int, int],
             latency_ms: int, when: datetime, estimated: bool = False) -> LLMCall:
        return LLMCall(agent_id=agent, purpose=purpose, model="gpt-test",
                       prompt_tokens=tokens[0], completion_tokens=tokens[1],
                       tokens_estimated=estimated, latency_ms=latency_ms, outcome=outcome,
                       error=None if outcome is CallOutcome.OK else "scripted",
                       created_at=when)

    recent = datetime(2025, 6, 1, 12, tzinfo=UTC)
    old = datetime(2024, 1, 1, tzinfo=UTC)
    try:
        for item in (
            call(AGENT, "episode_close", CallOutcome.OK, (1200, 300), 900, recent),
            call(AGENT, "episode_close", CallOutcome.RATE_LIMITED, (0, 0), 100, recent),
            call(AGENT, "episode_close", CallOutcome.OK, (800, 100), 500, recent,
                 estimated=True),
            call(AGENT, "fact_merge", CallOutcome.OK, (50, 10), 200, old),
            call("someone-else", "episode_close", CallOutcome.OK, (999, 999), 999, recent),
        ):
            await recorder.record(item)
        yield
    finally:
        await db.close()


async def test_episode_commands_and_usage(database_url: str, tmp_path: Path,
                                          store: MemoryStore, recorded_calls: None) -> None:
    env = cli_env(database_url, tmp_path / "unused-data-dir")

    async def cli(*args: str) -> Result:
        return await run_process([*cli_command(), *args], env)

    started = (await cli("episodes", "start", "--agent", AGENT, "--title", "Boiler repair",
                         "--participant", "Ana", "--participant", "assistant",
                         "--started-at", "2025-06-01T09:00:00", "--json")).json()
    ident = started["id"]
    episode = await store.get_episode(AGENT, ident)
    assert episode.episode.state == "open"
    assert episode.episode.title == "Boiler repair"
    assert episode.episode.participants == ["Ana", "assistant"]
    assert episode.episode.started_at == datetime(2025, 6, 1, 9, tzinfo=UTC)

    appended = (await cli("episodes", "append", ident, "--agent", AGENT, "--messages-json",
                          json.dumps(MESSAGES), "--json")).json()
    assert {k: appended[k] for k in ("episode_id", "first_seq", "last_seq",
                                     "message_count")} == {
        "episode_id": ident, "first_seq": 0, "last_seq": 2, "message_count": 3}
    transcript = await store.transcript(AGENT, ident)
    assert [(m.seq, m.role, m.name, m.content) for m in transcript] == [
        (i, m["role"], m.get("name"), m["content"]) for i, m in enumerate(MESSAGES)]
    assert transcript[0].metadata == {"ticket": 7}
    assert appended["tokens"] == sum(m.tokens for m in transcript)

    closed = (await cli("episodes", "close", ident, "--agent", AGENT, "--wait",
                        "--json")).json()
    assert closed["id"] == ident
    assert closed["detail"]["state"] == "closed"
    assert closed["summary_source"] == "rule"  # no LLM configured
    assert closed["summary"].startswith("Boiler repair.")
    stored = await store.get_episode(AGENT, ident)
    assert stored.model_dump(mode="json") == closed
    assert await store.worker().drain() == 0  # --wait did the work, nothing is left

    usage = await cli("llm", "usage", "--agent", AGENT, "--since", "2025-01-01")
    assert usage.code == 0, usage.stderr
    rows = [line.split() for line in usage.stdout.splitlines()]
    assert rows == [
        ["purpose", "model", "calls", "ok", "prompt", "completion", "latency_ms", "avg_ms"],
        ["episode_close", "gpt-test", "3", "2", "2000", "400", "1500", "500"],
        ["(1", "call(s)", "with", "estimated", "token", "counts)"],
    ]


async def test_worker_once_show_and_errors(database_url: str, store: MemoryStore,
                                           capsys: pytest.CaptureFixture[str],
                                           recorded_calls: None) -> None:
    base = ("--database-url", database_url)
    queued = await store.start_episode(AGENT, title="Queued")
    await store.append(AGENT, queued.id, MESSAGES[:2])
    await store.close_episode(AGENT, queued.id)
    # open, never written to, started long ago: the worker's idle sweep closes it
    idle = await store.start_episode(AGENT, title="Forgotten",
                                     started_at=datetime(2024, 1, 1, tzinfo=UTC))
    fresh = await store.start_episode(AGENT, title="Ongoing")

    code, out, err = await in_process(capsys, *base, "worker", "--once", "--json")
    assert code == 0, err
    # two closes, each followed by its embedding follow-up
    assert json.loads(out) == {"idle_closed": 1, "processed": 4}
    for episode in (queued, idle):
        assert (await store.get_episode(AGENT, episode.id)).episode.state == "closed"
    assert (await store.get_episode(AGENT, fresh.id)).episode.state == "open"
    code, out, err = await in_process(capsys, *base, "worker", "--once")
    assert (code, out) == (0, "processed 0 work item(s); closed 0 idle episode(s)\n"), err

    # a single message from options, then the transcript in text and JSON
    code, out, err = await in_process(capsys, *base, "episodes", "append", str(fresh.id),
                                      "--agent", AGENT, "--role", "assistant", "--name", "bot",
                                      "--content", "Hello there", "--metadata-json",
                                      '{"lang": "en"}')
    assert code == 0, err
    assert re.fullmatch(rf"appended 1 message\(s\) to {fresh.id}: seq 0-0, \d+ tokens; "
                        r"1 message\(s\) in the episode\n", out), out
    code, out, err = await in_process(capsys, *base, "episodes", "show", str(fresh.id),
                                      "--agent", AGENT, "--transcript")
    assert code == 0, err
    assert re.search(r"^state: +open$", out, re.M), out
    assert re.search(r"^transcript:\n  \[0\] \S+  bot: Hello there$", out, re.M), out
    code, out, err = await in_process(capsys, *base, "--json", "episodes", "show",
                                      str(queued.id), "--agent", AGENT, "--transcript")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["episode"]["id"] == str(queued.id)
    assert [m["content"] for m in shown["transcript"]] == [m["content"] for m in MESSAGES[:2]]
    assert shown["transcript"][0]["metadata"] == {"ticket": 7}

    # errors: exit 2 invalid, 3 not found, 4 conflict; nothing is stored by any of them
    before = await store.get_episode(AGENT, fresh.id)
    cases = [
        (("episodes", "append", str(fresh.id), "--agent", AGENT, "--messages-json",
          '[{"role": "robot", "content": "beep"}]'), 2, r"messages\[0\]\.role: "),
        (("episodes", "append", str(fresh.id), "--agent", AGENT, "--messages-json", "[{"),
         2, r"messages_json: not valid JSON"),
        (("episodes", "append", str(fresh.id), "--agent", AGENT, "--content", "x",
          "--messages-json", "[]"), 2, r"messages_json: give either"),
        (("episodes", "append", str(fresh.id), "--agent", AGENT), 2, r"content: missing"),
        (("episodes", "append", str(fresh.id), "--agent", AGENT, "--content", "x" * 100_001),
         2, r"messages\[0\]\.content: "),
        (("episodes", "append", str(fresh.id), "--agent", "other", "--content", "hi"),
         3, r"not found"),
        (("episodes", "close", str(fresh.id), "--agent", "other"), 3, r"not found"),
        (("episodes", "show", str(queued.id), "--agent", "other"), 3, r"not found"),
        (("episodes", "append", str(queued.id), "--agent", AGENT, "--content", "late"),
         4, r"is closed"),
        (("llm", "usage", "--agent", AGENT, "--since", "last week"), 2,
         r"since: must be an ISO 8601"),
    ]
    for argv, expected, message in cases:
        code, out, err = await in_process(capsys, *base, *argv)
        assert code == expected, (argv, err)
        assert re.search(rf"^nous-memory: error: .*{message}", err, re.M), (argv, err)
        assert out == "" and "Traceback" not in err
    assert await store.get_episode(AGENT, fresh.id) == before
    assert len(await store.transcript(AGENT, fresh.id)) == 1
    assert len(await store.transcript(AGENT, queued.id)) == 2

    # usage without --since counts every call of the agent, and nobody else's
    code, out, err = await in_process(capsys, *base, "--json", "llm", "usage", "--agent", AGENT)
    assert code == 0, err
    assert [(r["purpose"], r["calls"], r["ok_calls"], r["total_tokens"], r["latency_ms"])
            for r in json.loads(out)] == [("episode_close", 3, 2, 2400, 1500),
                                          ("fact_merge", 1, 1, 60, 200)]
    code, out, err = await in_process(capsys, *base, "llm", "usage", "--agent", "nobody")
    assert (code, out) == (0, "no LLM calls\n"), err


def test_serve_no_worker_reaches_the_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    import nous_memory.api
    import nous_memory.db.setup

    made: list[bool | None] = []
    real = nous_memory.api.create_app

    def recording(*args: Any, **kwargs: Any) -> Any:
        made.append(kwargs.get("run_worker"))
        return real(*args, **kwargs)

    async def no_serving(self: uvicorn.Server) -> None:
        return None

    async def reachable(dsn: str) -> None:  # serve waits for its database first
        return None

    monkeypatch.setattr(nous_memory.api, "create_app", recording)
    monkeypatch.setattr(uvicorn.Server, "serve", no_serving)
    monkeypatch.setattr(nous_memory.db.setup, "probe", reachable)
    unused = ("--database-url", "postgresql://unused/x")
    assert main([*unused, "serve", "--no-worker"]) == 0
    assert main([*unused, "serve"]) == 0
    assert made == [False, None]
