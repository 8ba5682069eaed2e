"""The slot reader: facts stored before facts had slots get theirs (read by the same rules
as a new fact) and the time they were said (their message, else their episode's start).

Part of the ``backfill`` job: a page at a time in key order, at most ``MAX_PAGES`` pages
a run, resumable (a read fact stops matching).  It writes what the rules read and nothing
else: two old facts of one slot both stay active until the next statement of the slot
supersedes them (``timeline.place`` retires every active value of the slot).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..db import Database
from ..memories.ahead import slot_and_event
from .batches import FIRST_KEY

PAGE = 1000
MAX_PAGES = 20


async def read_slots(db: Database, agent: str | None, *, dry_run: bool) -> dict[str, int]:
    """Read the slots of up to ``PAGE * MAX_PAGES`` unread facts; the counts of the run."""
    read = slotted = 0
    after = FIRST_KEY
    for _ in range(MAX_PAGES):
        rows = await db.fetch("slots_unread_facts", *after, PAGE, agent)
        if not rows:
            break
        by_agent: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        for row in rows:
            slot, event = slot_and_event(row["content"], row["said_at"])
            slotted += slot is not None
            by_agent[row["agent_id"]].append((
                row["memory_id"], slot and slot.subject, slot and slot.attribute,
                slot and slot.value, bool(slot and slot.ended), row["said_at"], event))
        read += len(rows)
        if not dry_run:
            for owner, facts in by_agent.items():
                await db.execute("slots_set", owner, *(list(column) for column in zip(
                    *facts, strict=True)))
        if len(rows) < PAGE:
            break
        after = (rows[-1]["agent_id"], rows[-1]["memory_id"])
    return {"facts_read_for_slots": read, "facts_given_slots": slotted}
