"""Embedding models: the bundled sentence-transformers model and OpenAI-compatible ones."""

from .embedders import (
    BUNDLED_MODEL_NAME,
    Embedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    Vector,
    bundled_model_path,
    embed_checked,
    embedder_from_settings,
    normalize,
)

__all__ = [
    "BUNDLED_MODEL_NAME",
    "Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "Vector",
    "bundled_model_path",
    "embed_checked",
    "embedder_from_settings",
    "normalize",
]
