"""Query-first scheduling of a local model: one thread per model, interactive first.

A local model (torch or ONNX Runtime) keeps every core busy while it encodes, so two
encodes at once only thrash.  Every encode of one model therefore runs on that model's
own thread, one request at a time, from a priority queue:

- a request of at most ``interactive_max`` texts and ``interactive_chars`` characters
  (a query, a single write, a fact) is interactive and goes before any bulk work;
- a larger request (``remember_many``, an episode's chunks at close, re-embedding) is
  bulk: sorted by length (so each slice pads to similar lengths) and cut into slices
  of at most ``slice_texts`` texts and ``slice_chars`` characters of work; it queues its
  next slice only when the previous one is done, so an interactive request waits for at
  most the one slice in progress, and two bulk jobs share the thread slice by slice.

A slice is bounded in characters because the model's cost is: a text at the bundled
model's 256-token window costs about twenty short ones (bench/embeddings.py), and a
text longer than the window costs no more than one that fills it (it is truncated).
Bounded slices also bound the model's working memory.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from .. import telemetry
from .base import Vector

INTERACTIVE_MAX_TEXTS = 8
INTERACTIVE_MAX_CHARS = 2_400  # two window-length texts
SLICE_TEXTS = 64
SLICE_CHARS = 600  # half a window-length text: ~25 ms of the bundled model on 2 cores
WINDOW_CHARS = 1_200  # past the 256-token window (~1,000+ characters) a text costs no more
MAX_THREADS = 4

Encode = Callable[[list[str]], list[Vector]]
_Job = tuple[int, int, list[str], "Future[list[Vector]]", float]  # ..., queued at
INTERACTIVE, BULK = 0, 1


def default_threads(cores: int | None = None) -> int:
    """Intra-op threads for a local model: one per core this process may use, at most 4.

    Measured on the bundled model on a 2-core machine (bench/embeddings.py, ONNX
    Runtime): two threads embed a query in 3.1 ms against 5.4 ms on one, and batches at
    166 texts/s against 87; three or four threads on two cores oversubscribe (9 to 12 ms).
    Past about four threads the small model stops scaling, so a large machine keeps its
    other cores for PostgreSQL and the requests.  Bulk work cannot starve queries either
    way: it runs in bounded slices behind them.
    """
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))  # what this process may run on
        except AttributeError:  # not on every platform
            cores = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cores))


def _cost(text: str) -> int:
    return min(len(text), WINDOW_CHARS)


class ComputeQueue:
    """Runs ``encode`` on a thread of its own, interactive requests before bulk slices."""

    def __init__(self, encode: Encode, *, name: str, slice_texts: int = SLICE_TEXTS,
                 slice_chars: int = SLICE_CHARS,
                 interactive_max: int = INTERACTIVE_MAX_TEXTS,
                 interactive_chars: int = INTERACTIVE_MAX_CHARS) -> None:
        if min(slice_texts, slice_chars, interactive_max, interactive_chars) < 1:
            raise ValueError("slice and interactive limits must be >= 1")
        self._encode = encode
        self._name = name
        self.slice_texts = slice_texts
        self.slice_chars = slice_chars
        self.interactive_max = interactive_max
        self.interactive_chars = interactive_chars
        self._jobs: queue.PriorityQueue[_Job] = queue.PriorityQueue()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    async def run(self, texts: Sequence[str]) -> list[Vector]:
        """Encode ``texts`` on the model's thread; interactive or sliced bulk by size."""
        batch = list(texts)
        if not batch:
            return []
        if (len(batch) <= self.interactive_max
                and sum(map(_cost, batch)) <= self.interactive_chars):
            return await asyncio.wrap_future(self.submit(batch, INTERACTIVE))
        out: list[Vector | None] = [None] * len(batch)
        for chosen in self._slices(batch):
            part: list[Vector] = await asyncio.wrap_future(
                self.submit([batch[i] for i in chosen], BULK))
            for i, vector in zip(chosen, part, strict=True):
                out[i] = vector
        return out  # type: ignore[return-value]  # every index was filled

    def _slices(self, batch: list[str]) -> list[list[int]]:
        """Indices of ``batch``, shortest texts first, cut into bounded slices."""
        slices: list[list[int]] = [[]]
        work = 0
        for i in sorted(range(len(batch)), key=lambda i: len(batch[i])):
            cost = _cost(batch[i])
            if slices[-1] and (work + cost > self.slice_chars
                               or len(slices[-1]) >= self.slice_texts):
                slices.append([])
                work = 0
            slices[-1].append(i)
            work += cost
        return slices

    def submit(self, texts: list[str], priority: int) -> Future[list[Vector]]:
        """Queue one encode; lower ``priority`` runs first, equal ones in arrival order."""
        self._ensure_thread()
        future: Future[list[Vector]] = Future()
        self._jobs.put((priority, next(self._order), texts, future, time.monotonic()))
        telemetry.EMBED_DEPTH.labels(self._name).set(self._jobs.qsize())
        return future

    def _ensure_thread(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                # a daemon: a process that exits mid-encode is not held up by its model
                self._thread = threading.Thread(target=self._serve, daemon=True,
                                                name=f"nous-memory-embed-{self._name}")
                self._thread.start()

    def _serve(self) -> None:
        while True:
            priority, _, texts, future, queued = self._jobs.get()
            telemetry.EMBED_DEPTH.labels(self._name).set(self._jobs.qsize())
            telemetry.EMBED_WAIT.labels(
                self._name, "interactive" if priority == INTERACTIVE else "bulk").observe(
                time.monotonic() - queued)
            if not future.set_running_or_notify_cancel():
                continue  # its caller was cancelled while it waited
            try:
                future.set_result(self._encode(texts))
            except BaseException as exc:  # handed to the caller; the thread serves on
                future.set_exception(exc)
