"""Working memory: rolling conversation summaries for open episodes (DESIGN section 7).

``WorkingMemory`` (service.py) is the entry point; ``should_summarize`` (policy.py) is the
pure decision; ``current_summary`` returns an episode's summary and facets for the close
pipeline; ``results`` holds what the store returns.

The entry points that run SQL are imported on first use (PEP 562): the records, the
policy and the facets load without the database layer, so the remote client can return
them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .facets import Facets
from .pairs import ConvMessage
from .policy import Decision, Policy, resolve, should_summarize
from .prompt import ContextProvider
from .results import ConversationSummary, Gap, MessageChange, Prompt, SummarizeResult, SummaryRecord

if TYPE_CHECKING:
    from .service import WorkingMemory, current_summary, rolling_summary_text

_LAZY = {"WorkingMemory": ".service", "current_summary": ".service",
         "rolling_summary_text": ".service"}

__all__ = [
    "ContextProvider",
    "ConvMessage",
    "ConversationSummary",
    "Decision",
    "Facets",
    "Gap",
    "MessageChange",
    "Policy",
    "Prompt",
    "SummarizeResult",
    "SummaryRecord",
    "WorkingMemory",
    "current_summary",
    "resolve",
    "rolling_summary_text",
    "should_summarize",
]


def __getattr__(name: str) -> Any:
    """The entry points that run SQL, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
