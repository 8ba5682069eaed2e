"""The export file: JSON Lines with a header, one line per row, and a trailer.

Line 1 is ``{"nous_memory_export": {header}}``; then ``{"table": NAME, "row": {...}}``
per row, tables in dependency order; the last line is ``{"end": {trailer}}`` with the
row counts and the SHA-256 of every line before it, so a truncated, reordered or edited
file is refused instead of half imported.  docs/export-format.md is the reference.

Values are JSON as PostgreSQL would print them, except: bytea columns are base64, and
vector columns are base64 of little-endian float32 (exact, and a quarter of the size of
decimal text).  Rows carry no ``agent_id``: the header names the agent once, and an
import writes the rows as the agent it is told to.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import AsyncGenerator, AsyncIterable, Mapping
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import numpy as np
from pgvector import Vector as PgVector
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..db.bulk import AGENT, TableShape
from ..errors import FieldProblem, InvalidInputError

FORMAT = "nous-memory-export"
FORMAT_VERSION = 1
HEADER_KEY, END_KEY = "nous_memory_export", "end"
MAX_LINE_BYTES = 256 * 1024 * 1024
"""Longest line an import reads (a row with a whole archived transcript can be large)."""


class ExportFileError(InvalidInputError):
    """The file is not a valid export: names the line, the table and column where known,
    and the reason.  Nothing was imported."""

    def __init__(self, line: int, reason: str, *, table: str | None = None,
                 column: str | None = None) -> None:
        self.line, self.table, self.column = line, table, column
        where = f"line {line}" + (f" ({table}.{column})" if table and column
                                  else f" ({table})" if table else "")
        super().__init__(FieldProblem(where, reason))


class TruncatedExportError(ExportFileError):
    """The file ends early or its trailer does not match what came before it."""


class ExportHeader(BaseModel):
    """What the file is and where it came from (line 1)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["nous-memory-export"] = "nous-memory-export"
    version: int = Field(ge=1)
    schema_version: int = Field(ge=1)
    agent_id: str
    exported_at: datetime
    embedding_model: str | None
    embedding_dim: int = Field(ge=1)
    tables: list[str]
    excluded: dict[str, str] = Field(default_factory=dict)
    # a person's export (people/): only the memories that are theirs or that they were in
    person: str | None = None


