"""Any OpenAI-compatible embeddings endpoint through the ``openai`` client.

A remote model does its work elsewhere, so it needs no local scheduling; requests go out
in batches of ``batch_size`` texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigurationError, EmbeddingMismatchError
from .base import Vector, normalize

_OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint through the ``openai`` client."""

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 dimension: int | None = None, batch_size: int = 256) -> None:
        from openai import AsyncOpenAI

        dim = dimension or _OPENAI_DIMENSIONS.get(model)
        if dim is None:
            raise ConfigurationError(
                f"unknown dimension for embedding model {model!r}; pass dimension=")
        self._model = model
        self._dimension = dim
        self._request_dims = dimension  # only sent when asked for (shortened embeddings)
        self._batch_size = batch_size
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key or "unused")

    @property
    def model_name(self) -> str:
        return self._model

    async def aclose(self) -> None:
        """Close the HTTP connections (the store does this for an embedder it made)."""
        await self._client.close()

    @property
    def dimension(self) -> int:
        return self._dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start:start + self._batch_size])
            kwargs: dict[str, Any] = {}
            if self._request_dims is not None:
                kwargs["dimensions"] = self._request_dims
            response = await self._client.embeddings.create(model=self._model, input=batch,
                                                            **kwargs)
            rows = sorted(response.data, key=lambda item: item.index)
            out.extend(normalize([row.embedding for row in rows]))
        for vector in out:
            if vector.shape[0] != self._dimension:
                raise EmbeddingMismatchError(
                    f"{self._model} returned {vector.shape[0]} dimensions, "
                    f"expected {self._dimension}")
        return out
