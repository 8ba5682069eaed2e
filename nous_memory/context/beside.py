"""A value named again beside another of its kind: what was said before it is older.

"Raj quit Deloitte and is at Canva now", "since leaving Halvorsen (at Norvik nobody
emails after 6)", "it's actually 7:45 not 7:15": a person's later statement names a
value said before together with another value of the same kind.  No rule need read
which of the two holds now for what was said before to be older than it: an earlier
text stating the value and not the other one is marked "(older: the user said more on
<date>)" and ranked below the rest of its section, and the later statement, which holds
both, stands.  Two names in one sentence are not always a change ("Marta and Tom came
over"), so the mark claims no more than it knows: that the person said more, and when;
it is made only for a question about how things stand.  Pure: no I/O; the statements are
``tellings.later_statements``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .now import OldValue
from .tellings import Later, adjacent, markable, value_kind, value_regex


def named_beside(statements: Sequence[Later], kept: frozenset[str]) -> list[OldValue]:
    """For each statement naming two or more values of one kind, each such value as old
    before the statement was said, wherever a text states it without the values new
    beside it (those not named beside it before).  ``kept`` are never old: the question's
    words (what is asked about) and the values slots hold as current (a rule read them).
    More than ``MAX_OF_A_KIND`` values of one kind are a list, not a change."""
    out: list[OldValue] = []
    seen: set[str] = set()
    for later in statements:  # newest first: the latest statement that names it decides
        by_kind: dict[str, set[str]] = {}
        for value in later.values - kept:
            by_kind.setdefault(value_kind(value), set()).add(value)
        groups = [g for g in by_kind.values() if 2 <= len(g) <= MAX_OF_A_KIND]
        if not groups:
            continue
        pairs = adjacent(later.body)
        for group in groups:
            for value in sorted(group):
                if value in seen or not _markable(value):
                    continue
                # the other values, less those said beside it before ("Dr." of "Dr.
                # Fofana" is no new value beside "Dr. Brennan") and the words of its own
                # name ("Lea Striders" is one club)
                before = [e.values for e in statements
                          if e.said < later.said and value in e.values]
                others = {o for o in group - {value} - frozenset().union(*before)
                          if (value, o) not in pairs and (o, value) not in pairs}
                if not others:
                    continue  # nothing new beside it
                seen.add(value)
                turn = (None if later.cand.chunk_no is None
                        else (later.cand.memory_id, later.cand.chunk_no))
                out.append(OldValue(old=value_regex([value]), current=value_regex(others),
                                    until=later.said, said_more=True, turn=turn))
    return out


MAX_OF_A_KIND = 4


def _markable(value: str) -> bool:
    """``markable``, and a number of two digits ("a 43, not a 42"): told beside another
    of its kind, it is what changed, not a date's day."""
    return markable(value) or (value.isdigit() and len(value) == 2)
