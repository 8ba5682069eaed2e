"""History import: a person's past conversations brought in as closed episodes.

- ``sessions``: the sessions and turns of a history, validated before anything is written;
- ``files``: readers for history files (JSON Lines of sessions; LongMemEval- and
  LoCoMo-shaped JSON);
- ``importer``: the import itself, one transaction per session, idempotent by session
  key, with progress; the worker then closes the episodes (chunks, embeddings, facts).
"""

from .files import HistoryFile, read_history
from .importer import HistoryImporter, IngestProgress, IngestResult, IngestStatus
from .sessions import MAX_SESSION_TURNS, HistorySession, HistoryTurn, parse_sessions

__all__ = ["MAX_SESSION_TURNS", "HistoryFile", "HistoryImporter", "HistorySession",
           "HistoryTurn", "IngestProgress", "IngestResult", "IngestStatus", "parse_sessions",
           "read_history"]
