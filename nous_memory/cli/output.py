"""What every command module shares: the ``Output`` a handler returns, text formatting
of memories and audit events, and argument helpers that raise field-named errors.

Command modules import this one; it imports none of them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import InvalidInputError
from ..memories.records import Memory, MemoryEvent

HISTORY_VALUE_CHARS = 120


@dataclass(frozen=True)
class Output:
    """What a command prints: ``data`` with --json, ``text`` otherwise."""

    data: Any
    text: str


Command = Callable[[Any, argparse.Namespace], Awaitable[Output]]
"""A command's handler: ``set_defaults(handler=...)`` on its parser.  It gets the
``MemoryStore``, or with ``--url`` the ``AsyncMemoryClient`` (same methods and results)
when its parser also sets ``remote=True``."""


# ---------------------------------------------------------------------- formatting


def dump(memory: Memory) -> dict[str, Any]:
    return memory.model_dump(mode="json")


def stamp(value: datetime | None) -> str:
    return value.isoformat(timespec="seconds") if value else "-"


def shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def memory_line(memory: Memory) -> str:
    return f"{memory.id}  {memory.kind.value}  {memory.summary}"


def memory_text(memory: Memory) -> str:
    pairs: list[tuple[str, Any]] = [
        ("id", memory.id), ("kind", memory.kind.value), ("status", memory.status.value),
        ("summary", memory.summary), ("importance", memory.importance),
        ("tags", ", ".join(memory.tags) or "-"),
        ("version", memory.version), ("created", stamp(memory.created_at)),
        ("updated", stamp(memory.updated_at)),
    ]
    if memory.deleted_at:
        pairs.append(("deleted", stamp(memory.deleted_at)))
    detail = memory.detail.model_dump(mode="json", exclude={"kind"})
    pairs += [(key, value) for key, value in detail.items() if value not in (None, [])]
    width = max(len(key) for key, _ in pairs) + 2
    lines: list[str] = []
    for key, value in pairs:
        if isinstance(value, list):
            items = value or ["-"]
            lines.append(f"{key + ':':<{width}}{'- ' if value else ''}{items[0]}")
            lines += [f"{'':<{width}}- {item}" for item in items[1:]]
        else:
            lines.append(f"{key + ':':<{width}}{value}")
    return "\n".join(lines)


def event_text(event: MemoryEvent) -> str:
    """A heading line, then one indented line per changed field."""
    new, old = event.new_values or {}, event.old_values or {}
    lines = [f"{stamp(event.created_at)}  {event.event}  by {event.actor or '-'}"]
    for key in sorted(set(new) | set(old)):
        after = json_value(new.get(key))
        lines.append(f"    {key}: {json_value(old[key])} -> {after}" if key in old
                     else f"    {key}: {after}")
    return "\n".join(lines)


def json_value(value: Any) -> str:
    return shorten(json.dumps(value, ensure_ascii=False), HISTORY_VALUE_CHARS)


# ---------------------------------------------------------------------- arguments


def json_argument(text: str, field: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError.single(field, f"not valid JSON: {exc}") from None


# ---------------------------------------------------------------------- long-running commands


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop`` (the current item finishes) instead of killing."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # e.g. not main thread
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def add_user_option(parser: argparse.ArgumentParser, *, writes: bool = False) -> None:
    """``--user PERSON``: the command reads (or writes) for that person (people/)."""
    parser.add_argument(
        "--user", metavar="PERSON",
        help=("whose it is (a user id or a name; default: the agent's, shared with "
              "everyone)") if writes else
             ("the person asking (a user id or a name): only their memories and shared "
              "ones (default: the agent's owner, who sees everything)"))
