"""Export: everything of one agent as one JSON Lines file, streamed.

The whole export reads one snapshot (a read-only repeatable-read transaction), so it is
consistent while the agent keeps being written; rows come through server-side cursors a
few hundred at a time and leave as chunks of whole lines, so an agent of any size is
never held in memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import UTC, datetime
from typing import BinaryIO

from ..db import Database
from ..db.bulk import stream_agent_rows
from ..errors import NotFoundError
from ..memories.kinds import parse_agent_id
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
from .tables import CARRIED, EXCLUDED

CHUNK_BYTES = 64 * 1024  # lines are handed on in chunks of about this size


class ExportStream:
    """The file's bytes as an async iterator of chunks (whole lines); ``summary`` is set
    once the trailer has been produced.  An unknown agent raises ``NotFoundError`` from
    the first chunk, before anything is written."""

    def __init__(self, exporter: Exporter, agent_id: str) -> None:
        self.agent_id = agent_id
        self.summary: ExportSummary | None = None
        self._lines = exporter.lines(agent_id, self)
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

    def stream(self, agent_id: str) -> ExportStream:
        return ExportStream(self, parse_agent_id(agent_id))

    async def write(self, agent_id: str, out: BinaryIO) -> ExportSummary:
        """Write the export to a binary file object (blocking writes go to a thread)."""
        stream = self.stream(agent_id)
        async for chunk in stream:
            await asyncio.to_thread(out.write, chunk)
        assert stream.summary is not None
        return stream.summary

    async def lines(self, agent: str, sink: ExportStream) -> AsyncGenerator[bytes]:
        """Every line of the file; ``sink.summary`` is set after the last one."""
        async with self._db.snapshot() as conn:
            if not await conn.fetchval("portability_agent_exists", agent):
                raise NotFoundError("agent", agent)
            checksum, size, counts = new_checksum(), 0, {}
            header = ExportHeader(
                version=FORMAT_VERSION, schema_version=self._schema_version, agent_id=agent,
                exported_at=datetime.now(UTC), embedding_model=self._model,
                embedding_dim=self._dim, tables=[c.table for c in CARRIED],
                excluded=EXCLUDED)
            line = header_line(header)
            checksum.update(line)
            size += len(line)
            yield line
            for carried in CARRIED:
                count = 0
                async for record in stream_agent_rows(conn, carried.shape, agent,
                                                      only=carried.only):
                    line = row_line(carried.table, record)
                    checksum.update(line)
                    size += len(line)
                    count += 1
                    yield line
                counts[carried.table] = count
            trailer = ExportTrailer(rows=sum(counts.values()), counts=counts,
                                    sha256=checksum.hexdigest())
            line = trailer_line(trailer)
            yield line
            summary = ExportSummary(agent_id=agent, rows=trailer.rows, counts=counts,
                                    sha256=trailer.sha256, bytes=size + len(line))
            sink.summary = summary
