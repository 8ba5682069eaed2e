"""The slow tier: tests that take seconds each (a benchmark run, a kill, a fuzzer, the
browser, an outage, a whole build). CI runs everything; ``pytest -m "not slow"`` leaves
these out for the edit loop. A key is a test file, or a test in it (``file::name``, all
its parameters); the value says why it is slow."""

from __future__ import annotations

import pytest

SLOW: dict[str, str] = {
}


def slow_reason(nodeid: str) -> str | None:
    path, _, rest = nodeid.partition("::")
    name = rest.split("[", 1)[0]
    return SLOW.get(path) or SLOW.get(f"{path}::{name}")


def mark_slow(items: list[pytest.Item]) -> None:
    for item in items:
        if slow_reason(item.nodeid) is not None:
            item.add_marker(pytest.mark.slow)
