"""Who a request is for: the ``X-User`` header and the ``user`` field (people/).

A gateway in front of the service knows who is talking and says so once per request,
in the header; a caller that builds bodies says so in the body or the query.  Either
way the store gets one person: both given and naming different people is a 422 (the
request contradicts itself, and guessing which one was meant could show one person
another's memories).  Header values arrive as Latin-1 text (HTTP's rule); a name sent
as UTF-8 bytes ("Zoë") is decoded back, so a header and a body name one person alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import Header, Query

from ..errors import InvalidInputError
from ..people import person_key

USER_HEADER = "X-User"
_ABOUT = ("the person asking (a user id or a name, trimmed and case-folded): only their "
          "memories and the shared ones are read, and what is written is theirs; "
          "absent: the agent's owner, who reads everything")

UserHeader = Annotated[str | None, Header(
    alias=USER_HEADER, description=f"Who the whole request is for: {_ABOUT}.  With a "
                                   "``user`` field too, both must name the same person.")]
UserQuery = Annotated[str | None, Query(
    description=f"Who asks: {_ABOUT} (or send the {USER_HEADER} header).")]
USER_FIELD_DESCRIPTION = f"Who asks: {_ABOUT} (or send the {USER_HEADER} header)."


def _header_text(value: str) -> str:
    """The header as the client meant it: UTF-8 bytes decoded, when they are UTF-8."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def asking(header: str | None, given: object = None, field: str = "user") -> str | None:
    """The person a request is for, from the header and the ``field`` value (either may
    be absent; None: the owner).  A bad value or two different people: 422."""
    from_header = None if header is None else person_key(_header_text(header), USER_HEADER)
    from_field = None if given is None else person_key(given, field)
    if from_header is not None and from_field is not None and from_header != from_field:
        raise InvalidInputError.single(
            field, f"names {from_field!r} but the {USER_HEADER} header names "
                   f"{from_header!r}; send one person")
    return from_field if from_field is not None else from_header


def with_user(header: str | None, fields: Mapping[str, Any], field: str = "user",
              ) -> dict[str, Any]:
    """``fields`` with ``user`` set to the person the request is for (or left out)."""
    out = {k: v for k, v in fields.items() if k != "user"}
    person = asking(header, fields.get("user"), field)
    if person is not None:
        out["user"] = person
    return out
