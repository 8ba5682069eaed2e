"""The embedder that the settings describe."""

from __future__ import annotations

from ..config import Settings
from ..errors import ConfigurationError
from .base import Embedder
from .onnx_backend import OnnxEmbedder
from .remote import OpenAIEmbedder
from .torch_backend import SentenceTransformerEmbedder


def embedder_from_settings(settings: Settings) -> Embedder:
    """A local model (ONNX Runtime by default, or torch) or an OpenAI-compatible one.

    Nothing heavy happens here: a local model is exported, loaded or imported on its
    first encode (``warm_up`` does it ahead of time)."""
    if settings.embedding_provider == "openai":
        if not settings.embedding_model:
            raise ConfigurationError(
                "NOUS_MEMORY_EMBEDDING_MODEL is required with the openai embedding provider")
        return OpenAIEmbedder(settings.embedding_model, base_url=settings.embedding_base_url,
                              api_key=settings.embedding_api_key,
                              dimension=settings.embedding_dimensions)
    if settings.embedding_backend == "torch":
        return SentenceTransformerEmbedder(settings.embedding_model,
                                           batch_size=settings.embedding_batch_size,
                                           threads=settings.embedding_threads)
    return OnnxEmbedder(settings.embedding_model, cache_dir=settings.model_cache_dir,
                        batch_size=settings.embedding_batch_size,
                        threads=settings.embedding_threads)