class ExportTrailer(BaseModel):
    """Row counts per table and the SHA-256 of every line before this one (last line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rows: int = Field(ge=0)
    counts: dict[str, int]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


# ---------------------------------------------------------------------- writing


def _plain(value: Any) -> Any:
    """JSON for the values asyncpg returns that json does not know."""
    if isinstance(value, PgVector):
        value = value.to_numpy()
    if isinstance(value, np.ndarray):
        return base64.b64encode(value.astype("<f4").tobytes()).decode("ascii")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} to an export")


def _line(obj: Mapping[str, Any]) -> bytes:
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_plain,
                      allow_nan=False)
    return text.encode("utf-8") + b"\n"


def header_line(header: ExportHeader) -> bytes:
    return _line({HEADER_KEY: header.model_dump(mode="json")})


def row_line(table: str, record: Mapping[str, Any]) -> bytes:
    return _line({"table": table, "row": {k: v for k, v in record.items() if k != AGENT}})


def trailer_line(trailer: ExportTrailer) -> bytes:
    return _line({END_KEY: trailer.model_dump(mode="json")})


def new_checksum() -> Any:
    return hashlib.sha256()


# ---------------------------------------------------------------------- reading


async def numbered_lines(chunks: AsyncIterable[bytes], *,
                         max_line_bytes: int = MAX_LINE_BYTES
                         ) -> AsyncGenerator[tuple[int, bytes]]:
    """(line number from 1, line with its newline) from byte chunks of any size; a
    line longer than ``max_line_bytes`` is refused before it is held whole."""
    pending = bytearray()
    number = 0
    searched = 0  # pending[:searched] holds no newline: a long line is scanned once
    async for chunk in chunks:
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", max(start, searched))) >= 0:
            number += 1
            yield number, bytes(pending[start:end + 1])
            start = end + 1
        del pending[:start]
        searched = len(pending)
        if len(pending) > max_line_bytes:
            raise ExportFileError(number + 1, f"line longer than {max_line_bytes} bytes")
    if pending:
        yield number + 1, bytes(pending)


def parse_json(number: int, line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except UnicodeDecodeError:
        raise ExportFileError(number, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise ExportFileError(number, f"not valid JSON: {exc.msg} at column {exc.colno}"
                              ) from None
    except RecursionError:
        raise ExportFileError(number, "JSON nested too deeply") from None
    if not isinstance(value, dict):
        raise ExportFileError(number, "expected a JSON object")
    return value


def parse_header(number: int, line: bytes) -> ExportHeader:
    value = parse_json(number, line)
    if set(value) != {HEADER_KEY}:
        raise ExportFileError(number, f"not a nous-memory export: the first line must be "
                                      f'{{"{HEADER_KEY}": {{...}}}}')
    header: ExportHeader = _validated(ExportHeader, value[HEADER_KEY], number, "header")
    if header.version > FORMAT_VERSION:
        raise ExportFileError(number, f"format version {header.version} is newer than this "
                                      f"version of nous-memory reads ({FORMAT_VERSION})",
                              table="header", column="version")
    return header


def parse_trailer(number: int, value: Mapping[str, Any]) -> ExportTrailer:
    trailer: ExportTrailer = _validated(ExportTrailer, value[END_KEY], number, "end")
    return trailer


def _validated(model: type[BaseModel], value: Any, number: int, table: str) -> Any:
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        column = ".".join(str(p) for p in error["loc"]) or None
        raise ExportFileError(number, error["msg"], table=table, column=column) from None


def row_values(shape: TableShape, row: Any, *, agent_id: str, dim: int,
               number: int) -> tuple[Any, ...]:
    """One row checked by its table's typed definition (``db/models.py``, through
    ``shape.checker``: the same fields), as values in ``shape.columns`` order for the
    staging table."""
    table = shape.name
    if not isinstance(row, dict):
        raise ExportFileError(number, '"row" must be a JSON object', table=table)
    unknown = sorted(set(row) - set(shape.columns) | ({AGENT} & set(row)))
    if unknown:
        raise ExportFileError(number, "not a column this version exports", table=table,
                              column=unknown[0])
    data: dict[str, Any] = {shape.attributes[AGENT]: agent_id}
    for column, value in row.items():
        if value is not None and column in shape.vectors:
            value = _vector(value, dim, number, table, column)
        elif value is not None and column in shape.binaries:
            value = _base64(value, number, table, column)
        data[shape.attributes[column]] = value
    try:
        typed = shape.checker.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        attribute = str(error["loc"][0]) if error["loc"] else ""
        column = next((c for c, a in shape.attributes.items() if a == attribute), attribute)
        raise ExportFileError(number, error["msg"], table=table, column=column) from None
    values = tuple(getattr(typed, shape.attributes[c]) for c in shape.columns)
    for column, value in zip(shape.columns, values, strict=True):
        if isinstance(value, datetime) and value.tzinfo is None:
            raise ExportFileError(number, "a time without a UTC offset", table=table,
                                  column=column)
    return values


def _base64(value: Any, number: int, table: str, column: str) -> bytes:
    if not isinstance(value, str):
        raise ExportFileError(number, "expected base64 text", table=table, column=column)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ExportFileError(number, "not valid base64", table=table, column=column) from None


def _vector(value: Any, dim: int, number: int, table: str, column: str) -> np.ndarray[Any, Any]:
    raw = _base64(value, number, table, column)
    if len(raw) != 4 * dim:
        raise ExportFileError(number, f"a vector of {len(raw) / 4:g} float32 values, "
                                      f"expected {dim}", table=table, column=column)
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if not np.isfinite(vector).all():
        raise ExportFileError(number, "a vector with a value that is not finite",
                              table=table, column=column)
    return vector
