"""Forgetting one message on the other faces: REST, the remote client and the CLI each
make the one store call and report what it removed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from nous_memory import MemoryStore
from nous_memory.client import AsyncMemoryClient
from tests.integration.client_helpers import served
from tests.integration.db_helpers import tables_holding
from tests.integration.test_cli import cli_command, cli_env, run_process

A = "faces"
TALK = [{"role": "user", "content": "I live in Porto."},
        {"role": "user", "content": "My locker combination is Quokka-55, and I swim."},
        {"role": "user", "content": "Cousin Zebedee visits in May."}]


async def _closed(store: MemoryStore) -> str:
    episode = await store.start_episode(A)
    await store.append(A, episode.id, TALK)
    await store.close_episode(A, episode.id)
    await store.worker().drain()
    return str(episode.id)


async def test_rest_forgets_and_reports(client: httpx.AsyncClient, store: MemoryStore) -> None:
    episode = await _closed(store)
    base = f"/agents/{A}/episodes/{episode}/messages"
    redacted = await client.post(f"{base}/1/forget", json={"redact": ["Quokka-55"]})
    assert redacted.status_code == 200, redacted.text
    assert redacted.json()["action"] == "redacted" and redacted.json()["actor"] == "api"
    deleted = await client.post(f"{base}/2/forget")  # no body: the whole message
    assert deleted.status_code == 200 and deleted.json()["action"] == "deleted"
    assert await tables_holding(store, "Quokka", "Zebedee") == {}
    for body, field in (({"redact": "x"}, "redact"), ({"redact": []}, "redact"),
                        ({"redact": None}, "redact"),
                        ({"redact": ["Lisbon"]}, "redact[0]"), ({"nope": 1}, "nope")):
        bad = await client.post(f"{base}/0/forget", json=body)
        assert bad.status_code == 422, body
        assert field in bad.text
    assert (await client.post(f"{base}/2/forget")).status_code == 404  # gone already
    assert (await client.post(f"{base}/9/forget")).status_code == 404
    assert (await client.post(f"/agents/other/episodes/{episode}/messages/0/forget"
                              )).status_code == 404
    said = [m.content for m in await store.transcript(A, episode)]
    assert said == ["I live in Porto.", "My locker combination is [redacted], and I swim."]


async def test_remote_client_and_cli(store: MemoryStore, database_url: str,
                                     tmp_path: Path) -> None:
    episode = await _closed(store)
    async with served(store) as url, AsyncMemoryClient(url) as remote:
        erased = await remote.forget_message(A, episode, 1, redact=["quokka-55"],
                                             actor="owner-app")
    assert erased.action == "redacted" and erased.actor == "api"  # the service names who
    env = cli_env(database_url, tmp_path / "unused-data-dir")
    refused = await run_process([*cli_command(), "forget-message", "--agent", A, episode,
                                 "2"], env)
    assert refused.code != 0 and "--yes" in refused.stderr
    done = await run_process([*cli_command(), "forget-message", "--agent", A, episode, "2",
                              "--yes", "--json"], env)
    assert done.code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["action"] == "deleted" and report["actor"] == "cli"
    facts = [f.summary for f in (await store.list(A, kind="fact")).items]
    assert await tables_holding(store, "Quokka", "Zebedee") == {}, facts
    assert "Porto" in (await store.assemble_context(A, "Where do I live?")).text
