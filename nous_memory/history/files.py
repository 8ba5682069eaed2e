"""History files: JSON Lines of sessions, or LongMemEval- and LoCoMo-shaped JSON.

A file may hold one person's history (JSON Lines) or several (the benchmark files hold
one history per question or conversation, each called a sample here); the reader
returns each sample's sessions in date order, with the keys the files give them.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..errors import FieldProblem, InvalidInputError
from .sessions import HistorySession, HistoryTurn, session_from

FORMATS = ("auto", "jsonl", "longmemeval", "locomo")
_LOCOMO_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryFile:
    """One sample of a history file: its id (None for a one-person file) and sessions."""

    sample: str | None
    sessions: list[HistorySession]

    @property
    def turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def read_history(path: Path, fmt: str = "auto") -> list[HistoryFile]:
    """Every sample of the file; a problem names the line or item and the field."""
    if fmt not in FORMATS:
        raise InvalidInputError.single("format", f"must be one of {', '.join(FORMATS)}")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            text: str = handle.read()
    except FileNotFoundError:
        raise InvalidInputError.single("file", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:  # a directory, bad gzip, ...
        raise InvalidInputError.single("file", f"cannot read {path}: {exc}") from None
    if fmt == "auto":
        fmt = "jsonl" if not text.lstrip().startswith("[") else _guess(text)
    if fmt == "jsonl":
        return [HistoryFile(sample=None, sessions=_sorted(list(_jsonl(text))))]
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError.single("file", f"not JSON: {exc}") from None
    if not isinstance(items, list):
        raise InvalidInputError.single("file", "must be a JSON list")
    reader = _longmemeval if fmt == "longmemeval" else _locomo
    out = []
    for index, item in enumerate(items):
        try:
            out.append(reader(item))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError.single(f"items[{index}]", f"not {fmt}-shaped: {exc!r}"
                                           ) from None
    return out


def _guess(text: str) -> str:
    head = text[:20_000]
    if '"haystack_sessions"' in head:
        return "longmemeval"
    if '"conversation"' in head:
        return "locomo"
    raise InvalidInputError.single("format", "cannot tell the file's shape; pass one of "
                                             "jsonl, longmemeval, locomo")


def _jsonl(text: str) -> Iterator[HistorySession]:
    problems: list[FieldProblem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield session_from(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(FieldProblem(f"line {number}", f"not JSON: {exc.msg}"))
        except InvalidInputError as exc:
            problems.extend(FieldProblem(f"line {number}.{p.field}", p.reason)
                            for p in exc.problems)
        if len(problems) >= 20:
            break
    if problems:
        raise InvalidInputError(problems)


def _sorted(sessions: list[HistorySession]) -> list[HistorySession]:
    """Date order (stable): facts restated later must be learned later."""
    return sorted(sessions, key=lambda s: s.started_at)


def longmemeval_time(text: str) -> datetime:
    """LongMemEval writes "2023/05/30 (Tue) 23:40"; taken as UTC."""
    day, _, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def _longmemeval(item: Mapping[str, Any]) -> HistoryFile:
    sessions = []
    for sid, date, turns in zip(item["haystack_session_ids"], item["haystack_dates"],
                                item["haystack_sessions"], strict=True):
        started = longmemeval_time(date)
        sessions.append(HistorySession(key=str(sid), started_at=started, turns=[
            HistoryTurn(role=t["role"], content=t["content"],
                        at=started + timedelta(seconds=i), metadata={"turn": f"{sid}#{i}"})
            for i, t in enumerate(turns)]))
    return HistoryFile(sample=str(item["question_id"]), sessions=_sorted(sessions))


def locomo_time(text: str) -> datetime:
    """LoCoMo writes "1:56 pm on 8 May, 2023"; taken as UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def _locomo(item: Mapping[str, Any]) -> HistoryFile:
    conv = item["conversation"]
    roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
    numbers = sorted(int(m.group(1)) for key in conv
                     if (m := _LOCOMO_SESSION.fullmatch(key)) and conv[key])
    sessions = []
    for n in numbers:
        started = locomo_time(conv[f"session_{n}_date_time"])
        turns = []
        for i, t in enumerate(conv[f"session_{n}"]):
            text = str(t.get("text") or "")
            if t.get("blip_caption"):  # the shared photo is part of what was said
                text = f"{text} [shares a photo of {t['blip_caption']}]".strip()
            turns.append(HistoryTurn(role=roles.get(t["speaker"], "user"), content=text,
                                     name=t["speaker"], at=started + timedelta(seconds=i),
                                     metadata={"dia_id": t["dia_id"]}))
        sessions.append(HistorySession(key=f"session_{n}", started_at=started, turns=turns))
    return HistoryFile(sample=str(item["sample_id"]), sessions=_sorted(sessions))
