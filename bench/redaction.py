"""Secrets kept out of memory: how many the detector finds, and how much it takes that
is not a secret.

    python bench/redaction.py [--limit N] [--mb 2] [--verbose]

The dev set (``secrets_cases.json`` and ``secrets_cases_*.json``, each a round written
for it by other hands): short messages as a user writes them, each with the secrets it
holds (``value`` and ``kind``) or none, and a ``style`` (a phrasing, a format, a
language, or a look-alike the user wants kept: order numbers, phone numbers, dates,
prices, a card's last four digits).  Each round is split by a fixed seed into a half to
tune on and a half that is only measured; both are printed (``tune_*``, then the
measured half); ``--verbose`` lists the failures of the tuning half only.

- ``secret_kind_accuracy``: of the secrets found, the share redacted as their kind.
- ``false_redaction_rate``: share of the texts without a secret that lose anything.
- ``false_redacted_char_share``: of all characters that are no secret's, the share
  redacted (over every text).
- ``redact_mb_per_s``: ``redact`` over the whole set repeated to ``--mb`` MB of text, one
  call; ``scan_mb_per_s`` is one RE2 pass over the same text (the floor any detector
  pays), and ``linear_ratio_4x`` the time of four times the text over the time of it
  (4 when linear).
- ``secret_recall`` (headline): share of secret values wholly covered by redactions.

Goals (issue 47): ``secret_recall`` >= 0.98 and ``false_redaction_rate`` <= 0.02 on the
measured half.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import re2

from nous_memory.secrets import Secret, find_secrets, redact

HERE = Path(__file__).resolve().parent
SEED = 47  # the split: never changed after the first run


def rounds() -> list[list[dict[str, Any]]]:
    """The dev set's files, each a round written by its own hand (the first, then
    ``secrets_cases_*.json`` in name order)."""
    paths = [HERE / "secrets_cases.json", *sorted(HERE.glob("secrets_cases_*.json"))]
    return [json.loads(path.read_text("utf-8")) for path in paths]


def split(found: list[list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """A fixed-seed half of each round to tune on, the other only measured (a round added
    later moves no case of an earlier one)."""
    halves: dict[str, list[dict[str, Any]]] = {"tune": [], "measure": []}
    for items in found:
        order = sorted(items, key=lambda c: c["id"])
        random.Random(SEED).shuffle(order)
        half = len(order) // 2
        halves["tune"] += order[:half]
        halves["measure"] += order[half:]
    return halves


def _occurrences(text: str, value: str) -> list[tuple[int, int]]:
    spans, pos = [], text.find(value)
    while pos >= 0 and value:
        spans.append((pos, pos + len(value)))
        pos = text.find(value, pos + 1)
    return spans


def _covering(found: list[Secret], start: int, end: int) -> list[Secret] | None:
    """The redactions that together cover [start, end), or None when a character is left."""
    covering = [s for s in found if s.start < end and s.end > start]
    pos = start
    for secret in sorted(covering, key=lambda s: s.start):
        if secret.start > pos:
            return None
        pos = max(pos, secret.end)
    return covering if pos >= end else None


def score(items: list[dict[str, Any]], failures: list[str] | None) -> dict[str, float]:
    values = found_values = right_kind = 0
    clean = clean_hit = 0
    other_chars = other_redacted = 0
    for case in items:
        text = case["text"]
        found = find_secrets(text)
        secret_chars: set[int] = set()
        for secret in case["secrets"]:
            spans = _occurrences(text, secret["value"])
            for start, end in spans:
                secret_chars.update(range(start, end))
            values += 1
            covers = [_covering(found, s, e) for s, e in spans]
            if not spans or any(c is None for c in covers):
                if failures is not None:
                    failures.append(f"MISSED {case['id']} {secret['kind']} "
                                    f"{secret['value']!r}: {redact(text).text!r}")
                continue
            found_values += 1
            kinds = {s.kind for c in covers if c for s in c}
            if kinds == {secret["kind"]}:
                right_kind += 1
            elif failures is not None:
                failures.append(f"KIND {case['id']} {secret['value']!r} is {secret['kind']},"
                                f" found {sorted(kinds)}")
        redacted = {i for s in found for i in range(s.start, s.end)}
        other_chars += len(text) - len(secret_chars)
        wrong = redacted - secret_chars
        other_redacted += len(wrong)
        if not case["secrets"]:
            clean += 1
            clean_hit += bool(found)
        if wrong and failures is not None:
            label = "EXTRA" if case["secrets"] else "FALSE"
            failures.append(f"{label} {case['id']} ({case.get('style')}): "
                            f"{redact(text).text!r}")
    return {"secret_kind_accuracy": right_kind / max(found_values, 1),
            "false_redaction_rate": clean_hit / max(clean, 1),
            "false_redacted_char_share": other_redacted / max(other_chars, 1),
            "secret_recall": found_values / max(values, 1)}


def _seconds(fn: Any, arg: str) -> float:
    start = time.perf_counter()
    fn(arg)
    return time.perf_counter() - start


def speed(items: list[dict[str, Any]], mb: float) -> dict[str, float]:
    unit = "\n".join(case["text"] for case in items) + "\n"
    text = unit * max(1, int(mb * 1e6 / max(len(unit.encode()), 1)))
    size = len(text.encode()) / 1e6
    scan = re2.compile(r"\d+")
    redact(unit)  # warm-up: patterns compiled
    redact_s = min(_seconds(redact, text) for _ in range(3))
    scan_s = min(_seconds(scan.findall, text) for _ in range(3))
    four_s = _seconds(redact, text * 4)
    return {"scan_mb_per_s": size / scan_s, "linear_ratio_4x": four_s / redact_s,
            "redact_mb_per_s": size / redact_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="cases per run (both halves)")
    parser.add_argument("--mb", type=float, default=2.0, help="text size for throughput")
    parser.add_argument("--verbose", action="store_true",
                        help="the tuning half's failures, on stderr")
    args = parser.parse_args()
    halves = split(rounds())
    if args.limit:
        halves = {name: items[:args.limit // 2] for name, items in halves.items()}
    failures: list[str] | None = [] if args.verbose else None
    tune = score(halves["tune"], failures)
    for line in failures or []:
        print(line, file=sys.stderr)
    measured = score(halves["measure"], None)
    fast = speed(halves["tune"] + halves["measure"], args.mb / 4 if args.limit else args.mb)
    print(f"# cases: {len(halves['tune'])} tuning, {len(halves['measure'])} measured "
          f"(seed {SEED})")
    for name, value in tune.items():
        print(f"tune_{name}: {value:.4f}")
    met = measured["secret_recall"] >= 0.98 and measured["false_redaction_rate"] <= 0.02
    print(f"# goal (measured half): secret_recall >= 0.98 and false_redaction_rate <= 0.02:"
          f" {'met' if met else 'NOT met'}")
    if not args.limit:  # each round's measured half on its own (a later round is new text)
        for number, found in enumerate(rounds(), start=1):
            part = score(split([found])["measure"], None)
            print(f"# round {number}, measured half: secret_recall "
                  f"{part['secret_recall']:.4f}, false_redaction_rate "
                  f"{part['false_redaction_rate']:.4f}")
    for name in ("secret_kind_accuracy", "false_redaction_rate", "false_redacted_char_share"):
        print(f"{name}: {measured[name]:.4f}")
    for name, value in fast.items():
        print(f"{name}: {value:.2f}")
    print(f"secret_recall: {measured['secret_recall']:.4f}")


if __name__ == "__main__":
    main()
