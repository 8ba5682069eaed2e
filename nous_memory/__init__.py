"""nous-memory: long-term memory for LLM agents on PostgreSQL + pgvector."""

from .config import Settings
from .embeddings import Embedder, OnnxEmbedder, OpenAIEmbedder, SentenceTransformerEmbedder
from .errors import (
    ClientError,
    ConfigurationError,
    ConflictError,
    DatabaseError,
    DatabaseUnavailableError,
    EmbeddingMismatchError,
    FieldProblem,
    InvalidInputError,
    NotFoundError,
    NousMemoryError,
    PayloadTooLargeError,
    PgvectorMissingError,
    SchemaError,
    ServerError,
)
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
from .store import MemoryStore

__version__ = "0.1.0"

__all__ = [
    "CensorAction",
    "CensorDetail",
    "ClientError",
    "ConfigurationError",
    "ConflictError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DecisionDetail",
    "DecisionOutcome",
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
    "__version__",
]
