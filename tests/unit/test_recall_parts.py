"""recall's pure parts: references, validation before any query, fusion and prior bounds."""

from __future__ import annotations

from uuid import UUID

import pytest

from nous_memory.context.recall import MAX_K, Fusion, Priors, leg_size, make_ref, parse_request
from nous_memory.errors import InvalidInputError
from nous_memory.memories.kinds import Kind

ID = UUID("1a2b3c4d-0000-4000-8000-000000000000")


def test_refs_are_kind_and_short_id() -> None:
    assert make_ref("fact", ID) == "fact:1a2b3c4d"
    assert make_ref("episode", ID, 3) == "episode:1a2b3c4d#c3"
    assert make_ref("episode", ID, 0) == "episode:1a2b3c4d#c0"


def test_request_defaults_and_normalisation() -> None:
    req = parse_request("a", "  where is it?  ", None, 10, False)
    assert req.query == "where is it?" and req.kinds == tuple(Kind)
    req = parse_request("a", "x", ["fact", Kind.FACT, "episode"], MAX_K, True)
    assert req.kinds == (Kind.FACT, Kind.EPISODE) and req.include_superseded


def test_every_bad_field_is_named_at_once() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_request("a", "", ["nope"], 0, None)
    assert [p.field for p in caught.value.problems] == [
        "query", "k", "kinds[0]", "include_superseded"]


def test_leg_size_is_bounded() -> None:
    assert leg_size(1) == 60 and leg_size(50) == 200 and leg_size(MAX_K) == 400


def test_weights_out_of_bounds_are_refused() -> None:
    for bad in ({"recency": 0.6}, {"importance": -0.1}, {"half_life_days": 0},
                {"use_saturation": 0}, {"speaker": 0.6}, {"speaker": -0.1}):
        with pytest.raises(ValueError):
            Priors(**bad)  # type: ignore[arg-type]
    for bad_fusion in ({"rrf_k": 0.5}, {"text_weight": -1}, {"context_weight": 1.5}):
        with pytest.raises(ValueError):
            Fusion(**bad_fusion)  # type: ignore[arg-type]


def test_spread_is_the_largest_over_the_smallest_prior_factor() -> None:
    # defaults: factors within [1 - 0.05 - 0.05, 1 + 0.05 + 0.05 + 0.05 + 0.05 + 0.2 + 0.3]
    assert Priors().spread == pytest.approx(1.7 / 0.9)
    assert Priors(recency=0, importance=0, confidence=0, use=0, speaker=0,
                  time=0).spread == 1.0
    widest = Priors(recency=0.5, importance=0.5, confidence=0.5, use=0.5, speaker=0.5,
                    time=0.5)
    assert widest.spread == pytest.approx(3.5 / 0.5)
