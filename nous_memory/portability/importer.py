"""Import: an export file read into the same or another agent, all or nothing.

Each row line is checked by its table's typed definition (``db/models.py``) and copied,
a few hundred at a time, into a staging table that has the real table's CHECK
constraints, so a bad line is named by its number while the file streams through.  Only
when the trailer has confirmed the counts and the checksum are the staged rows compared
with what the agent already has and inserted, in one transaction: a bad, truncated or
conflicting file imports nothing.

Rows keep their ids: memory ids are UUIDs scoped by agent, and the ids of the log tables
(events, summaries, analyses) are kept too, their sequences moved past them, so the
supersession links, summary chains and watermarks of the file stay true under any agent
id.  A row the agent already has with the same values is skipped (importing twice
changes nothing); one it has with other values refuses the import (``ImportConflictError``
names the lines).  Pending work goes in as new pending work unless the agent already
has an item for the same task, memory and key.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, BinaryIO

from ..db import Connection, Database
from ..db.bulk import (
    advance_identity,
    copy_to_stage,
    create_stage,
    differing_lines,
    insert_absent,
    load_present,
    present_count,
    repeated_key,
)
from ..errors import ConflictError, FieldProblem, InvalidInputError
from ..memories.kinds import parse_agent_id
from .lines import (
    END_KEY,
    MAX_LINE_BYTES,
    ExportFileError,
    ExportHeader,
    ExportTrailer,
    TruncatedExportError,
    new_checksum,
    numbered_lines,
    parse_header,
    parse_json,
    parse_trailer,
    row_values,
)
from .reports import ImportSummary, StoreFacts
from .tables import CARRIED, CARRIED_BY_NAME, EXCLUDED, Carried

BATCH_ROWS = 500
_ARGUMENT = re.compile(r"query argument \$(\d+)\b.*?(?:\(([^()]*)\))?$")
CONFLICTS_SHOWN = 5


class ImportConflictError(ConflictError):
    """The agent already has rows with the same keys and other values; nothing was
    imported.  ``lines`` are the first such lines of the file."""

    def __init__(self, table: str, lines: list[int]) -> None:
        self.table, self.lines = table, lines
        shown = ", ".join(map(str, lines))
        super().__init__(
            f"the agent already has {table} rows with the same keys and other values "
            f"(lines {shown}{', ...' if len(lines) >= CONFLICTS_SHOWN else ''}); nothing "
            "was imported. Import into a new agent id, or forget the agent first")


async def file_chunks(source: BinaryIO, size: int = 1024 * 1024) -> AsyncIterator[bytes]:
    """A binary file object's bytes in chunks (blocking reads go to a thread)."""
    while chunk := await asyncio.to_thread(source.read, size):
        yield chunk


