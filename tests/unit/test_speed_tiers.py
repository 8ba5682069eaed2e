"""The slow tier names tests that exist: a renamed test cannot drop out of it unseen."""

from __future__ import annotations

import re
from pathlib import Path

from tests.speed import SLOW, slow_reason

ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_entry_names_a_test() -> None:
    assert SLOW
    for key, reason in SLOW.items():
        path, _, name = key.partition("::")
        assert (ROOT / path).is_file(), key
        if name:
            text = (ROOT / path).read_text()
            assert re.search(rf"^(async )?def {re.escape(name)}\(", text, re.M), key
        assert reason.strip(), key


def test_parameters_and_files_are_matched() -> None:
    key = next(k for k in SLOW if "::" in k)
    assert slow_reason(f"{key}[a-parameter]") == SLOW[key]
    path = next(k for k in SLOW if "::" not in k)
    assert slow_reason(f"{path}::any_test") == SLOW[path]
    assert slow_reason("tests/unit/test_speed_tiers.py::test_every_slow_entry_names_a_test") is None
