"""One wording for a value over its limit, on every surface: the field, then "longer than
N characters (got M)" (or items, or bytes), or the range for a number; never the value.
Python, REST and the command line here; the tools in tests/integration/test_tools.py."""

from __future__ import annotations

import httpx
import pytest

from nous_memory import InvalidInputError, MemoryStore, PayloadTooLargeError
from tests.integration.test_cli_facts import run_main

A = "limits"
LONG = "a" * 10_001


def reasons(exc: InvalidInputError) -> dict[str, str]:
    return {p.field: p.reason for p in exc.problems}


async def test_python_says_the_limit_and_the_size(store: MemoryStore) -> None:
    with pytest.raises(PayloadTooLargeError) as caught:
        await store.remember(A, "fact", content=LONG, tags=["t"] * 33)
    assert reasons(caught.value) == {"content": "longer than 10000 characters (got 10001)",
                                     "tags": "more than 32 items (got 33)"}
    assert "aaaa" not in str(caught.value)
    calls = [
        ("query", "longer than 4000 characters (got 4001)", store.recall(A, "q" * 4_001)),
        ("query", "longer than 4000 characters (got 4001)",
         store.assemble_context(A, "q" * 4_001)),
        ("agent_id", "longer than 128 characters (got 129)", store.list("x" * 129)),
        ("limit", "must be between 1 and 500", store.list(A, limit=501)),
        ("importance", "must be at most 1", store.remember(A, "fact", content="x",
                                                           importance=2)),
        ("status", "must be one of active, superseded, archived, deleted",
         store.list(A, status="x" * 5_000)),
    ]
    for field, reason, call in calls:
        with pytest.raises(InvalidInputError) as refused:
            await call
        assert reasons(refused.value) == {field: reason}


async def test_rest_says_it_the_same_way(client: httpx.AsyncClient) -> None:
    created = await client.post(f"/agents/{A}/memories", json={"kind": "fact",
                                                               "content": LONG})
    assert created.status_code == 422
    assert created.json() == {"detail": [{"field": "content",
                                          "reason": "longer than 10000 characters (got 10001)"}]}
    recalled = await client.post(f"/agents/{A}/recall", json={"query": "q" * 4_001})
    assert recalled.json()["detail"] == [{"field": "query",
                                          "reason": "longer than 4000 characters (got 4001)"}]
    listed = await client.get(f"/agents/{A}/memories", params={"limit": 501})
    assert listed.status_code == 422
    assert listed.json()["detail"][0]["reason"] in ("must be between 1 and 500",
                                                    "must be at most 500")
    for response in (created, recalled, listed):
        assert "aaaaaaaaaa" not in response.text and "qqqqqqqqqq" not in response.text


async def test_the_command_line_says_it_the_same_way(
        database_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = await run_main(capsys, "--database-url", database_url, "remember",
                                    "fact", "--agent", A, "--content", LONG)
    assert code == 2 and out == ""
    assert err.strip() == "nous-memory: error: content: longer than 10000 characters (got 10001)"
