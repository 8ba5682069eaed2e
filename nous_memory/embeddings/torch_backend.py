"""The bundled model (or another sentence-transformers folder) on PyTorch.

Selectable with ``NOUS_MEMORY_EMBEDDING_BACKEND=torch``; ONNX Runtime is the default
(``onnx_backend``).  torch is imported on the first encode, never before.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import Vector, normalize
from .compute import ComputeQueue, default_threads
from .model_files import ModelFiles

_models: dict[str, Any] = {}
_queues: dict[str, ComputeQueue] = {}
_lock = threading.Lock()


def _load_model(path: str, threads: int) -> Any:
    """Load a sentence-transformers model once per process (offline: nothing is fetched)."""
    with _lock:
        model = _models.get(path)
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import torch
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            torch.set_num_threads(threads)  # process-wide: the model is torch's only user
            # a local folder loads in a blink: no progress bar on the caller's stderr (the
            # host's own setting is put back)
            shown = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            try:
                model = SentenceTransformer(path, device="cpu")
            finally:
                if shown:
                    hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
            _models[path] = model
        return model


class SentenceTransformerEmbedder:
    """A local sentence-transformers model on torch; the bundled all-MiniLM-L6-v2 by default."""

    def __init__(self, model_path: str | Path | None = None, *, batch_size: int = 64,
                 threads: int | None = None) -> None:
        self._files = ModelFiles.resolve(model_path)
        self._path = str(self._files.path)
        self._batch_size = batch_size
        self._threads = threads or default_threads()
        self._dimension = self._files.dimension
        # one queue per model folder and settings: every store of the process shares it
        with _lock:
            self._queue = _queues.setdefault(f"{self._path}|{batch_size}", ComputeQueue(
                self.encode, name=f"torch-{Path(self._path).name}"))

    @property
    def model_name(self) -> str:
        return self._files.name

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            dim = _load_model(self._path, self._threads).get_sentence_embedding_dimension()
            self._dimension = int(dim)
        return self._dimension

    def warm_up(self) -> None:
        """Load the model now (it otherwise loads on the first embed)."""
        _load_model(self._path, self._threads)

    def encode(self, texts: Sequence[str]) -> list[Vector]:
        """Blocking encode, on the caller's thread (``embed`` schedules it)."""
        if not texts:
            return []
        model = _load_model(self._path, self._threads)
        matrix = model.encode(list(texts), batch_size=self._batch_size,
                              normalize_embeddings=True, convert_to_numpy=True,
                              show_progress_bar=False)
        return normalize(matrix)

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return await self._queue.run(texts)