class Importer:
    def __init__(self, db: Database, facts: StoreFacts) -> None:
        self._db = db
        self._schema_version = facts.schema_version
        self._model = facts.embedding_model
        self._dim = facts.embedding_dim

    async def run(self, source: AsyncIterable[bytes] | BinaryIO, *,
                  agent_id: str | None = None, allow_other_model: bool = False,
                  dry_run: bool = False,
                  max_line_bytes: int = MAX_LINE_BYTES) -> ImportSummary:
        """Read ``source`` (byte chunks, or a binary file) into ``agent_id`` (default: the
        agent it was exported from).  ``dry_run``: do all of it in a transaction that is
        rolled back, so the summary (or the error) is exactly what an import would give."""
        chunks = source if isinstance(source, AsyncIterable) else file_chunks(source)
        lines = numbered_lines(chunks, max_line_bytes=max_line_bytes)
        try:
            first = await anext(lines, None)
            if first is None:
                raise TruncatedExportError(1, "the file is empty")
            header = parse_header(*first)
            self._check_header(header, allow_other_model)
            agent = parse_agent_id(header.agent_id if agent_id is None else agent_id)
            checksum = new_checksum()
            checksum.update(first[1])
            transaction = self._db.rehearsal() if dry_run else self._db.transaction()
            async with transaction as conn:
                staging = _Staging(conn, agent, self._dim)  # temporary tables only
                trailer, last = await staging.read(lines, checksum)
                _check_trailer(trailer, last, staging, checksum.hexdigest())
                # the agent's lock once the whole file is in: a slow upload holds nothing
                # the agent's other writers (and the worker) wait for
                await conn.execute("portability_lock_agent", agent)
                return await self._merge(conn, staging, header, agent)
        finally:
            await lines.aclose()

    def _check_header(self, header: ExportHeader, allow_other_model: bool) -> None:
        if header.schema_version > self._schema_version:
            raise ExportFileError(1, f"exported from schema version {header.schema_version}, "
                                     f"newer than this database's ({self._schema_version}); "
                                     "upgrade nous-memory", table="header",
                                  column="schema_version")
        if header.embedding_dim != self._dim:
            raise ExportFileError(1, f"the file's vectors have {header.embedding_dim} "
                                     f"dimensions, this store's {self._dim}; import into a "
                                     "store of the same dimension", table="header",
                                  column="embedding_dim")
        other = header.embedding_model not in (None, self._model)
        if other and not allow_other_model:
            raise ExportFileError(1, f"the file's vectors were made by "
                                     f"{header.embedding_model}, this store uses "
                                     f"{self._model}; import with allow_other_model "
                                     "(--reembed) to keep them until the housekeeping job "
                                     "re-embeds them", table="header",
                                  column="embedding_model")

    async def _merge(self, conn: Connection, staging: _Staging, header: ExportHeader,
                     agent: str) -> ImportSummary:
        staged = [c for c in CARRIED if c.table in staging.created]
        for carried in staged:
            shape, match = carried.shape, carried.match_columns
            repeated = await repeated_key(conn, shape, match)
            if repeated is not None:
                raise ExportFileError(repeated[1], f"repeats the key of line {repeated[0]}",
                                      table=carried.table)
            await load_present(conn, shape, agent, match)
            if carried.compare:
                differing = await differing_lines(conn, shape, agent, match,
                                                  carried.compared_columns, CONFLICTS_SHOWN)
                if differing:
                    raise ImportConflictError(carried.table, differing)
        inserted: dict[str, int] = {}
        identical: dict[str, int] = {}
        for carried in staged:
            shape, match = carried.shape, carried.match_columns
            identical[carried.table] = await present_count(conn, shape, agent, match)
            try:
                inserted[carried.table] = await insert_absent(
                    conn, shape, agent, match, carried.carried_columns)
            except InvalidInputError as exc:  # a reference to a row the file lacks
                raise InvalidInputError([FieldProblem(f"{carried.table}.{p.field}", p.reason)
                                         for p in exc.problems]) from exc
            if shape.identity in carried.carried_columns:
                await advance_identity(conn, shape)
        pending = 0
        if header.embedding_model != self._model:
            pending = await conn.fetchval("portability_other_model_rows", agent, self._model)
        return ImportSummary(agent_id=agent, source_agent_id=header.agent_id,
                             rows=sum(staging.counts.values()), inserted=inserted,
                             identical=identical, embedding_model=header.embedding_model,
                             reembed_pending=pending)


