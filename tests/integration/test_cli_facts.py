"""``nous-memory facts``: three real subprocess runs (each loads the model, ~10 s), then the
error paths and text output in-process, where the model is already loaded."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from nous_memory import MemoryStore
from nous_memory.cli.main import main

from .test_cli import Result, cli_command, cli_env, run_process

AGENT = "cli-facts-agent"
WIFI = "The office wifi is called Nebula"


async def test_learn_confirm_and_history(database_url: str, tmp_path: Path,
                                         store: MemoryStore) -> None:
    env = cli_env(database_url, tmp_path / "unused-data-dir")

    async def cli(*args: str) -> Result:
        return await run_process([*cli_command(), *args], env)

    created = (await cli("facts", "learn", "--agent", AGENT, "--content", WIFI,
                         "--subject", "office", "--confidence", "0.6",
                         "--source-kind", "extracted", "--json")).json()
    assert created["action"] == "created" and created["related"] == []
    fact_id = created["fact"]["id"]
    stored = await store.get(AGENT, fact_id)
    assert stored.summary == WIFI
    assert stored.fact.subject == "office"
    assert stored.fact.confidence == 0.6
    assert stored.fact.source_kind == "extracted"

    again = await cli("facts", "learn", "--agent", AGENT, "--content", "the office WiFi is "
                      "called Nebula!")
    assert again.code == 0, again.stderr
    assert again.stdout.splitlines() == [
        f"confirmed  {fact_id}  {WIFI}",
        "decided by: exact (similarity 1.00)",
        f"related: {fact_id}",
    ]
    assert await store.counts(AGENT) == {"fact": {"active": 1}}

    history = (await cli("--json", "facts", "history", fact_id, "--agent", AGENT)).json()
    assert [m["id"] for m in history["chain"]] == [fact_id]
    assert history["chain"][0]["status"] == "active"
    assert history["chain"][0]["detail"]["confirmation_count"] == 1
    assert [e["event"] for e in history["events"]] == ["created", "confirmed"]
    assert history["events"][1]["old_values"] == {"confidence": 0.6}
    assert history["events"][1]["new_values"]["confidence"] == 0.64


async def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``main`` in a worker thread (it runs its own event loop); exit code, out, err."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, list(args))
    out, err = capsys.readouterr()
    return code, out, err


async def test_rejections_errors_and_text_history(database_url: str, store: MemoryStore,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = ("--database-url", database_url, "facts")
    code, out, err = await run_main(capsys, *base, "learn", "--agent", AGENT,
                                    "--content", "Paris")
    assert code == 0, err
    assert re.fullmatch(r"rejected  too short \(.+\)\n", out), out

    for option, value, field in (("--confidence", "1.5", "confidence"),
                                 ("--source-kind", "rumour", "source_kind"),
                                 ("--source-episode-id", "nope", "source_episode_id")):
        code, out, err = await run_main(capsys, *base, "learn", "--agent", AGENT,
                                        "--content", "Tim is 40 years old", option, value)
        assert code == 2, (option, err)
        assert re.search(rf"^nous-memory: error: {field}: ", err, re.M), err
        assert out == ""
    code, _, err = await run_main(capsys, *base, "learn", "--agent", AGENT)
    assert code == 2 and "--content" in err
    assert await store.counts(AGENT) == {}

    old = await store.learn_fact(AGENT, "The project deadline is March 3")
    new = await store.learn_fact(AGENT, "The project deadline is March 10")
    assert old.fact is not None and new.fact is not None
    code, out, err = await run_main(capsys, *base, "history", str(old.fact.id),
                                    "--agent", AGENT)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:3] == [
        "chain (oldest first):",
        f"  {old.fact.id}  superseded  The project deadline is March 3",
        f"  {new.fact.id}  active      The project deadline is March 10",
    ]
    assert lines[3] == "events:"
    headings = [line.split() for line in lines[4:] if not line.startswith("      ")]
    assert [(h[0], h[2]) for h in headings] == [
        (str(old.fact.id), "created"), (str(new.fact.id), "created"),
        (str(old.fact.id), "superseded")]
    assert f'      superseded_by_id: "{new.fact.id}"' in lines

    code, out, err = await run_main(capsys, *base, "history", str(old.fact.id),
                                    "--agent", "someone-else")
    assert code == 3 and out == ""
    assert f"fact {old.fact.id} not found" in err
