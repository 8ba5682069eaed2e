"""Fact extraction measured against LoCoMo's reference observations.

    python bench/fact_extraction.py [--data ../shared/data/locomo/locomo-dev.json]
                                    [--threshold 0.5] [--limit N]

Each session of each conversation is one transcript (every turn a ``user`` message named
after its speaker, as the store receives two people talking); the extractor under test
turns it into facts.  LoCoMo lists, per session, the facts a careful reader takes from it
(``session_N_observation``: per speaker, the fact and its evidence turns).

Matching rule: a reference observation is *covered* when some fact extracted from the
same session was said in one of the observation's evidence turns and its cosine with the
observation (bundled embedding model) is >= ``--threshold`` (0.5).  A fact extracted by
an LLM carries no turn, so its turn is the session turn most similar to it.  An extracted
fact *matches no observation* when no observation of its session satisfies the same rule.

Prints, per extractor (the baseline first: every sentence anyone said, verbatim, as a
fact; it shows what the rule extractor's filters cost in coverage and buy in
precision): ``observation_coverage`` (share of reference observations
covered), ``facts_per_session``, ``unmatched_fact_share`` (share of extracted facts that
match no observation) and the coverage at cosine 0.4 and 0.6 to show how much the
threshold decides.  The rule extractor always runs; an LLM runs too when
``NOUS_MEMORY_LLM_BASE_URL`` and ``NOUS_MEMORY_LLM_MODEL`` are set (the close's own
extraction call, one per session).  Headline last: the rule extractor's coverage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from backends import LocalEmbedder, add_backend_option, local_embedder
from shared_data import shared_data

from nous_memory.episodes.chunks import TranscriptMessage
from nous_memory.episodes.statements import extract_statements

DATA = shared_data("locomo/locomo-dev.json")


@dataclass(frozen=True, slots=True)
class Session:
    name: str
    turns: list[TranscriptMessage]
    dia_ids: list[str]  # by turn seq
    observations: list[tuple[str, frozenset[str]]]  # (fact, evidence dia_ids)


@dataclass(frozen=True, slots=True)
class Scores:
    covered: int
    observations: int
    facts: int
    unmatched: int
    sessions: int


def load_sessions(path: Path, limit: int | None) -> list[Session]:
    sessions: list[Session] = []
    for sample in json.loads(path.read_text("utf-8")):
        conversation, observed = sample["conversation"], sample.get("observation") or {}
        for key in sorted((k for k in conversation if re.fullmatch(r"session_\d+", k)),
                          key=lambda k: int(k.split("_")[1])):
            turns = conversation[key]
            obs_key = f"{key}_observation"
            if not turns or obs_key not in observed:
                continue
            messages = [TranscriptMessage(seq=i, role="user", name=t["speaker"],
                                          content=t["text"]) for i, t in enumerate(turns)]
            observations = [(text, _evidence(ev)) for per_speaker in observed[obs_key].values()
                            for text, ev in per_speaker]
            sessions.append(Session(name=f"{sample['sample_id']}/{key}", turns=messages,
                                    dia_ids=[t["dia_id"] for t in turns],
                                    observations=observations))
    return sessions[:limit] if limit else sessions


def _evidence(value: str | Sequence[str]) -> frozenset[str]:
    """"D1:3", "D8:6; D9:17", "D26:14, D26:34" or a list of them."""
    items = [value] if isinstance(value, str) else list(value)
    return frozenset(p for item in items for p in re.split(r"[;,\s]+", item) if p)


def score(sessions: Sequence[Session], facts: Sequence[list[tuple[str, int | None]]],
          embedder: LocalEmbedder, threshold: float) -> Scores:
    covered = total_facts = unmatched = observations = 0
    for session, found in zip(sessions, facts, strict=True):
        observations += len(session.observations)
        total_facts += len(found)
        if not found or not session.observations:
            unmatched += len(found)
            continue
        fact_vecs = np.stack(embedder.encode([f for f, _ in found]))
        obs_vecs = np.stack(embedder.encode([o for o, _ in session.observations]))
        turns = [_turn(session, seq, vec, embedder) for (_, seq), vec in zip(
            found, fact_vecs, strict=True)]
        cos = fact_vecs @ obs_vecs.T  # facts x observations
        same_turn = np.array([[turn in evidence for _, evidence in session.observations]
                              for turn in turns])
        match = (cos >= threshold) & same_turn
        covered += int(match.any(axis=0).sum())
        unmatched += int((~match.any(axis=1)).sum())
    return Scores(covered=covered, observations=observations, facts=total_facts,
                  unmatched=unmatched, sessions=len(sessions))


_turn_vectors: dict[str, np.ndarray] = {}


def _turn(session: Session, seq: int | None, vec: np.ndarray, embedder: LocalEmbedder) -> str:
    """The fact's evidence turn: where it was said, or (an LLM's) the most similar turn."""
    if seq is not None:
        return session.dia_ids[seq]
    if session.name not in _turn_vectors:
        _turn_vectors[session.name] = np.stack(embedder.encode(
            [t.content for t in session.turns]))
    return session.dia_ids[int((_turn_vectors[session.name] @ vec).argmax())]


def rule_facts(session: Session) -> list[tuple[str, int | None]]:
    return [(s.content, s.seq) for s in extract_statements(session.turns)]


def every_sentence(session: Session) -> list[tuple[str, int | None]]:
    """The baseline: every sentence anyone said, verbatim, as a fact of its turn."""
    return [(sentence.strip(), t.seq) for t in session.turns
            for sentence in re.findall(r"[^.!?]+[.!?]*", t.content) if sentence.strip()]


async def llm_facts(sessions: Sequence[Session]) -> list[list[tuple[str, int | None]]] | None:
    """The close's extraction call per session, when an LLM is configured by env."""
    base_url = os.environ.get("NOUS_MEMORY_LLM_BASE_URL")
    model = os.environ.get("NOUS_MEMORY_LLM_MODEL")
    if not base_url or not model:
        return None
    from nous_memory.config import Settings
    from nous_memory.episodes.close import CloseSettings, EpisodeCloser
    from nous_memory.llm import LLMClient

    settings = Settings()
    client = LLMClient(base_url=base_url, model=model,
                       api_key=os.environ.get("NOUS_MEMORY_LLM_API_KEY"),
                       max_attempts=settings.llm_max_attempts,
                       timeout_s=settings.llm_timeout_s)
    closer = EpisodeCloser(client, CloseSettings.from_settings(settings))
    out: list[list[tuple[str, int | None]]] = []
    for session in sessions:
        extraction = await closer.extract("fact-extraction-bench", session.turns)
        out.append([(f.content, None) for f in extraction.facts if f.content.strip()])
    return out


