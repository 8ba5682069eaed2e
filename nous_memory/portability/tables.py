"""Which tables an export carries, in what order, and how an import matches their rows.

Every table with an ``agent_id`` column is either carried (``CARRIED``, in dependency
order: a row's references come before it) or excluded with its reason (``EXCLUDED``);
a test reads the live catalog and fails when a new table is in neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..db.bulk import SHAPES, TableShape


@dataclass(frozen=True, slots=True)
class Carried:
    """One exported table and the rules its import follows."""

    table: str
    # columns the target keeps its own values of when a row is imported again (reads
    # update them; they are not part of what the record says)
    volatile: frozenset[str] = frozenset()
    # columns that say "the same row" (default: the primary key); rows that match are
    # compared, and differing ones refuse the import
    match: tuple[str, ...] | None = None
    # columns written (default: all); the others take the table's defaults
    carried: tuple[str, ...] | None = None
    # only rows with these values are exported (column -> values)
    only: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # whether a matching row with other values is a conflict (False: it is skipped)
    compare: bool = True

    @property
    def shape(self) -> TableShape:
        return SHAPES[self.table]

    @property
    def match_columns(self) -> tuple[str, ...]:
        return self.match or tuple(c for c in self.shape.key if c != "agent_id")

    @property
    def carried_columns(self) -> tuple[str, ...]:
        return self.carried or self.shape.columns

    @property
    def compared_columns(self) -> tuple[str, ...]:
        skip = {"agent_id", *self.match_columns, *self.volatile}
        return tuple(c for c in self.carried_columns if c not in skip)


CARRIED: tuple[Carried, ...] = (
    Carried("memories", volatile=frozenset({"last_accessed_at", "access_count"})),
    Carried("episodes"),
    Carried("decisions"),
    Carried("facts"),
    Carried("procedures"),
    Carried("censors"),
    Carried("episode_messages"),
    Carried("episode_chunks"),
    Carried("episode_extractions"),
    Carried("memory_archive"),
    Carried("memory_events"),
    Carried("agent_settings"),
    Carried("conversation_policies"),
    Carried("conversation_summaries"),
    Carried("conversation_analyses"),
    Carried("conversation_state"),
    # work not yet done (an episode's close, its follow-up, a queued extraction) goes
    # with the agent as new pending work; finished items are this database's history
    Carried("work_items", match=("task", "memory_id", "dedup_key"),
            carried=("task", "memory_id", "dedup_key", "payload"),
            only={"state": ("pending", "running")}, compare=False),
)

# the column that names a carried row's memory: a person's export (people/) keeps the
# rows of their memories; a table without one is the agent's, not a person's
MEMORY_COLUMN: dict[str, str] = {
    "memories": "id", "episodes": "memory_id", "decisions": "memory_id",
    "facts": "memory_id", "procedures": "memory_id", "censors": "memory_id",
    "episode_messages": "episode_id", "episode_chunks": "episode_id",
    "episode_extractions": "episode_id", "memory_archive": "memory_id",
    "memory_events": "memory_id", "conversation_summaries": "episode_id",
    "conversation_analyses": "episode_id", "conversation_state": "episode_id",
    "work_items": "memory_id"}

EXCLUDED: dict[str, str] = {
    "extraction_cache": "derived: tier-2 extractions are recomputed on demand and expire",
    "embedding_cache": "derived: vectors of texts already embedded, recomputed on demand",
    "llm_calls": "this installation's LLM spend, not the agent's memory (copied, it "
                 "would count the same calls twice); erased with the agent",
}

CARRIED_BY_NAME: dict[str, Carried] = {c.table: c for c in CARRIED}
