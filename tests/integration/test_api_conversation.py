"""Working memory over REST and the CLI: prompt, summary, history, edits, policy, errors."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.cli.main import main
from nous_memory.conversation.prompt import prompt_tokens

from .http_helpers import fields_of

AGENT = "wm-rest"


async def _episode(store: MemoryStore, n: int = 12) -> str:
    episode = await store.start_episode(AGENT, title="trip")
    await store.append(AGENT, episode.id, [
        {"role": "user", "name": "Ana", "content": f"Ana plans stop {i} in Porto at {i + 8} am."}
        for i in range(n)])
    return str(episode.id)


async def test_prompt_summary_history_and_edits(client: httpx.AsyncClient,
                                                store: MemoryStore) -> None:
    episode = await _episode(store)
    base = f"/agents/{AGENT}/episodes/{episode}"
    put = await client.put(f"/agents/{AGENT}/conversation-policy",
                           json={"mode": "rule", "protect_tail": 3, "trigger_messages": 10,
                                 "window_tokens": 8192})  # not the budget: no compaction
    assert put.status_code == 200 and put.json()["protect_tail"] == 3
    response = await client.post(f"{base}/prompt", json={"system": "Be brief.",
                                                          "budget_tokens": 300})
    assert response.status_code == 200, response.text
    prompt = response.json()
    assert prompt["tokens"] == prompt_tokens(prompt["messages"]) <= 300
    assert prompt["summarized"]["folded"] == 9 and prompt["tail_messages"] == 3
    assert prompt["messages"][1]["content"].startswith('<nous-memory kind="summary">')
    summary = (await client.get(f"{base}/summary")).json()
    assert summary["watermark_seq"] == 8 and "Porto" in summary["text"]
    assert "Porto" in summary["facets"]["entities"]
    edited = await client.patch(f"{base}/messages/1", json={"content": "Ana skips Braga."})
    assert edited.status_code == 200 and edited.json()["invalidated"] is True
    run = (await client.post(f"{base}/summary", json={})).json()
    assert run["result"]["invalidated"] == "message 1 edited behind the watermark"
    assert "Braga" in run["summary"]["text"]
    deleted = await client.delete(f"{base}/messages/11")
    assert deleted.status_code == 200 and deleted.json()["invalidated"] is False
    records = (await client.get(f"{base}/summary/history")).json()["records"]
    assert [(r["op"], r["status"]) for r in records] == [("fold", "invalidated"),
                                                         ("rebuild", "current")]


async def test_errors_name_field_and_reason(client: httpx.AsyncClient,
                                            store: MemoryStore) -> None:
    episode = await _episode(store, 2)
    base = f"/agents/{AGENT}/episodes/{episode}"
    bad = await client.post(f"{base}/prompt", json={"system": "x", "budget_tokens": "many",
                                                    "colour": 1})
    assert bad.status_code == 422 and sorted(fields_of(bad)) == ["colour"]
    bad = await client.post(f"{base}/prompt", json={"system": "x", "budget_tokens": 0})
    assert bad.status_code == 422 and fields_of(bad) == ["budget_tokens"]
    tiny = await client.post(f"{base}/prompt", json={"system": "word " * 50, "budget_tokens": 5})
    assert tiny.status_code == 422 and "system prompt alone" in tiny.json()["detail"][0]["reason"]
    bad = await client.put(f"/agents/{AGENT}/conversation-policy", json={"protect_tail": -2})
    assert bad.status_code == 422 and fields_of(bad) == ["policy.protect_tail"]
    bad = await client.post(f"{base}/summary", json={"policy": {"mode": "psychic"}})
    assert bad.status_code == 422 and fields_of(bad) == ["policy.mode"]
    missing = await client.patch(f"{base}/messages/99", json={"content": "x"})
    assert missing.status_code == 404
    other = await client.get(f"/agents/someone-else/episodes/{episode}/summary")
    assert other.status_code == 404  # another agent's episode is not found
    await store.close_episode(AGENT, episode)
    closed = await client.delete(f"{base}/messages/0")
    assert closed.status_code == 409


async def test_cli_prompt_and_summary(store: MemoryStore, database_url: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    episode = await _episode(store)
    base = ("--database-url", database_url)
    capsys.readouterr()
    code = await asyncio.to_thread(main, [*base, "episodes", "prompt", episode, "--agent", AGENT,
                                          "--budget", "200", "--system", "Be brief.",
                                          "--policy-json", '{"mode": "rule", '
                                          '"trigger_messages": 10, "window_tokens": 8192}',
                                          "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["tokens"] <= 200 and data["summarized"]["folded"] == 6
    code = await asyncio.to_thread(main, [*base, "episodes", "summary", episode, "--agent",
                                          AGENT, "--history"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "watermark: 5  source: rule" in out and "history:" in out and "fold depth=0" in out
    code = await asyncio.to_thread(main, [*base, "episodes", "prompt", episode, "--agent", AGENT,
                                          "--budget", "0"])
    out, err = capsys.readouterr()
    assert code != 0 and "budget_tokens: must be an integer >= 1" in err
