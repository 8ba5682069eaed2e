"""One message input shape: a history turn has the fields the Python record, the REST
body and the import's checks agree on, typed as an appended message types them."""

from __future__ import annotations

from nous_memory.api.history import HistoryTurnIn
from nous_memory.episodes.results import MessageIn
from nous_memory.history.sessions import TURN_FIELDS


def test_the_turn_fields_are_one_list() -> None:
    assert set(HistoryTurnIn.model_fields) == set(TURN_FIELDS)


def test_a_turn_is_typed_as_a_message() -> None:
    shared = set(TURN_FIELDS) & set(MessageIn.model_fields)
    assert shared == {"role", "content", "name", "metadata", "user"}
    for name in shared:
        turn, message = HistoryTurnIn.model_fields[name], MessageIn.model_fields[name]
        assert (turn.annotation, turn.metadata) == (message.annotation, message.metadata), name
    # the time: a message's created_at, a turn's at
    assert "at" not in MessageIn.model_fields and "created_at" in MessageIn.model_fields
