"""History import: a person's past conversations brought in as closed episodes.

- ``sessions``: the sessions and turns of a history, validated before anything is written;
- ``files``: readers for history files (JSON Lines of sessions; LongMemEval- and
  LoCoMo-shaped JSON);
- ``importer``: the import itself, one transaction per session, idempotent by session
  key, with progress; the worker then closes the episodes (chunks, embeddings, facts).

Every name is imported on first use (PEP 562): ``results`` (what an import reports)
loads without the database layer, for the remote client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_attributes

if TYPE_CHECKING:
    from .files import HistoryFile, read_history
    from .importer import HistoryImporter
    from .results import IngestProgress, IngestResult, IngestStatus
    from .sessions import MAX_SESSION_TURNS, HistorySession, HistoryTurn, parse_sessions

_LAZY = {"HistoryFile": ".files", "read_history": ".files", "HistoryImporter": ".importer",
         "MAX_SESSION_TURNS": ".sessions", "HistorySession": ".sessions",
         "HistoryTurn": ".sessions", "parse_sessions": ".sessions",
         "IngestProgress": ".results", "IngestResult": ".results", "IngestStatus": ".results"}

__all__ = ["MAX_SESSION_TURNS", "HistoryFile", "HistoryImporter", "HistorySession",
           "HistoryTurn", "IngestProgress", "IngestResult", "IngestStatus", "parse_sessions",
           "read_history"]

__getattr__ = lazy_attributes(__name__, _LAZY)
