"""Query-first scheduling: interactive requests overtake bulk work, bulk runs in slices."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from nous_memory.embeddings.base import Vector
from nous_memory.embeddings.compute import ComputeQueue, default_threads


class GatedModel:
    """Records every batch it encodes; each batch waits until the test opens the gate."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.started = threading.Semaphore(0)
        self.gate = threading.Semaphore(0)

    def encode(self, texts: list[str]) -> list[Vector]:
        self.batches.append(texts)
        self.started.release()
        self.gate.acquire()
        return [np.full(4, float(len(t)), dtype=np.float32) for t in texts]


async def _started(model: GatedModel) -> None:
    await asyncio.to_thread(model.started.acquire)


async def test_an_interactive_request_waits_for_one_slice_at_most() -> None:
    model = GatedModel()
    compute = ComputeQueue(model.encode, name="test", slice_texts=4, interactive_max=2)
    bulk_texts = [f"bulk {i:02d}" for i in range(20)]
    bulk = asyncio.create_task(compute.run(bulk_texts))
    await _started(model)  # the first bulk slice is on the model
    query = asyncio.create_task(compute.run(["what now?"]))
    await asyncio.sleep(0.05)  # the query is queued behind the running slice
    for _ in range(6):  # 5 bulk slices + 1 query
        model.gate.release()
    vectors = await bulk
    assert (await query)[0][0] == len("what now?")
    assert [len(b) for b in model.batches] == [4, 1, 4, 4, 4, 4]
    assert model.batches[1] == ["what now?"]  # right after the slice that was running
    assert [v[0] for v in vectors] == [len(t) for t in bulk_texts]  # order kept


async def test_two_bulk_jobs_share_the_model_slice_by_slice() -> None:
    model = GatedModel()
    compute = ComputeQueue(model.encode, name="test", slice_texts=2, interactive_max=1)
    first = asyncio.create_task(compute.run(["a1", "a2", "a3", "a4", "a5", "a6"]))
    await _started(model)
    second = asyncio.create_task(compute.run(["b1", "b2", "b3", "b4"]))
    await asyncio.sleep(0.05)
    for _ in range(5):
        model.gate.release()
        await asyncio.sleep(0.02)  # let the finished slice's caller queue its next one
    await asyncio.gather(first, second)
    owners = [b[0][0] for b in model.batches]
    assert owners == ["a", "b", "a", "b", "a"]


async def test_a_cancelled_request_is_skipped_and_errors_reach_the_caller() -> None:
    model = GatedModel()
    compute = ComputeQueue(model.encode, name="test", slice_texts=2, interactive_max=2)
    running = asyncio.create_task(compute.run(["first"]))
    await _started(model)
    doomed = asyncio.create_task(compute.run(["never"]))
    await asyncio.sleep(0.05)
    doomed.cancel()
    await asyncio.sleep(0.05)  # the cancellation reaches the queued job
    sentinel = asyncio.create_task(compute.run(["sentinel"]))  # queued after the doomed one
    await asyncio.sleep(0.05)
    model.gate.release()
    await running
    model.gate.release()
    await sentinel
    assert await compute.run([]) == []
    assert model.batches == [["first"], ["sentinel"]]  # the cancelled job never ran

    def broken(texts: list[str]) -> list[Vector]:
        raise RuntimeError("model exploded")

    with pytest.raises(RuntimeError, match="model exploded"):
        await ComputeQueue(broken, name="broken").run(["x"])

    calls = 0

    def exits_once(texts: list[str]) -> list[Vector]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise SystemExit("a BaseException from inside the model")
        return [np.zeros(4, dtype=np.float32) for _ in texts]

    fragile = ComputeQueue(exits_once, name="fragile")
    with pytest.raises(SystemExit):
        await fragile.run(["x"])
    assert len(await fragile.run(["y"])) == 1  # the thread still serves


def test_thread_policy() -> None:
    assert [default_threads(n) for n in (1, 2, 3, 4, 8, 16, 64)] == [1, 2, 3, 4, 4, 4, 4]
    assert 1 <= default_threads() <= 4


async def test_bulk_slices_are_bounded_by_work_and_results_keep_their_order() -> None:
    """Long texts (capped at the model's window) fill a slice sooner than short ones;
    texts are sliced shortest first, and every vector goes back to its own text."""
    model = GatedModel()
    compute = ComputeQueue(model.encode, name="test", slice_texts=10, slice_chars=2_400,
                           interactive_max=1)
    texts = ["w" * 5_000, "short one", "m" * 900, "tiny", "n" * 1_300, "s" * 40]
    task = asyncio.create_task(compute.run(texts))
    for _ in range(len(texts)):
        model.gate.release()
    vectors = await task
    assert [v[0] for v in vectors] == [len(t) for t in texts]
    # 4 + 9 + 40 + 900 + 1,200 (1,300 counts as the window) fits 2,400; 5,000 does not
    assert [[len(t) for t in b] for b in model.batches] == [[4, 9, 40, 900, 1_300],
                                                             [5_000]]


async def test_few_texts_over_the_work_budget_are_bulk() -> None:
    model = GatedModel()
    compute = ComputeQueue(model.encode, name="test", slice_chars=2_400, interactive_max=8,
                           interactive_chars=2_400)
    task = asyncio.create_task(compute.run(["a" * 1_000, "b" * 1_000, "c" * 1_000]))
    for _ in range(2):
        model.gate.release()
    await task
    assert [len(b) for b in model.batches] == [2, 1]
