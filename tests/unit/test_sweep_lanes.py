"""The lanes a job's sweeps run in (``job_workers``): how many batches run at once, and
what a failure or a cancellation does to the ones in flight.  The batches here are plain
coroutines; the same lanes on a real database: tests/integration/test_jobs_*.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from dataclasses import replace

import pytest

from nous_memory.config import Settings
from nous_memory.maintenance.batches import Sweeps, Work
from nous_memory.maintenance.policy import MaintenancePolicy


class OneNode:
    """All the sweeps read of a database: whether it is distributed."""

    distributed = False


def sweeps(workers: int, *, dry_run: bool = False) -> Sweeps:
    policy = replace(MaintenancePolicy.from_settings(Settings()), workers=workers)
    return Sweeps(OneNode(), dry_run=dry_run, policy=policy)  # type: ignore[arg-type]


class Batches:
    """Batches that take ``pause`` seconds each and note how many ran at once."""

    def __init__(self, count: int, *, fail_at: int | None = None, pause: float = 0.02
                 ) -> None:
        self.count, self.fail_at, self.pause = count, fail_at, pause
        self.running = self.most = 0
        self.started: list[int] = []
        self.finished: list[int] = []
        self.two_at_once = asyncio.Event()

    async def one(self, n: int) -> int:
        self.started.append(n)
        self.running += 1
        self.most = max(self.most, self.running)
        if self.running >= 2:
            self.two_at_once.set()
        try:
            await asyncio.sleep(self.pause)
        finally:
            self.running -= 1
        if n == self.fail_at:
            raise RuntimeError(f"batch {n} failed")
        self.finished.append(n)
        return 10

    async def __call__(self) -> AsyncGenerator[Work, None]:
        for n in range(self.count):
            yield self.one(n)


@pytest.mark.parametrize("workers", [1, 2, 3])
async def test_up_to_workers_batches_run_at_once(workers: int) -> None:
    batches = Batches(7)
    assert await sweeps(workers).in_lanes(batches()) == 70
    assert batches.most == workers
    assert sorted(batches.finished) == list(range(7))


async def test_a_dry_run_has_one_lane() -> None:
    batches = Batches(4)
    assert await sweeps(3, dry_run=True).in_lanes(batches()) == 40
    assert batches.most == 1


@pytest.mark.parametrize("workers", [1, 2])
async def test_a_failure_stops_new_work_and_lets_the_work_in_flight_finish(
        workers: int) -> None:
    batches = Batches(8, fail_at=2)
    with pytest.raises(RuntimeError, match="batch 2 failed"):
        await sweeps(workers).in_lanes(batches())
    assert batches.running == 0
    if workers == 1:
        assert batches.started == [0, 1, 2]
    else:  # batch 3 started beside batch 2 and finished; nothing started after that
        assert batches.started == [0, 1, 2, 3]
        assert batches.finished == [0, 1, 3]


async def test_a_failing_source_of_work_is_raised_after_the_lanes_finish() -> None:
    batches = Batches(0)

    async def keys_then_a_broken_read() -> AsyncGenerator[Work, None]:
        yield batches.one(0)
        yield batches.one(1)
        raise ConnectionError("the key read failed")

    with pytest.raises(ConnectionError, match="key read"):
        await sweeps(2).in_lanes(keys_then_a_broken_read())
    assert batches.finished == [0, 1] and batches.running == 0


async def test_cancelling_the_run_cancels_its_lanes() -> None:
    batches = Batches(6, pause=30)
    run = asyncio.create_task(sweeps(2).in_lanes(batches()))
    await asyncio.wait_for(batches.two_at_once.wait(), timeout=10)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert batches.running == 0 and batches.finished == []
    assert batches.started == [0, 1]


async def test_work_read_while_a_lane_failed_is_not_started() -> None:
    batches = Batches(0, fail_at=0, pause=0.01)

    async def slow_reads() -> AsyncGenerator[Work, None]:
        yield batches.one(0)
        await asyncio.sleep(0.1)  # batch 0 fails during this read
        yield batches.one(1)

    with pytest.raises(RuntimeError, match="batch 0 failed"):
        await sweeps(2).in_lanes(slow_reads())
    assert batches.started == [0]


async def test_the_first_failure_is_raised_and_the_later_ones_noted_on_it() -> None:
    async def both_fail(n: int) -> int:
        await asyncio.sleep(0.01 * (n + 1))
        raise RuntimeError(f"lane {n} failed")

    async def failing() -> AsyncGenerator[Work, None]:
        for n in range(2):
            yield both_fail(n)

    with pytest.raises(RuntimeError, match="lane 0 failed") as raised:
        await sweeps(2).in_lanes(failing())
    assert raised.value.__notes__ == ["another lane failed too: RuntimeError: lane 1 failed"]
