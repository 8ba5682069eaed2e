"""One summarising pass: validate the watermark, decide, analyse, fold, guard, and land
the result with a compare-and-swap on the watermark (two workers never fold twice).

No transaction is open while the LLM runs; each write is one short transaction.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from uuid import UUID

from .. import blocks
from ..db import Database
from ..llm import LLMClient, LLMError
from ..memories.messages import to_message
from ..tokens import count_tokens
from . import breaker, extractive, llm_fold, salience
from .facets import Facets, merge, rule_facets
from .pairs import ConvMessage, call_for, content_hash, pair_index, safe_cut
from .policy import Policy, should_summarize
from .prompt import chat_message, message_tokens
from .results import Gap as Gap
from .results import Op, Source
from .results import SummarizeResult as SummarizeResult
from .storage import (
    NewRecord,
    State,
    SummaryRecord,
    episode_state,
    heads,
    insert_analyses,
    insert_record,
    invalidate,
    latest_analyses,
    load_state,
    unfolded,
)
from .view import View, summary_text

MAX_REBUILD_STEPS = 200
INVALIDATE_TRIES = 3


@dataclass(slots=True)
class _Step:
    """A fold computed outside any transaction, waiting to be written."""

    delta: list[tuple[ConvMessage, str]]
    text: str
    facets: Facets
    source: Source
    op: Op
    depth: int
    notes: list[str] = field(default_factory=list)
    failed: bool = False
    story: tuple[str, Facets, Source] | None = None


class _LostRace(Exception):
    pass


def chat_overhead(messages: list[ConvMessage]) -> int:
    """Tokens a prompt spends on the messages beyond their content (role, name, ids)."""
    return sum(message_tokens(chat_message(m), m.tokens) - m.tokens for m in messages)


class Summarizer:
    def __init__(self, db: Database, llm: LLMClient | None) -> None:
        self._db = db
        self._llm = llm

    async def run(self, agent: str, episode: UUID, policy: Policy, *,
                  force: bool = False, extra_tokens: int = 0) -> SummarizeResult:
        return (await self.run_with_view(agent, episode, policy, force=force,
                                         extra_tokens=extra_tokens))[0]

    async def run_with_view(self, agent: str, episode: UUID, policy: Policy, *,
                            force: bool = False, llm_inline: bool = True,
                            extra_tokens: int = 0) -> tuple[SummarizeResult, View | None]:
        """The pass, and the conversation as it left it when that is still current
        (nothing written since it was read), so a prompt needs no second read.

        ``llm_inline=False`` (the prompt path): a due fold that would call the LLM is not
        run here but reported as ``deferred`` for the worker; in an emergency it is
        folded now by rules instead (cheap, and it keeps what would be dropped).
        ``extra_tokens``: what else the window holds (the prompt's system message); the
        chat overhead of each unfolded message is counted here too.
        """
        await episode_state(self._db, agent, episode)
        state = await load_state(self._db, agent, episode)
        invalidated = await self._watermark_problem(agent, episode, state)
        for attempt in range(INVALIDATE_TRIES):
            if not invalidated:
                break
            # conditional on the version read, unconditional on the last try: a change
            # that lands in between must not make the reset (and the rebuild) be skipped
            version = state.version if attempt < INVALIDATE_TRIES - 1 else None
            done = await invalidate(self._db, agent, episode, invalidated, version)
            state = await load_state(self._db, agent, episode)
            if done:
                break
            invalidated = await self._watermark_problem(agent, episode, state)
        rebuilding = state.invalidated_reason is not None
        invalidated = invalidated or state.invalidated_reason
        reasons: list[str] = []
        gaps: list[Gap] = []
        folded = steps = 0
        last: _Step | None = None
        view: View | None = None
        for _ in range(MAX_REBUILD_STEPS):
            story, head = await heads(self._db, agent, episode, state)
            messages = await unfolded(self._db, agent, episode, state.watermark_seq)
            view = View(state=state, story=story, chapter=head, unfolded=messages)
            last_seq = messages[-1].seq if messages else state.watermark_seq
            decision = should_summarize(
                policy, messages, summary_tokens=count_tokens(summary_text(story, head)),
                since_last_fold=last_seq + 1 - state.folded_message_count, armed=state.armed,
                force=force or rebuilding, extra_tokens=extra_tokens + chat_overhead(messages))
            reasons.extend(r for r in decision.reasons if r not in reasons)
            if not decision.summarize:
                if decision.armed != state.armed:
                    await self._db.execute("conv_state_armed", agent, episode, decision.armed)
                break
            if not llm_inline and self._llm_allowed(policy, state, []):
                if not decision.emergency:
                    return SummarizeResult(
                        episode_id=episode, folded=0, steps=0,
                        watermark_seq=state.watermark_seq, summary_id=state.summary_id,
                        reasons=(*reasons, "fold due: left to the worker (LLM)"),
                        invalidated=invalidated, deferred=True), view
                policy = dataclasses.replace(policy, mode="rule")
                reasons.append("emergency: folded by rules now instead of waiting for the LLM")
            view = None  # about to write: what was read is no longer the current view
            delta, gap = await self._analysed(agent, episode, messages, len(decision.fold))
            if gap is not None:
                gaps.append(gap)
            if not delta:
                break
            step = await self._fold(agent, episode, policy, state, head, story, delta)
            await self._record_breaker(agent, episode, policy, state, step)
            try:
                await self._write(agent, episode, state, head, story, step, decision.armed,
                                  last_seq + 1, policy)
            except _LostRace:
                return SummarizeResult(
                    episode_id=episode, folded=folded, steps=steps,
                    watermark_seq=state.watermark_seq, summary_id=state.summary_id,
                    reasons=(*reasons, "another worker folded first; this result was dropped"),
                    gaps=tuple(gaps), invalidated=invalidated, lost_race=True), None
            folded += len(step.delta)
            steps += 1 + (step.story is not None)
            reasons.extend(step.notes)
            last = step
            state = await load_state(self._db, agent, episode)
            if not rebuilding or gap is not None:
                break
        return SummarizeResult(
            episode_id=episode, folded=folded, steps=steps, watermark_seq=state.watermark_seq,
            summary_id=state.summary_id if state.summary_id is not None else state.story_id,
            source=last.source if last else None, op=last.op if last else None,
            reasons=tuple(reasons), gaps=tuple(gaps), invalidated=invalidated), view

    # ------------------------------------------------------------------ steps

    async def _watermark_problem(self, agent: str, episode: UUID, state: State) -> str | None:
        """A watermark whose message is gone or changed is reported, never followed."""
        if state.watermark_seq < 0:
            return None
        row = await self._db.fetchrow("conv_message_at", agent, episode, state.watermark_seq)
        if row is None:
            return f"stale watermark: message {state.watermark_seq} no longer exists"
        if row["deleted_at"] is not None:
            return f"stale watermark: message {state.watermark_seq} was deleted"
        if content_hash(row["role"], row["content"]) != state.watermark_hash:
            return f"stale watermark: message {state.watermark_seq} changed after it was folded"
        return None

    async def _analysed(self, agent: str, episode: UUID, messages: list[ConvMessage],
                        count: int) -> tuple[list[tuple[ConvMessage, str]], Gap | None]:
        """The fold's messages with their latest analysis, up to the first gap."""
        fold = messages[:count]
        pairs = pair_index(messages)
        latest = await latest_analyses(self._db, agent, episode, [m.seq for m in fold])
        texts: dict[int, str] = {}
        passed: set[int] = set()  # injected blocks only: nothing to fold, and no gap
        failures: dict[int, str] = {}
        new_rows: list[tuple[int, bytes, str, str]] = []
        for i, message in enumerate(fold):
            digest = content_hash(message.role, message.content)
            known = latest.get(message.seq)
            if known is not None and known.content_hash == digest:
                texts[message.seq] = known.content
                if known.kind == "injected":
                    passed.add(message.seq)
                continue
            try:
                kind, text = extractive.analyze(message, call_for(messages, i, pairs))
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                failures[message.seq] = f"analysis missing: the analyser failed ({exc!r})"
                continue
            new_rows.append((message.seq, digest, kind, text))
            texts[message.seq] = text
            if kind == "injected":
                passed.add(message.seq)
        await insert_analyses(self._db, agent, episode, new_rows)
        cut, gap = len(fold), None
        for i, message in enumerate(fold):
            found = texts.get(message.seq)
            if (found is None or not found.strip()) and message.seq not in passed:
                reason = failures.get(message.seq) or (
                    "analysis missing" if found is None
                    else "empty analysis: the message has no text and no tool call")
                cut, gap = i, Gap(seq=message.seq, reason=reason)
                break
        cut = safe_cut(fold, cut, pair_index(fold))
        return [(m, texts[m.seq]) for m in fold[:cut]], gap

    def _llm_allowed(self, policy: Policy, state: State, notes: list[str]) -> bool:
        if policy.mode == "rule":
            return False
        if self._llm is None:
            if policy.mode == "llm":
                notes.append("mode llm but no LLM is configured: rules used")
            return False
        if not breaker.allows(state.breaker_open_until, datetime.now(UTC)):
            notes.append(f"circuit breaker open until {state.breaker_open_until:%H:%M:%S}: "
                         "rules used")
            return False
        return True

    async def _fold(self, agent: str, episode: UUID, policy: Policy, state: State,
                    head: SummaryRecord | None, story: SummaryRecord | None,
                    delta: list[tuple[ConvMessage, str]]) -> _Step:
        old = head.content if head else ""
        old_facets = head.facets if head else Facets()
        depth = head.depth + 1 if head else 0
        notes: list[str] = []
        use_llm = self._llm_allowed(policy, state, notes)
        step: _Step | None = None
        if depth > policy.max_chain_depth:
            notes.append(f"chain depth {policy.max_chain_depth} reached: compaction instead "
                         "of recompression")
            step = self._rule_step(old, old_facets, delta, op="compaction", depth=0)
            step.notes = notes
            await self._compact(agent, policy, step, use_llm, keep_op=True)
        elif use_llm:
            step = await self._llm_step(agent, episode, policy, state, old, old_facets, delta,
                                        depth, notes)
        if step is None:
            step = self._rule_step(old, old_facets, delta, op="fold", depth=depth)
            step.notes = notes
            step.failed = any(n.startswith("llm ") for n in notes)
        if len(step.text) > policy.max_chars or count_tokens(step.text) > (
                policy.summary_token_cap):
            await self._compact(agent, policy, step, use_llm and not step.failed)
        covered = state.chapter_messages + len(step.delta)
        if policy.chapter_messages and covered >= policy.chapter_messages:
            await self._close_chapter(agent, policy, step, story, use_llm and not step.failed)
        return step

    def _rule_step(self, old: str, old_facets: Facets, delta: list[tuple[ConvMessage, str]],
                   *, op: Op, depth: int) -> _Step:
        analyses = [a for _, a in delta]
        facets = merge(old_facets, rule_facets([(m.speaker, extractive.extract(
            " ".join(blocks.strip(m.content).split()), 2000)) for m, _ in delta
            if m.role != "tool"]))
        return _Step(delta=delta, text=extractive.append(old, analyses), facets=facets,
                     source="rule", op=op, depth=depth)

    async def _llm_step(self, agent: str, episode: UUID, policy: Policy, state: State,
                        old: str, old_facets: Facets, delta: list[tuple[ConvMessage, str]],
                        depth: int, notes: list[str]) -> _Step | None:
        bridge = None
        if state.watermark_seq >= 0:
            row = await self._db.fetchrow("conv_message_before", agent, episode,
                                          state.watermark_seq)
            bridge = to_message(row) if row is not None else None
        request = llm_fold.fold_input(policy, old, bridge, delta)
        if request.used == 0:
            notes.append("summariser window too small for one message: rules used")
            return None
        used = delta[:request.used]
        if request.used < len(delta):
            notes.append(f"summariser input capped: {request.used} of {len(delta)} messages "
                         "folded now, the rest next time")
        assert self._llm is not None
        try:
            reply = await llm_fold.fold(self._llm, agent, policy, request)
        except LLMError as exc:
            notes.append(f"llm fold failed: {exc}; rules used")
            return None
        text = reply.text()
        replaced = count_tokens(old) + sum(count_tokens(m.content) for m, _ in used)
        produced = count_tokens(text)
        if not text or produced >= replaced:
            notes.append(f"llm fold rejected: not smaller ({produced} tokens for {replaced} "
                         "replaced); rules used")
            return None
        if len(text) > policy.goal_chars:
            notes.append(f"llm summary over target ({len(text)} > {policy.goal_chars} chars)")
        return _Step(delta=used, text=text, facets=merge(old_facets, reply.facets()),
                     source="llm", op="fold", depth=depth, notes=notes)

    async def _compact(self, agent: str, policy: Policy, step: _Step, use_llm: bool, *,
                       keep_op: bool = False) -> None:
        """Bring the summary to the target: the LLM if allowed, else (or on any failure)
        the newest tail prefixed with "... ".  A result must be smaller than its input."""
        goal = policy.goal_chars
        if len(step.text) <= goal and count_tokens(step.text) <= policy.summary_token_cap:
            return
        if use_llm and self._llm is not None:
            try:
                reply = await llm_fold.compact(self._llm, agent, policy, step.text, goal)
                text = reply.text()
                if text and len(text) <= policy.max_chars and len(text) < len(step.text):
                    step.text, step.facets = text, merge(step.facets, reply.facets())
                    step.notes.append(f"compacted by the LLM to {len(text)} chars")
                    return
                step.notes.append("llm compaction rejected: empty, over max or not smaller")
            except LLMError as exc:
                step.notes.append(f"llm compaction failed: {exc}")
            step.failed = True
        step.text = extractive.fit_summary(step.text, goal, policy.summary_token_cap)
        step.notes.append(f"compacted by rules to the lines worth most ({len(step.text)} "
                          "chars)")
        if not keep_op and step.source == "rule":
            step.op = "compaction"

    async def _close_chapter(self, agent: str, policy: Policy, step: _Step,
                             story: SummaryRecord | None, use_llm: bool) -> None:
        """The chapter's summary folds into the story, which stays under story_chars."""
        old = story.content if story else ""
        facets = merge(story.facets if story else Facets(), step.facets)
        if use_llm and self._llm is not None:
            try:
                reply = await llm_fold.merge_story(self._llm, agent, policy, old, step.text)
                text = reply.text()
                if text and len(text) <= policy.story_chars:
                    step.story = (text, merge(facets, reply.facets()), "llm")
                    step.notes.append("chapter closed into the story (llm)")
                    return
                step.notes.append("llm story merge over its size: rules used")
            except LLMError as exc:
                step.notes.append(f"llm story merge failed: {exc}")
        merged = extractive.append(old, [step.text])
        step.story = (salience.compact(merged, policy.story_chars), facets, "rule")
        step.notes.append("chapter closed into the story (rule)")

    async def _record_breaker(self, agent: str, episode: UUID, policy: Policy, state: State,
                              step: _Step) -> None:
        tried = step.source == "llm" or step.failed
        if not tried:
            return
        failures, until = breaker.after_step(state.breaker_failures, failed=step.failed,
                                             policy=policy, now=datetime.now(UTC))
        if (failures, until) != (state.breaker_failures, state.breaker_open_until):
            await self._db.execute("conv_breaker_set", agent, episode, failures, until)

    async def _write(self, agent: str, episode: UUID, state: State, head: SummaryRecord | None,
                     story: SummaryRecord | None, step: _Step, armed: bool, seen: int,
                     policy: Policy) -> None:
        first = step.delta[0][0].seq
        last_msg = step.delta[-1][0]
        start = head.first_seq if head is not None and step.op != "compaction" else first
        covered = state.chapter_messages + len(step.delta)
        async with self._db.transaction() as conn:
            chapter_id: int | None = await insert_record(conn, agent, episode, NewRecord(
                parent_id=head.id if head else None, level="chapter",
                op="rebuild" if state.invalidated_reason and head is None else step.op,
                depth=step.depth, first_seq=head.first_seq if head else first,
                last_seq=last_msg.seq, covered=covered, content=step.text,
                tokens=count_tokens(step.text), source=step.source, facets=step.facets,
                notes=tuple(step.notes)))
            story_id = story.id if story else None
            if step.story is not None:
                text, facets, source = step.story
                story_id = await insert_record(conn, agent, episode, NewRecord(
                    parent_id=story_id, level="story", op="chapter_close", depth=0,
                    first_seq=story.first_seq if story else start, last_seq=last_msg.seq,
                    covered=(story.covered if story else 0) + covered, content=text,
                    tokens=count_tokens(text), source=source, facets=facets))
                await conn.execute("conv_summary_supersede", agent, chapter_id)
                chapter_id, covered = None, 0
            landed = await conn.fetchval(
                "conv_state_cas", agent, episode, state.version, last_msg.seq,
                content_hash(last_msg.role, last_msg.content), chapter_id, story_id, armed,
                seen, covered)
            if landed is None:
                raise _LostRace  # rolls the records back with the transaction
