"""The chunking policy: turn-level chunks, each indexed with the turns just before it."""

from __future__ import annotations

import pytest

from nous_memory.episodes.chunks import TranscriptMessage, chunk_messages, index_text


def msg(seq: int, text: str, name: str = "Ana") -> TranscriptMessage:
    return TranscriptMessage(seq=seq, role="user", content=text, name=name,
                             metadata={"dia_id": f"D1:{seq}"})


TURNS = [msg(0, "Hi Bo!"), msg(1, "Hey Ana, how was the trip?", "Bo"),
         msg(2, "Great, we hiked the ridge."), msg(3, ""), msg(4, "Which ridge?", "Bo")]


def test_one_turn_per_chunk_with_two_turns_of_context() -> None:
    chunks = chunk_messages(TURNS, max_tokens=160)
    assert [c.content for c in chunks] == ["Ana: Hi Bo!", "Bo: Hey Ana, how was the trip?",
                                           "Ana: Great, we hiked the ridge.",
                                           "Bo: Which ridge?"]
    assert [c.chunk_no for c in chunks] == [0, 1, 2, 3]
    assert [c.message_metadata for c in chunks] == [[{"dia_id": f"D1:{s}"}] for s in (0, 1, 2, 4)]
    assert chunks[0].context == ""
    assert chunks[1].context == "Ana: Hi Bo!"
    # the empty message is skipped, also as context
    assert chunks[3].context == "Bo: Hey Ana, how was the trip?\nAna: Great, we hiked the ridge."
    assert chunks[3].index_text == chunks[3].context + "\nBo: Which ridge?"
    assert chunks[0].index_text == "Ana: Hi Bo!"


def test_earlier_messages_give_the_first_new_chunk_its_context() -> None:
    chunks = chunk_messages(TURNS[4:], max_tokens=160, first_chunk_no=7, before=TURNS[:4])
    assert len(chunks) == 1 and chunks[0].chunk_no == 7
    assert chunks[0].context.splitlines() == ["Bo: Hey Ana, how was the trip?",
                                              "Ana: Great, we hiked the ridge."]


def test_multi_turn_chunks_stop_at_turns_or_tokens() -> None:
    chunks = chunk_messages(TURNS, max_tokens=160, max_turns=3, context_turns=0)
    assert [(c.first_seq, c.last_seq) for c in chunks] == [(0, 2), (4, 4)]
    assert all(c.context == "" for c in chunks)
    small = chunk_messages(TURNS, max_tokens=8, max_turns=10)
    assert [(c.first_seq, c.last_seq) for c in small] == [(0, 0), (1, 1), (2, 2), (4, 4)]
    with pytest.raises(ValueError):
        chunk_messages(TURNS, max_tokens=160, max_turns=0)


def test_index_text_without_context_is_the_content() -> None:
    assert index_text("Ana: hi", "") == "Ana: hi"
    assert index_text("Ana: hi", "Bo: yo") == "Bo: yo\nAna: hi"


def test_a_block_the_store_wrote_is_never_chunked_again() -> None:
    import json

    from nous_memory import blocks

    context = blocks.wrap("## About the user now\n[fact:1] The user lives in Porto.", "context")
    turns = [msg(0, "Where do I live?"),
             TranscriptMessage(seq=1, role="tool", content=json.dumps({"text": context})),
             TranscriptMessage(seq=2, role="tool", content=context),
             msg(3, f"Thanks. {context} Also I love hiking.")]
    chunks = chunk_messages(turns, max_tokens=160)
    assert not any("Porto" in c.content or "Porto" in c.context for c in chunks)
    assert chunks[-1].content == "Ana: Thanks.  Also I love hiking."
