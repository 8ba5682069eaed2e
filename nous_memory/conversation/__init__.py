"""Working memory: rolling conversation summaries for open episodes
(docs/architecture.md, section 7).

``WorkingMemory`` (service.py) is the entry point; ``should_summarize`` (policy.py) is the
pure decision; ``current_summary`` returns an episode's summary and facets for the close
pipeline; ``results`` holds what the store returns.

Every name is imported on first use (PEP 562): ``results`` (the records the store
returns) loads without the database layer or the rest of the package, so the remote
client returns the same records cheaply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_attributes

if TYPE_CHECKING:
    from .facets import Facets
    from .pairs import ConvMessage
    from .policy import Decision, Policy, resolve, should_summarize
    from .prompt import ContextProvider
    from .results import (
        ConversationSummary,
        Gap,
        MessageChange,
        Prompt,
        SummarizeResult,
        SummaryRecord,
    )
    from .service import WorkingMemory, current_summary, rolling_summary_text

_LAZY = {"Facets": ".facets", "ConvMessage": ".pairs", "Decision": ".policy",
         "Policy": ".policy", "resolve": ".policy", "should_summarize": ".policy",
         "ContextProvider": ".prompt", "ConversationSummary": ".results", "Gap": ".results",
         "MessageChange": ".results", "Prompt": ".results", "SummarizeResult": ".results",
         "SummaryRecord": ".results", "WorkingMemory": ".service",
         "current_summary": ".service", "rolling_summary_text": ".service"}

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


__getattr__ = lazy_attributes(__name__, _LAZY)
