"""A deterministic stand-in for an embedding model, for pure unit tests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ..embeddings.base import Vector, normalize


class FakeEmbedder:
    """Deterministic pseudo-embeddings from a hash of the text.

    For pure unit tests only: similar texts are NOT close.  Thresholds and ranking are
    tested with the real bundled model.  ``calls`` counts texts actually embedded.
    """

    def __init__(self, dimension: int = 384, model_name: str = "fake-hash-embedder") -> None:
        self._dimension = dimension
        self._model_name = model_name
        self.calls = 0

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def dimension(self) -> int:
        return self._dimension

    def vector(self, text: str) -> Vector:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        return normalize(rng.standard_normal((1, self._dimension)))[0]

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += len(texts)
        return [self.vector(t) for t in texts]
