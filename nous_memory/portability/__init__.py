"""Export, import and erasure of a whole agent.

- ``lines``: the JSON Lines format (header, rows, trailer), its codecs and its errors;
- ``tables``: which tables an export carries, in what order, and which it leaves out;
- ``export``: the streamed export of one agent from one snapshot;
- ``importer``: the all-or-nothing import into the same or another agent id;
- ``erase``: forgetting an agent, with a content-free receipt;
- ``person``: forgetting one person of an agent (people/);
- ``reports``: what each of them reports.

Its modules are imported on first use (PEP 562): ``reports`` alone (what the remote
client returns) needs no database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_attributes

if TYPE_CHECKING:
    from .erase import Eraser
    from .export import Exporter, ExportStream
    from .importer import ImportConflictError, Importer
    from .lines import ExportFileError, TruncatedExportError
    from .person import PersonEraser
    from .reports import (
        ErasureReceipt,
        ExportSummary,
        ImportSummary,
        PersonErasure,
        StoreFacts,
    )
    from .tables import CARRIED, EXCLUDED

_LAZY = {"Eraser": ".erase", "PersonEraser": ".person", "PersonErasure": ".reports",
         "Exporter": ".export", "ExportStream": ".export",
         "ImportConflictError": ".importer", "Importer": ".importer",
         "ExportFileError": ".lines", "TruncatedExportError": ".lines",
         "ErasureReceipt": ".reports", "ExportSummary": ".reports",
         "ImportSummary": ".reports", "StoreFacts": ".reports", "CARRIED": ".tables",
         "EXCLUDED": ".tables"}

__all__ = [
    "CARRIED",
    "EXCLUDED",
    "Eraser",
    "ErasureReceipt",
    "ExportFileError",
    "ExportStream",
    "ExportSummary",
    "Exporter",
    "ImportConflictError",
    "ImportSummary",
    "Importer",
    "PersonEraser",
    "PersonErasure",
    "StoreFacts",
    "TruncatedExportError",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