def report(label: str, scores: dict[float, Scores], threshold: float) -> None:
    main = scores[threshold]
    lines = [
        f"facts_per_session_{label}: {main.facts / max(main.sessions, 1):.2f}",
        f"unmatched_fact_share_{label}: {main.unmatched / max(main.facts, 1):.3f}",
        *(f"observation_coverage_{label}_at_{t:.1f}: "
          f"{s.covered / max(s.observations, 1):.3f}"
          for t, s in sorted(scores.items()) if t != threshold),
        f"observation_coverage_{label}: {main.covered / max(main.observations, 1):.3f}"]
    print("\n".join(lines))


async def run(args: argparse.Namespace) -> None:
    sessions = load_sessions(args.data, args.limit)
    embedder = local_embedder(args.backend)
    thresholds = sorted({args.threshold, 0.4, 0.6})
    n_obs = sum(len(s.observations) for s in sessions)
    print(f"# {len(sessions)} sessions, {n_obs} reference observations from {args.data.name}")
    print(f"# an observation is covered by a fact from its session said in one of its "
          f"evidence turns with cosine >= {args.threshold} (bundled model); an LLM fact's "
          "turn is the session turn most similar to it")
    llm = await llm_facts(sessions)
    if llm is not None:
        report("llm", {t: score(sessions, llm, embedder, t) for t in thresholds},
               args.threshold)
    else:
        print("# no LLM configured (NOUS_MEMORY_LLM_BASE_URL, NOUS_MEMORY_LLM_MODEL): "
              "rule extractor only")
    naive = [every_sentence(s) for s in sessions]
    report("every_sentence", {t: score(sessions, naive, embedder, t) for t in thresholds},
           args.threshold)
    rules = [rule_facts(s) for s in sessions]
    report("rules", {t: score(sessions, rules, embedder, t) for t in thresholds},
           args.threshold)  # last: the headline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--limit", type=int, default=None, help="first N sessions only")
    add_backend_option(parser)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
