"""``upcoming``: an agent's plans ahead (dated facts: an appointment, a deadline, a
trip), soonest first.  A moved plan shows its new date only (the old one was superseded)
and a plan in the past is no longer upcoming."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..db import Database
from ..errors import FieldProblem, InvalidInputError
from ..memories.kinds import Kind, parse_agent_id
from .recall import asker_of, parse_moment
from .refs import make_ref
from .results import Upcoming as Upcoming
from .results import UpcomingEvent as UpcomingEvent

MAX_DAYS = 366
MAX_EVENTS = 200


async def upcoming(db: Database, agent_id: str, *, days: object = 7,
                   as_of: datetime | str | None = None, limit: object = 50,
                   user: object = None) -> Upcoming:
    """Plans from ``as_of`` (default now) to ``days`` later, at most ``limit``; of
    ``user`` and the agent's shared ones when a person asks (people/)."""
    agent = parse_agent_id(agent_id)
    problems: list[FieldProblem] = []
    asker = asker_of(user, problems)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        problems.append(FieldProblem("days", f"must be an integer from 1 to {MAX_DAYS}"))
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_EVENTS:
        problems.append(FieldProblem("limit", f"must be an integer from 1 to {MAX_EVENTS}"))
    moment = parse_moment(as_of, problems) if as_of is not None else datetime.now(UTC)
    if problems:
        raise InvalidInputError(problems)
    assert isinstance(days, int) and isinstance(limit, int) and moment is not None
    until = moment + timedelta(days=days)
    rows = await db.fetch("upcoming_events", agent, moment, until, limit,
                          None if asker is None else [asker])
    return Upcoming(as_of=moment, until=until, events=[
        UpcomingEvent(ref=make_ref(Kind.FACT, r["id"]), id=r["id"], text=r["summary"],
                      event_at=r["event_at"], said_at=r["valid_from"]) for r in rows])
