"""Refs: the short names a context gives memories (``fact:1a2b3c4d``, and
``episode:1a2b3c4d#c3`` for a transcript chunk), made and read here only.

A model quotes a ref back to ``expand``; eight hex digits of the id keep a context
short and are almost always unique within one agent (``expand`` says when a prefix
matches several memories, and a full id always works).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from uuid import UUID

from ..errors import InvalidInputError
from ..memories.kinds import Kind
from ..memories.params import parse_memory_id

REF_HEX = 8
_REF = re.compile(r"^(?P<kind>[a-z]+):(?P<hex>[0-9a-f]{4,32})(?:#c(?P<chunk>\d{1,9}))?$")


def make_ref(kind: Kind | str, memory_id: UUID, chunk_no: int | None = None) -> str:
    base = f"{Kind(kind).value}:{memory_id.hex[:REF_HEX]}"
    return base if chunk_no is None else f"{base}#c{chunk_no}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What ``expand`` was asked for: a full id, or a kind and an id prefix."""

    memory_id: UUID | None = None
    kind: Kind | None = None
    prefix: str | None = None
    chunk_no: int | None = None

    @property
    def ref(self) -> str:
        return f"{self.kind}:{self.prefix}"

    def id_range(self) -> tuple[UUID, UUID]:
        """The ids a prefix can stand for, lowest and highest."""
        assert self.prefix is not None
        return UUID(self.prefix.ljust(32, "0")), UUID(self.prefix.ljust(32, "f"))


def parse_target(value: object) -> Target:
    """A memory id or a ref; an unknown kind is an input error naming ``memory_id``."""
    text = str(value).strip()
    match = _REF.match(text.lower())
    if match is None:
        return Target(memory_id=parse_memory_id(text))
    try:
        kind = Kind(match["kind"])
    except ValueError:
        raise InvalidInputError.single(
            "memory_id", "unknown kind in the ref; a ref is kind:hex, e.g. fact:1a2b3c4d"
        ) from None
    chunk = match["chunk"]
    return Target(kind=kind, prefix=match["hex"],
                  chunk_no=None if chunk is None else int(chunk))
