"""The export file's pure parts: line splitting over any chunking, the line bound, and
the value codecs (vectors and bytea as base64, checked on the way in)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from uuid import uuid4

import numpy as np
import pytest

from nous_memory.db.bulk import SHAPES
from nous_memory.portability.lines import ExportFileError, numbered_lines, row_line, row_values

DATA = b'a\nbb\n\nccc' + b"x" * 100 + b"\nlast"


async def chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 10_000])
async def test_lines_are_the_same_whatever_the_chunks(size: int) -> None:
    got = [line async for line in numbered_lines(chunks(DATA, size))]
    assert got == [(1, b"a\n"), (2, b"bb\n"), (3, b"\n"), (4, b"ccc" + b"x" * 100 + b"\n"),
                   (5, b"last")]


async def test_a_long_line_is_refused_before_it_is_held_whole() -> None:
    with pytest.raises(ExportFileError, match="line 4: line longer than 50 bytes"):
        [line async for line in numbered_lines(chunks(DATA, 8), max_line_bytes=50)]


def test_vectors_and_bytes_round_trip_exactly() -> None:
    shape = SHAPES["memories"]
    vector = np.random.default_rng(1).standard_normal(384).astype(np.float32)
    record = {"agent_id": "a", "id": uuid4(), "kind": "fact", "status": "active",
              "summary": "x", "summary_source": "template", "summary_tokens": 1,
              "embedding": vector, "embedding_model": "m", "importance": 0.1 + 0.2,
              "tags": ["t"], "version": 1, "created_at": "2026-01-01T00:00:00+00:00",
              "updated_at": "2026-01-01T00:00:00+00:00", "last_accessed_at": None,
              "access_count": 0, "deleted_at": None}
    row = json.loads(row_line("memories", record))["row"]
    assert "agent_id" not in row
    values = dict(zip(shape.columns, row_values(shape, row, agent_id="b", dim=384, number=2),
                      strict=True))
    assert values["agent_id"] == "b" and values["importance"] == 0.1 + 0.2
    assert np.array_equal(values["embedding"], vector)
    with pytest.raises(ExportFileError, match=r"line 2 \(memories.embedding\).*expected 8"):
        row_values(shape, row, agent_id="b", dim=8, number=2)
    with pytest.raises(ExportFileError, match="without a UTC offset"):
        row_values(shape, {**row, "created_at": "2026-01-01T00:00:00"}, agent_id="b",
                   dim=384, number=2)
    facts = SHAPES["facts"]
    hashed = {"memory_id": str(uuid4()), "kind": "fact", "content": "c",
              "source_kind": "user_stated", "normalized_hash": "not base64!",
              "confirmation_count": 0}
    with pytest.raises(ExportFileError, match=r"facts.normalized_hash\): not valid base64"):
        row_values(facts, hashed, agent_id="b", dim=384, number=3)
