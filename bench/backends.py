"""The local embedding backend a benchmark runs on: ``--backend onnx`` (the default, as
in the product) or ``--backend torch``.  Imported by the bench scripts beside it."""

from __future__ import annotations

import argparse

from nous_memory import OnnxEmbedder, SentenceTransformerEmbedder
from nous_memory.config import default_model_cache_dir

BACKENDS = ("onnx", "torch")
LocalEmbedder = OnnxEmbedder | SentenceTransformerEmbedder


def add_backend_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=BACKENDS, default="onnx",
                        help="local embedding backend (default: onnx, as the product)")


def local_embedder(backend: str) -> LocalEmbedder:
    """The bundled model on ``backend``, loaded (and exported, the first time)."""
    embedder: LocalEmbedder = (
        OnnxEmbedder(cache_dir=default_model_cache_dir()) if backend == "onnx"
        else SentenceTransformerEmbedder())
    embedder.warm_up()
    return embedder
