"""The one check every embedding passes before it is stored or searched with."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from nous_memory.embeddings import Vector, embed_checked
from nous_memory.errors import EmbeddingMismatchError


class _Embedder:
    model_name = "test-model"
    dimension = 4

    def __init__(self, size: int) -> None:
        self._size = size

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [np.ones(self._size, dtype=np.float32) for _ in texts]


async def test_vectors_of_the_declared_size_pass() -> None:
    vectors = await embed_checked(_Embedder(4), ["a", "b"])
    assert [v.shape for v in vectors] == [(4,), (4,)]


async def test_a_vector_of_another_size_is_refused() -> None:
    with pytest.raises(EmbeddingMismatchError, match="test-model returned 3 dimensions"):
        await embed_checked(_Embedder(3), ["a"])
