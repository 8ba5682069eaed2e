"""History import and time-aware reading on every surface: REST (``/imports``, ``as_of``
on recall and context), the agent tools, and ``nous-memory ingest`` / ``--as-of``."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from nous_memory import MemoryStore
from nous_memory.tools import ToolBox

from .test_cli_facts import run_main

ASKED = datetime(2023, 5, 30, 18, 0, tzinfo=UTC)


def garden_sessions(prefix: str = "g") -> list[dict[str, Any]]:
    """Four dated sessions that differ only by when they happened."""
    out = []
    for weeks in (1, 2, 5, 8):
        at = ASKED - timedelta(weeks=weeks)
        out.append({"key": f"{prefix}{weeks}", "started_at": at.isoformat(), "turns": [
            {"role": "user", "content": f"Today I repotted some plants and watered the "
                                        f"herb garden ({weeks})."},
            {"role": "assistant", "content": "Great, herbs like basil need regular water."}]})
    return out


QUESTION = "What did I do in the garden two weeks ago?"


def first_item(text: str) -> str:
    """The context's first item line (every item starts with its ref in brackets)."""
    return next(line for line in text.splitlines() if line.startswith("["))


async def test_rest_import_then_status_then_recall_as_of(client: httpx.AsyncClient,
                                                          store: MemoryStore) -> None:
    sent = await client.post("/agents/gardener/imports", json={"sessions": garden_sessions()})
    assert sent.status_code == 202, sent.text
    body = sent.json()
    assert (body["sessions_imported"], body["turns_imported"]) == (4, 8)
    again = (await client.post("/agents/gardener/imports",
                               json={"sessions": garden_sessions()})).json()
    assert (again["sessions_imported"], again["sessions_skipped"]) == (0, 4)
    status = (await client.get("/agents/gardener/imports")).json()
    assert (status["sessions"], status["closing"], status["failed"]) == (4, 4, 0)
    await store.worker().drain()
    status = (await client.get("/agents/gardener/imports")).json()
    assert (status["sessions"], status["closing"]) == (4, 0)
    two_weeks = body["episode_ids"][1]

    found = (await client.post("/agents/gardener/recall", json={
        "query": QUESTION, "k": 3, "as_of": ASKED.isoformat()})).json()
    assert found["as_of"] is not None and found["as_of"].startswith("2023-05-30")
    assert {i["memory_id"] for i in found["items"]} == {two_weeks}
    context = (await client.post("/agents/gardener/context", json={
        "query": QUESTION, "as_of": "2023-05-30T18:00:00", "budget_tokens": 300})).json()
    assert "(2)" in first_item(context["text"])
    # the same question asked without as_of names a time with nothing in it
    today = (await client.post("/agents/gardener/recall", json={"query": QUESTION})).json()
    assert today["window"]["start"] > ASKED.isoformat()


@pytest.mark.parametrize(("body", "field"), [
    ({}, "sessions"), ({"sessions": "x"}, "sessions"),
    ({"sessions": [{"turns": []}]}, "sessions[0].started_at"),
    ({"sessions": [{"started_at": "2023-01-01", "turns": [{"role": "pirate",
                                                           "content": "arr"}]}]},
     "sessions[0].turns[0].role"),
    ({"sessions": [], "extra": 1}, "extra"),
])
async def test_rest_import_bad_input_is_422_and_writes_nothing(
        client: httpx.AsyncClient, store: MemoryStore, body: dict[str, Any],
        field: str) -> None:
    response = await client.post("/agents/h/imports", json=body)
    assert response.status_code == 422, response.text
    assert field in [p["field"] for p in response.json()["detail"]]
    assert not (await store.list("h", kind="episode")).items


@pytest.mark.parametrize("as_of", ["yesterday", "2023-13-01", 7, "9" * 100])
async def test_a_bad_as_of_is_422_naming_it(client: httpx.AsyncClient, as_of: Any) -> None:
    for path in ("recall", "context"):
        response = await client.post(f"/agents/a/{path}", json={"query": "x", "as_of": as_of})
        assert response.status_code == 422, response.text
        problem = response.json()["detail"][0]
        assert problem["field"] == "as_of" and "ISO 8601" in problem["reason"]
        assert str(as_of)[:20] not in problem["reason"]  # the value is not echoed