class _Staging:
    """Row lines checked and copied into staging tables, a batch per table at a time."""

    def __init__(self, conn: Connection, agent: str, dim: int) -> None:
        self._conn, self._agent, self._dim = conn, agent, dim
        self.created: set[str] = set()
        self.counts: Counter[str] = Counter()
        self._batches: dict[str, list[tuple[Any, ...]]] = {}
        self.trailer_line = 0

    async def read(self, lines: AsyncIterator[tuple[int, bytes]], checksum: Any
                   ) -> tuple[ExportTrailer | None, int]:
        """Stage every row line; the trailer (None if the file has none) and the number
        of the last line read."""
        trailer: ExportTrailer | None = None
        number = 1
        async for number, raw in lines:
            if trailer is not None:
                if raw.strip():
                    raise ExportFileError(number, "text after the trailer line")
                continue
            value = parse_json(number, raw)
            if END_KEY in value:
                if set(value) != {END_KEY}:
                    raise ExportFileError(number, f'the trailer is {{"{END_KEY}": {{...}}}}')
                trailer = parse_trailer(number, value)
                self.trailer_line = number
                continue
            checksum.update(raw)
            await self._add(number, value)
        for table in list(self._batches):
            await self._flush(table)
        return trailer, number

    async def _add(self, number: int, value: dict[str, Any]) -> None:
        if set(value) != {"table", "row"}:
            raise ExportFileError(number, 'a row line is {"table": NAME, "row": {...}}')
        table = value["table"]
        carried = CARRIED_BY_NAME.get(table) if isinstance(table, str) else None
        if carried is None:
            reason = (f"exports do not carry {table} ({EXCLUDED[table]})"
                      if isinstance(table, str) and table in EXCLUDED
                      else f"unknown table {table!r}")
            raise ExportFileError(number, reason)
        row = row_values(carried.shape, value["row"], agent_id=self._agent, dim=self._dim,
                         number=number)
        batch = self._batches.setdefault(table, [])
        batch.append((*row, number))
        self.counts[table] += 1
        if len(batch) >= BATCH_ROWS:
            await self._flush(table)

    async def _flush(self, table: str) -> None:
        rows = self._batches.pop(table, [])
        if not rows:
            return
        carried: Carried = CARRIED_BY_NAME[table]
        if table not in self.created:
            await create_stage(self._conn, carried.shape)
            self.created.add(table)
        try:
            async with self._conn.savepoint():
                await copy_to_stage(self._conn, carried.shape, rows)
        except InvalidInputError:
            await self._find_bad_row(carried, rows)
            raise

    async def _find_bad_row(self, carried: Carried, rows: list[tuple[Any, ...]]) -> None:
        """Copy the batch row by row to name the line a constraint refused."""
        for row in rows:
            try:
                async with self._conn.savepoint():
                    await copy_to_stage(self._conn, carried.shape, [row])
            except InvalidInputError as exc:
                reason = exc.reason.replace(f"stage_{carried.table}", carried.table)
                column = exc.field if exc.field in carried.shape.columns else None
                argument = _ARGUMENT.search(reason)  # a value the driver could not send
                if argument and int(argument.group(1)) <= len(carried.shape.columns):
                    column = carried.shape.columns[int(argument.group(1)) - 1]
                    reason = argument.group(2) or reason
                raise ExportFileError(row[-1], reason, table=carried.table,
                                      column=column) from exc


def _check_trailer(trailer: ExportTrailer | None, last: int, staging: _Staging,
                   sha256: str) -> None:
    if trailer is None:
        raise TruncatedExportError(last + 1, "the file ends without its trailer line: it "
                                             "is truncated")
    where, counts = staging.trailer_line, staging.counts
    found = {t: n for t, n in counts.items() if n}
    expected = {t: n for t, n in trailer.counts.items() if n}
    if found != expected or trailer.rows != sum(counts.values()):
        table = next(t for t in sorted({*found, *expected})
                     if found.get(t, 0) != expected.get(t, 0)) if found != expected else None
        detail = (f"{table}: {found.get(table, 0)} rows, the trailer says "
                  f"{expected.get(table, 0)}" if table else
                  f"{sum(counts.values())} rows, the trailer says {trailer.rows}")
        raise TruncatedExportError(where, f"row counts do not match the trailer ({detail})")
    if trailer.sha256 != sha256:
        raise TruncatedExportError(where, "the checksum does not match the trailer: the "
                                          "file was changed or damaged")
