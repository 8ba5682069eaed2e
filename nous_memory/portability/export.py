"""Export: everything of one agent as one JSON Lines file, streamed.

The whole export reads one snapshot (a read-only repeatable-read transaction), so it is
consistent while the agent keeps being written; rows come through server-side cursors a
few hundred at a time and leave as chunks of whole lines, so an agent of any size is
never held in memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, BinaryIO

from ..db import Database
from ..db.bulk import stream_agent_rows
from ..errors import NotFoundError
from ..memories.kinds import parse_agent_id
from ..people import person_key
from .lines import (
    FORMAT_VERSION,
    ExportHeader,
    ExportTrailer,
    header_line,
    new_checksum,
    row_line,
    trailer_line,
)
from .reports import ExportSummary, StoreFacts
from .tables import CARRIED, EXCLUDED, MEMORY_COLUMN

CHUNK_BYTES = 64 * 1024  # lines are handed on in chunks of about this size


class ExportStream:
    """The file's bytes as an async iterator of chunks (whole lines); ``summary`` is set
    once the trailer has been produced.  An unknown agent raises ``NotFoundError`` from
    the first chunk, before anything is written."""

    def __init__(self, exporter: Exporter, agent_id: str, person: str | None = None) -> None:
        self.agent_id = agent_id
        self.summary: ExportSummary | None = None
        self._lines = exporter.lines(agent_id, self, person)
        self._chunks: AsyncGenerator[bytes] = self._chunked()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def aclose(self) -> None:
        await self._chunks.aclose()

    async def _chunked(self) -> AsyncGenerator[bytes]:
        buffer = bytearray()
        try:
            async for line in self._lines:
                buffer += line
                if len(buffer) >= CHUNK_BYTES:
                    yield bytes(buffer)
                    buffer.clear()
            if buffer:
                yield bytes(buffer)
        finally:
            await self._lines.aclose()


class Exporter:
    def __init__(self, db: Database, facts: StoreFacts) -> None:
        self._db = db
        self._schema_version = facts.schema_version
        self._model = facts.embedding_model
        self._dim = facts.embedding_dim

    def stream(self, agent_id: str, user: str | None = None) -> ExportStream:
        """``user``: one person's export (people/): the memories that are theirs or that
        they were in, with what hangs on them; not the agent's shared ones."""
        return ExportStream(self, parse_agent_id(agent_id),
                            None if user is None else person_key(user, "user"))

    async def write(self, agent_id: str, out: BinaryIO, user: str | None = None
                    ) -> ExportSummary:
        """Write the export to a binary file object (blocking writes go to a thread)."""
        stream = self.stream(agent_id, user)
        async for chunk in stream:
            await asyncio.to_thread(out.write, chunk)
        assert stream.summary is not None
        return stream.summary

    async def lines(self, agent: str, sink: ExportStream, person: str | None = None
                    ) -> AsyncGenerator[bytes]:
        """Every line of the file; ``sink.summary`` is set after the last one."""
        async with self._db.snapshot() as conn:
            if not await conn.fetchval("portability_agent_exists", agent):
                raise NotFoundError("agent", agent)
            carried = list(CARRIED)
            theirs: list[Any] = []
            if person is not None:
                theirs = [r["id"] for r in await conn.fetch("person_memories", agent, person)]
                carried = [c for c in CARRIED if c.table in MEMORY_COLUMN]
            checksum, size, counts = new_checksum(), 0, {}
            header = ExportHeader(
                version=FORMAT_VERSION, schema_version=self._schema_version, agent_id=agent,
                exported_at=datetime.now(UTC), embedding_model=self._model,
                embedding_dim=self._dim, tables=[c.table for c in carried],
                excluded=EXCLUDED, person=person)
            line = header_line(header)
            checksum.update(line)
            size += len(line)
            yield line
            for table in carried:
                count = 0
                only: dict[str, Sequence[Any]] = dict(table.only)
                if person is not None:
                    only[MEMORY_COLUMN[table.table]] = theirs
                async for record in stream_agent_rows(conn, table.shape, agent, only=only):
                    line = row_line(table.table, record)
                    checksum.update(line)
                    size += len(line)
                    count += 1
                    yield line
                counts[table.table] = count
            trailer = ExportTrailer(rows=sum(counts.values()), counts=counts,
                                    sha256=checksum.hexdigest())
            line = trailer_line(trailer)
            yield line
            summary = ExportSummary(agent_id=agent, rows=trailer.rows, counts=counts,
                                    sha256=trailer.sha256, bytes=size + len(line))
            sink.summary = summary
