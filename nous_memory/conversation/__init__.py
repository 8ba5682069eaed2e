"""Working memory: rolling conversation summaries for open episodes
(docs/architecture.md, section 7).

``WorkingMemory`` (service.py) is the entry point; ``should_summarize`` (policy.py) is the
pure decision; ``current_summary`` returns an episode's summary and facets for the close
pipeline.
"""

from .engine import Gap, SummarizeResult
from .facets import Facets
from .messages import MessageChange
from .pairs import ConvMessage
from .policy import Decision, Policy, resolve, should_summarize
from .prompt import ContextProvider
from .service import (
    ConversationSummary,
    Prompt,
    WorkingMemory,
    current_summary,
    rolling_summary_text,
)
from .storage import SummaryRecord

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
