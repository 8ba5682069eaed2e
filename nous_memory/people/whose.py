"""Whose a message and what is learned from it are.

A message's person is the user it names (``user``), else, for the person's own turn, the
episode's user or the speaker's name; the assistant's turns belong to nobody.  What is
learned from a turn is its speaker's, unless the speaker spoke for the group they are
talking in ("our wifi is called Otter", "we moved the standup"): said in the first person
plural and never in the singular, in a conversation of several people, it is that
conversation's people's.  Said to the assistant alone, "we" is the speaker's own circle
(their team, their family), which the assistant's other people are not part of: it stays
the speaker's.  Private unless said in the group: a leak costs more than a missed share.
The test is the grammar of the person speaking (a closed class of pronouns), not a list
of topics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .keys import person_key

_SINGULAR = frozenset("i i'm i've i'll i'd me my mine myself".split())
_PLURAL = frozenset("we we're we've we'll we'd us our ours ourselves".split())
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def message_person(role: str, *, user: str | None, name: str | None,
                   episode_user: str | None) -> str | None:
    """The person who said a message (None: nobody's, such as the assistant's turns)."""
    if user is not None:
        return person_key(user, "user")
    if role != "user":
        return None
    if episode_user is not None and episode_user.strip():
        return person_key(episode_user, "user_id")
    if name is not None and name.strip():
        return person_key(name, "name")
    return None


def group_statement(text: str) -> bool:
    """Said for a group: first person plural, and no first person singular."""
    words = set(_WORD.findall(text.casefold().replace("\u2019", "'")))
    return bool(words & _PLURAL) and not words & _SINGULAR


def owner_of(speaker: str | None, conversation: Sequence[str], *, group: bool) -> list[str]:
    """Whose a fact learned from a turn of ``speaker`` in a conversation of
    ``conversation``'s people is (``group``: said for a group, ``group_statement``): the
    conversation's people when said for the group they form, else the speaker's; the
    conversation's people when the speaker is not known."""
    people = sorted(set(conversation))
    if speaker is None or (group and len(people) > 1):
        return people
    return [speaker]