async def test_the_tools_take_as_of(store: MemoryStore) -> None:
    imported = await store.ingest("gardener", garden_sessions())
    await store.worker().drain()
    box = ToolBox(store, agent_id="gardener")
    schema = {t["function"]["name"]: t["function"]["parameters"] for t in box.openai_tools()}
    assert "as_of" in schema["memory_search"]["properties"]
    assert "as_of" in schema["memory_context"]["properties"]
    found = await box.call("memory_search", {"query": QUESTION, "k": 3,
                                             "as_of": "2023-05-30T18:00:00Z"})
    assert not found.is_error, found.text
    assert {i["memory_id"] for i in found.data["items"]} == {str(imported.episode_ids[1])}
    context = await box.call("memory_context", {"query": QUESTION, "budget_tokens": 300,
                                                "as_of": "2023-05-30T18:00:00Z"})
    assert "(2)" in first_item(context.data["text"])
    bad = await box.call("memory_search", {"query": QUESTION, "as_of": "soon"})
    assert bad.is_error and "as_of" in bad.text


async def test_cli_ingest_imports_closes_and_resumes(
        database_url: str, store: MemoryStore, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in garden_sessions()) + "\n")
    base = ("--database-url", database_url, "ingest")
    code, out, err = await run_main(capsys, *base, str(path), "--agent", "g", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["imports"][0]["sessions_imported"] == 4
    assert (report["close_work_open"], report["close_work_failed"]) == (0, 0)
    assert "import g" in err and "close" in err  # progress on stderr
    episodes = (await store.list("g", kind="episode")).items
    assert len(episodes) == 4 and {e.episode.state for e in episodes} == {
        "closed"}
    found = await store.recall("g", QUESTION, k=1, as_of=ASKED)
    assert found.items and "(2)" in found.items[0].text

    code, out, err = await run_main(capsys, *base, str(path), "--agent", "g", "--quiet")
    assert code == 0, err
    assert "0 sessions imported (0 turns), 4 already there" in out and not err

    code, out, err = await run_main(capsys, "--database-url", database_url, "recall",
                                    QUESTION, "--agent", "g", "--k", "1", "--as-of",
                                    "2023-05-30T18:00:00Z", "--json")
    assert code == 0, err
    assert "(2)" in json.loads(out)["items"][0]["text"]


async def test_cli_ingest_of_a_benchmark_file_picks_its_samples(
        database_url: str, store: MemoryStore, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    def question(qid: str) -> dict[str, Any]:
        return {"question_id": qid, "haystack_session_ids": ["a", "b"],
                "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/08 (Mon) 10:00"],
                "haystack_sessions": [[{"role": "user", "content": f"{qid} likes tea"}],
                                      [{"role": "user", "content": f"{qid} likes jazz"}]]}

    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump([question("q1"), question("q2")], handle)
    base = ("--database-url", database_url, "ingest", str(path), "--quiet")
    code, _, err = await run_main(capsys, *base, "--agent", "x")
    assert code == 2 and "sample" in err and "q1" in err
    code, _, err = await run_main(capsys, *base, "--agent", "x", "--sample", "q9")
    assert code == 2 and "not in the file" in err
    code, _, err = await run_main(capsys, *base, "--agent", "one", "--sample", "q2")
    assert code == 0, err
    transcript = await store.transcript("one", (await store.list(
        "one", kind="episode")).items[0].id)
    assert transcript[0].content.startswith("q2")
    code, _, err = await run_main(capsys, *base, "--agent", "all", "--all-samples")
    assert code == 0, err
    assert len((await store.list("all-q1", kind="episode")).items) == 2
    assert len((await store.list("all-q2", kind="episode")).items) == 2
    code, _, err = await run_main(capsys, "--database-url", database_url, "ingest",
                                  str(tmp_path / "missing.jsonl"), "--agent", "x")
    assert code == 2 and "no such file" in err
