"""The embedder protocol and what every embedder shares.

Vectors are unit-length float32 arrays, so cosine similarity is a dot product and the
HNSW cosine index sees comparable scores from every embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..errors import EmbeddingMismatchError

Vector = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[Vector]: ...


def normalize(matrix: npt.ArrayLike) -> list[Vector]:
    arr = np.asarray(matrix, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"expected a 2-d array of embeddings, got shape {arr.shape}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return list(arr / norms)


async def embed_checked(embedder: Embedder, texts: Sequence[str]) -> list[Vector]:
    """``embedder.embed``, refusing vectors of another size than the embedder declares
    (a model swapped under a store must fail here, not as a database error later)."""
    vectors = await embedder.embed(texts)
    for vector in vectors:
        if vector.shape != (embedder.dimension,):
            raise EmbeddingMismatchError(
                f"{embedder.model_name} returned {vector.shape[0]} dimensions; "
                f"the store expects {embedder.dimension}")
    return vectors
