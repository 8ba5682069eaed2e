"""The outage tracker says an outage once, flaps included, and the backoff stays within
its bounds."""

from __future__ import annotations

import logging

import pytest

from nous_memory.db.outage import Backoff, Outage


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_outage_with_flaps_is_two_lines(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    outage = Outage(clock, settle_s=1.0)
    caplog.set_level(logging.WARNING, logger="nous_memory.db")
    for _ in range(50):  # every failing statement of the outage
        outage.went_away(ConnectionRefusedError(111, "Connect call failed"))
    clock.now += 0.4
    outage.came_back()  # a statement slips through between the two servers
    clock.now += 0.1
    outage.went_away("the database system is starting up")
    clock.now += 0.5
    outage.came_back()
    clock.now += 0.5
    outage.came_back()  # not yet settled
    assert outage.unsettled
    clock.now += 0.6
    outage.came_back()
    outage.came_back()
    assert [r.getMessage() for r in caplog.records] == [
        "database unavailable: [Errno 111] Connect call failed; retrying quietly until "
        "it is back", "database back after 1.0 s away"]
    assert outage.count == 1 and not outage.unsettled and not outage.away
    outage.went_away("again")  # a later outage is a new one
    assert outage.count == 2 and len(caplog.records) == 3


def test_backoff_doubles_to_its_cap_with_jitter() -> None:
    draws = iter([0.0, 1.0] * 20)
    backoff = Backoff(base_s=0.1, cap_s=2.0, rand=lambda: next(draws))
    delays = [backoff.next_delay() for _ in range(12)]
    assert delays[:4] == pytest.approx([0.05, 0.2, 0.2, 0.8])
    assert all(0 < d <= 2.0 for d in delays) and max(delays) == 2.0
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(0.05)
    with pytest.raises(ValueError):
        Backoff(base_s=0, cap_s=1)
