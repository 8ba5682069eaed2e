"""People: whose a memory is, and who is asking.

One assistant is often shared: a household, a family chat, a team bot, a gateway that
answers everyone who writes to it.  Each memory belongs to people (``Memory.people``):
a person's own facts belong to that person, a conversation to the people in it, and a
memory that belongs to nobody in particular (empty) is the agent's, shared with everyone.
A read made for a person (``user=``) sees what is theirs and what is shared; a read
without one is the owner's and sees everything.
"""

from .keys import MAX_PERSON_CHARS, Person, person_key, visible_to
from .whose import group_statement, message_person, owner_of

__all__ = ["MAX_PERSON_CHARS", "Person", "group_statement", "message_person", "owner_of",
           "person_key", "visible_to"]
