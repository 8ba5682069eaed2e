"""The jobs on the command line (in-process, plus one real ``nous-memory scheduler``
process stopped by SIGTERM) and restore over REST."""

from __future__ import annotations

import asyncio
import json
import signal
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from nous_memory import MemoryStore

from .jobs_helpers import long_text, old_episode, snapshot, sql
from .test_cli import cli_command, cli_env
from .test_cli_facts import run_main

AGENT = "cli-jobs-agent"


async def test_jobs_list_run_history_and_restore(database_url: str, store: MemoryStore,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    base = ("--database-url", database_url)
    episode = await old_episode(store, AGENT, ended_days_ago=40,
                                detail=long_text(3_000, seed=70), now=datetime.now(UTC))
    text = episode.detail.detail  # as stored (the store normalises unicode to NFC)
    assert text is not None and len(text) > 2_000

    code, out, err = await run_main(capsys, *base, "jobs", "list", "--json")
    assert code == 0, err
    listed = {j["name"]: j for j in json.loads(out)}
    assert list(listed) == ["archive", "trim", "compress", "lifecycle", "retention",
                            "housekeeping", "backfill", "indexes"]
    assert listed["retention"]["schedule"] == "off" and listed["retention"]["next_run"] is None
    assert listed["trim"]["schedule"] == "30 2 * * *" and listed["trim"]["last_run"] is None

    before = await snapshot(database_url)
    code, out, err = await run_main(capsys, *base, "jobs", "run", "trim", "--dry-run")
    assert code == 0, err
    assert out.splitlines()[:3] == ["trim: ok (dry run)", "would change:", "  trimmed: 1"]
    after = await snapshot(database_url)
    assert {t: rows for t, rows in after.items()} == before  # job_runs is not in the snapshot

    code, out, err = await run_main(capsys, *base, "jobs", "run", "trim", "--json")
    assert code == 0, err
    run = json.loads(out)
    assert run["status"] == "ok" and run["counts"]["trimmed"] == 1 and not run["dry_run"]

    code, out, err = await run_main(capsys, *base, "jobs", "history", "--job", "trim")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and "ok  " in lines[0] and "(dry run)" in lines[1]

    code, out, err = await run_main(capsys, *base, "memories", "restore", str(episode.id),
                                    "--agent", AGENT)
    assert code == 0, err
    assert out.strip() == (f"restored {episode.id} (was trimmed): {len(text)} characters "
                           "of detail")
    assert (await store.get(AGENT, episode.id)).episode.detail == text

    code, _, err = await run_main(capsys, *base, "memories", "restore", str(episode.id),
                                  "--agent", AGENT)
    assert code == 4 and "nothing in cold storage" in err
    code, _, err = await run_main(capsys, *base, "memories", "restore", str(episode.id),
                                  "--agent", "someone-else")
    assert code == 3
    code, _, err = await run_main(capsys, *base, "jobs", "run", "nonsense")
    assert code == 2 and "invalid choice" in err


async def test_scheduler_process_catches_up_and_stops_on_sigterm(
        database_url: str, tmp_path: Path) -> None:
    env = cli_env(database_url, tmp_path / "unused")
    proc = await asyncio.create_subprocess_exec(
        *cli_command(), "scheduler", env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None
        seen = []
        while not any("running;" in line for line in seen):
            line = (await asyncio.wait_for(proc.stderr.readline(), timeout=90)).decode()
            assert line, f"scheduler exited: {seen}"
            seen.append(line)
        assert any(line.startswith("trim: next run ") for line in seen), seen
        for _ in range(200):  # catch-up runs every job once at start on a fresh database
            done = await sql(database_url, "SELECT job FROM job_runs WHERE status <> "
                             "'running' AND trigger = 'catch_up'")
            if len(done) == 7:
                break
            await asyncio.sleep(0.1)
        assert sorted(r["job"] for r in done) == sorted(
            ["trim", "archive", "compress", "lifecycle", "housekeeping", "backfill",
             "indexes"])
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err
    assert b"stopped" in out


async def test_restore_over_rest(client: httpx.AsyncClient, store: MemoryStore) -> None:
    episode = await old_episode(store, AGENT, ended_days_ago=100,
                                detail=long_text(9_000, seed=71), now=datetime.now(UTC))
    text = episode.detail.detail
    assert text is not None
    assert (await store.archive_episodes(AGENT)).counts["archived"] == 1
    url = f"/agents/{AGENT}/memories/{episode.id}/restore"
    response = await client.post(url)
    assert response.status_code == 200, response.text
    assert response.json() == {"id": str(episode.id), "restored_from": "cold_storage",
                               "status": None, "previous_status": None, "action": None,
                               "related": [], "previous_storage": "archived",
                               "detail_chars": len(text), "messages": None}
    shown = (await client.get(f"/agents/{AGENT}/memories/{episode.id}")).json()
    assert shown["detail"]["detail"] == text and shown["detail"]["storage"] == "restored"
    assert (await client.post(url)).status_code == 409
    assert (await client.post(f"/agents/other/memories/{episode.id}/restore")).status_code == 404
    bad = await client.post(f"/agents/{AGENT}/memories/not-a-uuid/restore")
    assert bad.status_code == 422 and bad.json()["detail"][0]["field"]
