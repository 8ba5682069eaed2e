"""WorkingMemory: the conversation subsystem's entry points (MemoryStore delegates here)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from ..db import Database
from ..errors import ConfigurationError, InvalidInputError, NotFoundError
from ..llm import LLMClient
from ..memories.kinds import is_utf8, parse_agent_id
from ..memories.params import parse_memory_id
from ..tokens import count_tokens
from ..work.queue import WorkContext, enqueue
from ..work.tasks import Task
from . import messages, storage
from .engine import Summarizer
from .facets import Facets, merge
from .pairs import ConvMessage
from .policy import KNOBS, MIN_WINDOW_TOKENS, Policy, resolve
from .prompt import ContextProvider, PromptHolds, assemble, prompt_tokens, summary_parts
from .results import ConversationSummary as ConversationSummary
from .results import Prompt as Prompt
from .results import SummarizeResult
from .view import View, summary_text

MAX_HISTORY_PAGE = 500


async def current_summary(db: Database, agent_id: str,
                          episode_id: UUID | str) -> ConversationSummary:
    """The episode's current summary and facets (empty text before the first fold).

    For the close pipeline: the chain and summary feed it beside the transcript, which
    stays the source of truth.
    """
    agent = parse_agent_id(agent_id)
    episode = parse_memory_id(episode_id, "episode_id")
    await storage.episode_state(db, agent, episode)
    state = await storage.load_state(db, agent, episode)
    story, chapter = await storage.heads(db, agent, episode, state)
    return _summary_of(episode, state, story, chapter)


async def rolling_summary_text(db: Database, agent: str, episode: UUID) -> str | None:
    """The text of the episode's rolling summary, or None when there is none; reads only
    (two queries), for the close call, which sends it beside the transcript."""
    state = await storage.find_state(db, agent, episode)
    if state is None:
        return None
    story, chapter = await storage.heads(db, agent, episode, state)
    return summary_text(story, chapter) or None


def _summary_of(episode: UUID, state: storage.State, story: storage.SummaryRecord | None,
                chapter: storage.SummaryRecord | None) -> ConversationSummary:
    text = summary_text(story, chapter)
    facets = merge(story.facets if story else Facets(), chapter.facets if chapter else Facets())
    newest = chapter or story
    return ConversationSummary(
        episode_id=episode, text=text, story=story.content if story else "",
        chapter=chapter.content if chapter else "", facets=facets,
        watermark_seq=state.watermark_seq, summary_id=state.summary_id,
        story_id=state.story_id, source=newest.source if newest else None,
        depth=chapter.depth if chapter else 0, tokens=count_tokens(text),
        invalidated_reason=state.invalidated_reason, breaker_failures=state.breaker_failures,
        breaker_open_until=state.breaker_open_until)


class WorkingMemory:
    """Rolling summaries that keep an open episode inside a model's window."""

    def __init__(self, db: Database, llm: LLMClient | None, *,
                 defaults_json: str | None = None,
                 context_provider: ContextProvider | None = None,
                 background_llm: bool = True) -> None:
        self._db = db
        self._summarizer = Summarizer(db, llm)
        self.context_provider = context_provider
        # build_prompt leaves LLM folds to the worker (no LLM on the read path by default)
        self.background_llm = background_llm
        try:
            defaults = json.loads(defaults_json) if defaults_json else {}
            if not isinstance(defaults, dict):
                raise ValueError("not a JSON object")
            resolve(defaults)
        except (ValueError, InvalidInputError) as exc:
            raise ConfigurationError(
                f"NOUS_MEMORY_CONVERSATION_POLICY_JSON is not a valid policy: {exc}") from None
        self._defaults: dict[str, Any] = defaults

    async def policy(self, agent_id: str, overrides: Mapping[str, Any] | None = None) -> Policy:
        """Defaults < settings < the agent's stored knobs < ``overrides``."""
        agent = parse_agent_id(agent_id)
        stored = await storage.get_policy(self._db, agent)
        return resolve(self._defaults, stored, overrides)

    async def set_policy(self, agent_id: str, knobs: Mapping[str, Any]) -> Policy:
        """Store knobs for the agent (a None value removes one); returns the result."""
        agent = parse_agent_id(agent_id)
        if not isinstance(knobs, Mapping):
            raise InvalidInputError.single("policy", "must be an object of knobs")
        stored = await storage.get_policy(self._db, agent)
        stored.update(knobs)
        stored = {k: v for k, v in stored.items() if v is not None}
        policy = resolve(self._defaults, stored)  # refuses unknown or bad knobs first
        await storage.set_policy(self._db, agent, {k: stored[k] for k in stored if k in KNOBS})
        return policy

    async def summarize(self, agent_id: str, episode_id: UUID | str, *, force: bool = False,
                        overrides: Mapping[str, Any] | None = None) -> SummarizeResult:
        """Fold what the policy says is due (``force``: fold now, all but the tail)."""
        agent = parse_agent_id(agent_id)
        episode = parse_memory_id(episode_id, "episode_id")
        policy = await self.policy(agent, overrides)
        return await self._summarizer.run(agent, episode, policy, force=force)

    async def build_prompt(self, agent_id: str, episode_id: UUID | str, system: str,
                           budget_tokens: int, *, query: str | None = None,
                           context_tokens: int | None = None, summarize: bool = True,
                           overrides: Mapping[str, Any] | None = None) -> Prompt:
        """System prompt, summary block, optional context block and tail, within budget."""
        agent = parse_agent_id(agent_id)
        episode = parse_memory_id(episode_id, "episode_id")
        if not isinstance(system, str) or "\x00" in system or not is_utf8(system):
            raise InvalidInputError.single("system", "must be valid text without NUL")
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or not (
                1 <= budget_tokens <= 10_000_000):
            raise InvalidInputError.single("budget_tokens", "must be an integer >= 1")
        if query is not None and (not isinstance(query, str) or "\x00" in query
                                  or not is_utf8(query)):
            raise InvalidInputError.single("query", "must be valid text without NUL")
        if context_tokens is not None and (isinstance(context_tokens, bool) or not isinstance(
                context_tokens, int) or context_tokens < 0):
            raise InvalidInputError.single("context_tokens", "must be an integer >= 0")
        stored = await storage.get_policy(self._db, agent)
        policy = resolve(self._defaults, stored, overrides)
        if all(layer.get("window_tokens") is None
               for layer in (self._defaults, stored, overrides or {})):
            # nobody named the model's window: the caller's budget is the window, so a
            # small budget does not start folding at once against a default 8192
            window = max(MIN_WINDOW_TOKENS, budget_tokens)
            policy = dataclasses.replace(policy, window_tokens=window)
            overrides = {**(overrides or {}), "window_tokens": window}
        result = view = None
        # The system message shares the window, and a budget below the model's window
        # shrinks it: the triggers count both (so does the worker a fold is left to),
        # else a prompt could drop messages nobody folded.
        extra = prompt_tokens([{"role": "system", "content": system}] if system else [])
        if extra > budget_tokens:  # refused before anything is folded or written
            raise InvalidInputError.single(
                "budget_tokens", f"{budget_tokens} is less than the system prompt alone "
                                 f"needs ({extra} tokens)")
        extra += max(0, policy.window_tokens - budget_tokens)
        if summarize:
            result, view = await self._summarizer.run_with_view(
                agent, episode, policy, llm_inline=not self.background_llm,
                extra_tokens=extra)
            if result.deferred:
                await enqueue(self._db, agent, Task.CONVERSATION_SUMMARIZE, episode,
                              payload={"policy": dict(overrides or {}), "extra_tokens": extra})
        else:
            await storage.episode_state(self._db, agent, episode)
        if view is None:  # something was written (or nothing read yet): read it now
            state = await storage.load_state(self._db, agent, episode)
            story, chapter = await storage.heads(self._db, agent, episode, state)
            view = View(state=state, story=story, chapter=chapter, unfolded=await
                        storage.unfolded(self._db, agent, episode, state.watermark_seq))
        current = _summary_of(episode, view.state, view.story, view.chapter)
        tail: list[ConvMessage] = view.unfolded
        body = summary_parts(current.story, current.chapter, current.facets,
                             current.watermark_seq) if current.text else None
        built = await assemble(
            agent_id=agent, system=system, budget_tokens=budget_tokens, summary=body,
            summary_share=policy.summary_window_share, tail=tail, query=query,
            context_tokens=context_tokens, provider=self.context_provider,
            holds=PromptHolds(episode_id=episode, after_seq=current.watermark_seq))
        return Prompt(messages=built.messages, parts=built.parts, tokens=built.tokens,
                      budget_tokens=budget_tokens,
                      summary_tokens=built.summary_tokens, context_tokens=built.context_tokens,
                      tail_messages=built.tail_messages,
                      dropped_messages=built.dropped_messages, truncated=built.truncated,
                      watermark_seq=current.watermark_seq, summarized=result)

    async def summarize_task(self, ctx: WorkContext) -> None:
        """Runs ``Task.CONVERSATION_SUMMARIZE``: the fold build_prompt left to the worker."""
        item = ctx.item
        overrides = item.payload.get("policy")
        extra = item.payload.get("extra_tokens")
        try:
            policy = await self.policy(item.agent_id, overrides if isinstance(
                overrides, Mapping) else None)
            await self._summarizer.run(
                item.agent_id, item.memory_id, policy,
                extra_tokens=extra if isinstance(extra, int) and not isinstance(
                    extra, bool) and extra >= 0 else 0)
        except (NotFoundError, InvalidInputError):
            pass  # the episode is gone, or the stored knobs changed under the item
        await ctx.skip()  # the fold wrote its own result (compare-and-swap): item done

    async def summary(self, agent_id: str, episode_id: UUID | str) -> ConversationSummary:
        return await current_summary(self._db, agent_id, episode_id)

    async def history(self, agent_id: str, episode_id: UUID | str, *, limit: int = 100,
                      offset: int = 0) -> list[storage.SummaryRecord]:
        """Every chain record, oldest first (superseded and invalidated ones included)."""
        agent = parse_agent_id(agent_id)
        episode = parse_memory_id(episode_id, "episode_id")
        if isinstance(limit, bool) or not isinstance(limit, int) or not (
                1 <= limit <= MAX_HISTORY_PAGE):
            raise InvalidInputError.single("limit", f"must be between 1 and {MAX_HISTORY_PAGE}")
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset < 2**31:
            raise InvalidInputError.single("offset", "must be an integer from 0 to 2147483647")
        await storage.episode_state(self._db, agent, episode)
        return await storage.history(self._db, agent, episode, limit=limit, offset=offset)

    async def edit_message(self, agent_id: str, episode_id: UUID | str, seq: int,
                           content: str) -> messages.MessageChange:
        return await messages.change(self._db, parse_agent_id(agent_id),
                                     parse_memory_id(episode_id, "episode_id"), seq,
                                     content=content)

    async def delete_message(self, agent_id: str, episode_id: UUID | str,
                             seq: int) -> messages.MessageChange:
        return await messages.change(self._db, parse_agent_id(agent_id),
                                     parse_memory_id(episode_id, "episode_id"), seq,
                                     delete=True)
