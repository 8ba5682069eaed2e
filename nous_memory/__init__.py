"""nous-memory: long-term memory for LLM agents on PostgreSQL + pgvector.

The store, the embedders and the settings are imported on first use (PEP 562): a process that only
talks to a service (``nous_memory.client``, the CLI with ``--url``) never loads the
driver, numpy or a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    ClientError,
    ConfigurationError,
    ConflictError,
    ContentionError,
    DatabaseError,
    DatabaseUnavailableError,
    DuplicateError,
    EmbeddingMismatchError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    NousMemoryError,
    PayloadTooLargeError,
    PgvectorMissingError,
    SchemaError,
    ServerError,
    WrongKindError,
)
from .lazy import lazy_attributes
from .memories.kinds import (
    CensorAction,
    CensorDetail,
    DecisionDetail,
    DecisionOutcome,
    EpisodeDetail,
    EpisodeState,
    FactDetail,
    Kind,
    ProcedureDetail,
    Status,
    SummarySource,
)
from .memories.records import Memory, MemoryEvent, Page

if TYPE_CHECKING:
    from .config import Settings
    from .embeddings import Embedder, OnnxEmbedder, OpenAIEmbedder, SentenceTransformerEmbedder
    from .store import MemoryStore

_LAZY = {"MemoryStore": ".store", "Settings": ".config", "Embedder": ".embeddings",
         "OnnxEmbedder": ".embeddings", "OpenAIEmbedder": ".embeddings",
         "SentenceTransformerEmbedder": ".embeddings"}

__version__ = "0.1.0"

__all__ = [
    "CensorAction",
    "CensorDetail",
    "ClientError",
    "ConfigurationError",
    "ConflictError",
    "ContentionError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DecisionDetail",
    "DecisionOutcome",
    "DuplicateError",
    "Embedder",
    "EmbeddingMismatchError",
    "EpisodeDetail",
    "EpisodeState",
    "FactDetail",
    "FieldProblem",
    "InvalidInputError",
    "Kind",
    "Memory",
    "MemoryEvent",
    "MemoryStore",
    "NotFoundError",
    "NousMemoryError",
    "OnnxEmbedder",
    "OpenAIEmbedder",
    "Page",
    "PayloadTooLargeError",
    "PgvectorMissingError",
    "ProcedureDetail",
    "SchemaError",
    "SentenceTransformerEmbedder",
    "ServerError",
    "Settings",
    "Status",
    "SummarySource",
    "WrongKindError",
    "__version__",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
