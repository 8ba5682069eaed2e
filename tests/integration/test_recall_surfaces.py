"""recall over REST and on the command line: answers, and bad input naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.context.recall import MAX_K
from tests.integration.http_helpers import fields_of, post_body

from .test_cli import cli_command, cli_env, run_process
from .test_cli_facts import run_main

AGENT = "recall-agent"
NOTE = "The staging database password rotates every Friday at noon"


def url(agent: str = AGENT) -> str:
    return f"/agents/{agent}/recall"


async def test_rest_recall_answers_with_typed_scores(client: httpx.AsyncClient,
                                                     store: MemoryStore) -> None:
    fact = await store.remember(AGENT, "fact", content=NOTE)
    await store.remember(AGENT, "decision", description="Use Friday noon for rotations")
    await store.remember("someone-else", "fact", content=NOTE)
    response = await client.post(url(), json={"query": "when does the password rotate",
                                              "kinds": ["fact"], "k": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["k"] == 5 and set(body["timings"]) == {"embed_ms", "sql_ms", "total_ms"}
    assert [i["memory_id"] for i in body["items"]] == [str(fact.id)]
    item = body["items"][0]
    assert item["ref"] == f"fact:{fact.id.hex[:8]}" and item["source"] == "memory"
    assert item["text"] == NOTE and item["status"] == "active"
    assert set(item["scores"]) == {"cosine", "vector_rank", "text_rank", "text_score",
                                   "fused", "recency", "importance", "confidence", "use",
                                   "speaker", "time", "matched", "final"}
    assert 0 < item["scores"]["cosine"] <= 1

    spec = (await client.get("/openapi.json")).json()
    body_schema = spec["paths"]["/agents/{agent_id}/recall"]["post"]["requestBody"]
    assert body_schema["content"]["application/json"]["schema"]["$ref"].endswith(
        "/RecallRequest")
    assert set(spec["components"]["schemas"]["RecallRequest"]["properties"]) == {
        "query", "kinds", "k", "include_superseded", "query_embedding", "as_of",
        "current_only", "user"}


@pytest.mark.parametrize(("body", "field"), [
    ({"query": ""}, "query"), ({"query": "  "}, "query"), ({}, "query"),
    ({"query": "x", "k": 0}, "k"), ({"query": "x", "k": MAX_K + 1}, "k"),
    ({"query": "x", "kinds": ["fact", "rumour"]}, "kinds[1]"),
    ({"query": "x", "include_superseded": "maybe"}, "include_superseded"),
    ({"query": "x", "limit": 3}, "limit"), (b'{"query": ', "body"),
])
async def test_rest_bad_input_is_422_naming_the_field(client: httpx.AsyncClient,
                                                      body: object, field: str) -> None:
    response = await post_body(client, url(), body)
    assert response.status_code == 422, response.text
    assert field in fields_of(response)


async def test_cli_recall_and_its_errors(database_url: str, store: MemoryStore,
                                         tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    fact = await store.remember(AGENT, "fact", content=NOTE)
    # one real process: the console script end to end
    done = await run_process([*cli_command(), "recall", "--agent", AGENT, "--json",
                              "password rotation day"], cli_env(database_url, tmp_path))
    body = json.loads(done.stdout) if done.code == 0 else done.stderr
    assert done.code == 0, body
    assert body["items"][0]["memory_id"] == str(fact.id)

    base = ("--database-url", database_url, "recall", "--agent", AGENT)
    code, out, err = await run_main(capsys, *base, "password", "--kind", "fact", "--k", "3")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"  1. fact:{fact.id.hex[:8]}") and "password rotates" in first
    code, out, _ = await run_main(capsys, *base, "password", "--kind", "procedure")
    assert (code, out) == (0, "nothing recalled\n")

    for args, field in ((("",), "query"), (("x", "--k", "0"), "k"),
                        (("x", "--kind", "rumour"), "kinds[0]")):
        code, out, err = await run_main(capsys, *base, *args)
        assert code == 2 and out == "", args
        assert f"nous-memory: error: {field}: " in err, err
