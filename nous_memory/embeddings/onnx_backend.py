"""The bundled model (or another sentence-transformers BERT folder) on ONNX Runtime.

The default local backend: the graph exported once from the folder's own weights
(``onnx_export``), the folder's fast tokenizer, mean (or CLS) pooling and
normalisation in NumPy.  No torch at run time, so a process that embeds starts in a
fraction of a second and a query embeds in a few milliseconds.  Its vectors agree with
the torch backend's (cosine >= 0.999, tested), so both record the same model name and
a database embedded with one needs no re-embedding with the other.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigurationError
from .base import Vector, normalize
from .compute import ComputeQueue, default_threads
from .model_files import ModelFiles
from .onnx_export import ensure_export

# The most token positions one model run may hold.  Attention memory grows with batch x
# length^2, and ONNX Runtime's arena keeps its peak for the life of the process, so a
# batch is cut by tokens as well as by count (16 texts at the 256-token window).
BATCH_TOKENS = 4_096

_sessions: dict[tuple[str, int], tuple[Any, Any]] = {}
_queues: dict[str, ComputeQueue] = {}
_lock = threading.Lock()


def _open(files: ModelFiles, cache_dir: Path, threads: int) -> tuple[Any, Any]:
    """(session, tokenizer) of one model folder, once per process."""
    key = (str(files.path), threads)
    found = _sessions.get(key)
    if found is not None:
        return found
    graph = ensure_export(files, cache_dir)  # outside _lock: exporters meet at a file lock
    with _lock:
        found = _sessions.get(key)
        if found is None:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            # grow the arena by what a run asks for, not in doubling chunks
            options.add_session_config_entry("session.arena_extend_strategy",
                                             "kSameAsRequested")
            # no busy-waiting for the next run: a spinning pool thread keeps a core busy
            # after each query (2 cores: about 40 ms of CPU in the 200 ms after one query
            # embedding, 0 without), just when the recall that follows needs it for
            # PostgreSQL (bench/context_latency.py)
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(str(graph), options,
                                           providers=["CPUExecutionProvider"])
            tokenizer = Tokenizer.from_file(str(files.path / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=files.max_seq_length)
            tokenizer.no_padding()  # each batch is padded to its own longest text
            found = _sessions[key] = (session, tokenizer)
        return found


class OnnxEmbedder:
    """A local sentence-transformers model on ONNX Runtime (the default local backend)."""

    def __init__(self, model_path: str | Path | None = None, *, cache_dir: Path,
                 batch_size: int = 64, threads: int | None = None) -> None:
        self._files = ModelFiles.resolve(model_path)
        problem = self._files.onnx_problem()
        if problem is not None:
            raise ConfigurationError(
                f"the ONNX backend cannot run the model in {self._files.path}: {problem}; "
                "use NOUS_MEMORY_EMBEDDING_BACKEND=torch for it")
        self._cache_dir = cache_dir
        self._batch_size = batch_size
        self._threads = threads or default_threads()
        self._dimension = self._files.dimension
        # one queue per model folder and settings: every store of the process shares it
        key = f"{self._files.path}|{self._threads}|{batch_size}"
        with _lock:
            self._queue = _queues.setdefault(key, ComputeQueue(
                self.encode, name=f"onnx-{self._files.path.name}"))

    @property
    def model_name(self) -> str:
        return self._files.name

    @property
    def dimension(self) -> int:
        if self._dimension is None:  # a folder without a pooling config: ask the model once
            (vector,) = self.encode(["dimension"])
            self._dimension = int(vector.shape[0])
        return self._dimension

    def warm_up(self) -> None:
        """Export if need be and open the session now (it otherwise opens on first use)."""
        _open(self._files, self._cache_dir, self._threads)

    def encode(self, texts: Sequence[str]) -> list[Vector]:
        """Blocking encode, on the caller's thread (``embed`` schedules it).  Texts are
        sorted by length so each batch pads to similar lengths, then put back in order."""
        if not texts:
            return []
        session, tokenizer = _open(self._files, self._cache_dir, self._threads)
        encodings = tokenizer.encode_batch(list(texts))
        out: list[Vector] = [np.empty(0, dtype=np.float32)] * len(texts)
        for chosen in self._batches([len(e.ids) for e in encodings]):
            vectors = self._run(session, [encodings[i] for i in chosen])
            for i, vector in zip(chosen, vectors, strict=True):
                out[i] = vector
        return out

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices, shortest first, in batches of at most ``batch_size`` texts and
        ``BATCH_TOKENS`` padded token positions."""
        batches: list[list[int]] = []
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            # sorted ascending, so the newest text is the batch's longest
            if batches and len(batches[-1]) < self._batch_size and \
                    (len(batches[-1]) + 1) * lengths[i] <= BATCH_TOKENS:
                batches[-1].append(i)
            else:
                batches.append([i])
        return batches

    def _run(self, session: Any, encodings: list[Any]) -> list[Vector]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, :len(encoding.ids)] = encoding.ids
            mask[row, :len(encoding.ids)] = encoding.attention_mask
        hidden: npt.NDArray[np.float32] = session.run(
            None, {"input_ids": ids, "attention_mask": mask,
                   "token_type_ids": np.zeros_like(ids)})[0]
        if self._files.pooling == "cls":
            return normalize(hidden[:, 0, :])
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize(pooled)

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return await self._queue.run(texts)
