"""A history's sessions and turns: keyword-only, immutable, checked before any write."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from ..episodes.lifecycle import MAX_MESSAGES_PER_APPEND, MessageIn, parse_messages
from ..errors import FieldProblem, InvalidInputError, more_than
from ..memories.params import check_time
from ..people import person_key

MAX_SESSION_TURNS = MAX_MESSAGES_PER_APPEND  # a session is written in one transaction
MAX_KEY_CHARS = 200
MAX_SESSIONS_PER_CALL = 1_000


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryTurn:
    """One message of a past conversation, as it was said: appended as a ``MessageIn``
    (``message()``), its time given as ``at``."""

    role: str
    content: str
    at: datetime | None = None
    name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    user: str | None = None  # the person who said it (people/), when not the session's

    def message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content,
                               "metadata": dict(self.metadata)}
        if self.name is not None:
            out["name"] = self.name
        if self.user is not None:
            out["user"] = self.user
        if self.at is not None:
            out["created_at"] = self.at
        return out


TURN_FIELDS = tuple(f.name for f in fields(HistoryTurn))


@dataclass(frozen=True, slots=True, kw_only=True)
class HistorySession:
    """One past conversation.  ``key`` identifies it across imports (a second import of
    the same key is skipped); without one, the key is a digest of its date and turns."""

    started_at: datetime
    turns: Sequence[HistoryTurn]
    key: str | None = None
    title: str | None = None
    user: str | None = None  # whose conversation it was (people/): the user's turns are theirs

    def import_key(self) -> str:
        if self.key is not None:
            return self.key
        digest = hashlib.sha256()
        digest.update(self.started_at.isoformat().encode())
        for turn in self.turns:
            digest.update(json.dumps([turn.role, turn.name, turn.content],
                                     ensure_ascii=False).encode("utf-8", "surrogatepass"))
        return f"sha256:{digest.hexdigest()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedSession:
    key: str
    started_at: datetime
    title: str | None
    messages: list[MessageIn]
    participants: list[str]
    user: str | None = None


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def parse_sessions(sessions: Sequence[HistorySession | Mapping[str, Any]]
                   ) -> list[CheckedSession]:
    """Validate every session first (each problem named ``sessions[i].field``): a bad
    session rejects the call and nothing is written.  A session given twice with the same
    turns is imported once; the same key with other turns is an error."""
    if isinstance(sessions, str | bytes) or not isinstance(sessions, Sequence):
        raise InvalidInputError.single("sessions", "must be a list of sessions")
    if len(sessions) > MAX_SESSIONS_PER_CALL:
        raise InvalidInputError.single(
            "sessions", more_than(MAX_SESSIONS_PER_CALL, len(sessions), "sessions"))
    problems: list[FieldProblem] = []
    out: list[CheckedSession] = []
    keys: dict[str, str] = {}  # key -> a digest of the session's turns
    for index, raw in enumerate(sessions):
        prefix = f"sessions[{index}]"
        try:
            session = raw if isinstance(raw, HistorySession) else session_from(raw)
        except InvalidInputError as exc:
            problems.extend(FieldProblem(f"{prefix}.{p.field}", p.reason) for p in exc.problems)
            continue
        if not session.turns:
            problems.append(FieldProblem(f"{prefix}.turns", "at least one turn is needed"))
            continue
        if len(session.turns) > MAX_SESSION_TURNS:
            problems.append(FieldProblem(f"{prefix}.turns", more_than(
                MAX_SESSION_TURNS, len(session.turns), "turns")))
            continue
        key = session.import_key()
        if not key.strip() or len(key) > MAX_KEY_CHARS or not key.isprintable():
            problems.append(FieldProblem(f"{prefix}.key", f"must be printable text of 1 to "
                                         f"{MAX_KEY_CHARS} characters"))
            continue
        if key in keys:
            if keys[key] == _content(session):
                continue  # the same session twice (histories repeat them): imported once
            problems.append(FieldProblem(f"{prefix}.key", "appears twice in this import "
                                                          "with other turns"))
            continue
        keys[key] = _content(session)
        try:
            messages = parse_messages([t.message() for t in session.turns])
        except InvalidInputError as exc:
            problems.extend(FieldProblem(f"{prefix}.turns{p.field[len('messages'):]}",
                                         p.reason) for p in exc.problems)
            continue
        started = _aware(session.started_at)
        user = None
        if session.user is not None:
            try:
                user = person_key(session.user, "user")
            except InvalidInputError as exc:
                problems.extend(FieldProblem(f"{prefix}.{p.field}", p.reason)
                                for p in exc.problems)
                continue
        names = list(dict.fromkeys(m.name for m in messages if m.name))
        out.append(CheckedSession(key=key, started_at=started, title=session.title,
                                  messages=messages, participants=names[:20], user=user))
    if problems:
        raise InvalidInputError(problems)
    return out


def _content(session: HistorySession) -> str:
    digest = hashlib.sha256()
    for turn in session.turns:
        digest.update(json.dumps([turn.role, turn.name, turn.content], ensure_ascii=False
                                 ).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def session_from(raw: Mapping[str, Any]) -> HistorySession:
    """A session from its JSON form: ``{"key"?, "started_at", "title"?, "user"?, "turns":
    [{"role", "content", "name"?, "user"?, "at"?, "metadata"?}]}``."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError.single("session", "must be an object")
    problems: list[FieldProblem] = []
    unknown = set(raw) - {"key", "started_at", "title", "turns", "user"}
    problems.extend(FieldProblem(name, "unknown field") for name in sorted(unknown))
    started = _time(raw.get("started_at"), "started_at", problems, required=True)
    key = raw.get("key")
    if key is not None and not isinstance(key, str):
        problems.append(FieldProblem("key", "must be a string"))
    title = raw.get("title")
    if title is not None and not isinstance(title, str):
        problems.append(FieldProblem("title", "must be a string"))
    turns_raw = raw.get("turns")
    turns: list[HistoryTurn] = []
    if isinstance(turns_raw, str) or not isinstance(turns_raw, Sequence):
        problems.append(FieldProblem("turns", "must be a list of turns"))
    else:
        for i, turn in enumerate(turns_raw):
            if not isinstance(turn, Mapping):
                problems.append(FieldProblem(f"turns[{i}]", "must be an object"))
                continue
            extra = set(turn) - set(TURN_FIELDS)
            problems.extend(FieldProblem(f"turns[{i}].{n}", "unknown field") for n in sorted(extra))
            metadata = turn.get("metadata", {})
            if not isinstance(metadata, Mapping):
                problems.append(FieldProblem(f"turns[{i}].metadata", "must be an object"))
                metadata = {}
            turns.append(HistoryTurn(
                role=turn.get("role"), content=turn.get("content"),  # type: ignore[arg-type]
                name=turn.get("name"), metadata=metadata, user=turn.get("user"),
                at=_time(turn.get("at"), f"turns[{i}].at", problems)))
    if problems:
        raise InvalidInputError(problems)
    assert started is not None
    user = raw.get("user")
    if user is not None and not isinstance(user, str):
        problems.append(FieldProblem("user", "must be a string"))
    return HistorySession(key=key, started_at=started, title=title, turns=turns, user=user)


def _time(value: object, name: str, problems: list[FieldProblem], *,
          required: bool = False) -> datetime | None:
    if value is None:
        if required:
            problems.append(FieldProblem(name, "missing"))
        return None
    return check_time(value, name, problems)
