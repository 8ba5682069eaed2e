"""Embedding models and how they are scheduled.

- ``base``: the ``Embedder`` protocol, unit vectors, the size check;
- ``onnx_backend`` (default) and ``torch_backend``: the bundled all-MiniLM-L6-v2 (or
  another sentence-transformers folder) on ONNX Runtime or PyTorch; ``onnx_export``
  makes the ONNX graph once from the folder's weights; ``model_files`` reads a folder's
  settings without loading it;
- ``compute``: query-first scheduling of a local model on its own thread;
- ``cache``: embedding through the per-agent cache (every write and query embeds here);
- ``query_cache``: a small in-process cache of query vectors;
- ``remote``: OpenAI-compatible endpoints; ``factory``: the embedder the settings name.
"""

from .base import Embedder, Vector, embed_checked, normalize
from .factory import embedder_from_settings
from .model_files import BUNDLED_MODEL_NAME, bundled_model_path
from .onnx_backend import OnnxEmbedder
from .remote import OpenAIEmbedder
from .torch_backend import SentenceTransformerEmbedder

__all__ = [
    "BUNDLED_MODEL_NAME",
    "Embedder",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "Vector",
    "bundled_model_path",
    "embed_checked",
    "embedder_from_settings",
    "normalize",
]
