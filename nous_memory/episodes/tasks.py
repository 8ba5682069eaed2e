"""Work-queue handlers for episodes: close processing and the later LLM upgrade."""

from __future__ import annotations

import logging
from uuid import UUID

from ..conversation import rolling_summary_text
from ..db import Connection, Database
from ..errors import ContentionError, NotFoundError, NousMemoryError, loggable
from ..memories.kinds import EpisodeState, FactsState
from ..work.queue import WorkContext
from ..work.tasks import Task
from .close import EpisodeCloser
from .lifecycle import EpisodeManager, read_transcript

_log = logging.getLogger(__name__)


class EpisodeTasks:
    """Runs ``Task.EPISODE_CLOSE`` and ``Task.EPISODE_UPGRADE``: one LLM call outside any
    transaction, the result written in one transaction under the item's lease."""

    def __init__(self, db: Database, episodes: EpisodeManager, closer: EpisodeCloser, *,
                 idle_close_after_s: float) -> None:
        self._db = db
        self._episodes = episodes
        self._closer = closer
        self._idle_s = idle_close_after_s

    async def close_idle(self, limit: int = 100) -> int:
        """Close open episodes with no message for ``idle_close_after_s``."""
        rows = await self._db.fetch("idle_open_episodes", self._idle_s, limit)
        closed = 0
        for row in rows:
            try:
                await self._episodes.close(row["agent_id"], row["memory_id"])
                closed += 1
            except NousMemoryError as exc:  # deleted or changed meanwhile: skip this one
                _log.warning("idle close of episode %s skipped: %s", row["memory_id"],
                             loggable(exc))
        return closed

    async def process(self, ctx: WorkContext) -> None:
        item = ctx.item
        agent, ident = item.agent_id, item.memory_id
        try:
            episode = await self._episodes.get(agent, ident)
        except NotFoundError:
            await ctx.skip()  # deleted meanwhile: nothing left to do
            return
        detail = episode.episode
        upgrade = item.task == Task.EPISODE_UPGRADE
        wanted = EpisodeState.CLOSED if upgrade else EpisodeState.CLOSING
        if detail.state != wanted or (
                upgrade and detail.facts_state != FactsState.NOT_EXTRACTED):
            await ctx.skip()  # already done (a retried or duplicate item)
            return
        version = await self._db.fetchval("memory_version", agent, ident)
        messages = await read_transcript(self._db, agent, ident)
        rolling = await self._rolling_summary(agent, ident)
        last = await self._db.fetchrow("episode_last_chunk", agent, ident)
        assert last is not None
        # the last attempt of a close skips the LLM: a rule summary beats a stuck episode
        prepared = await self._closer.prepare(
            agent, ident, detail.title, messages,
            chunked_upto=last["last_seq"], next_chunk=last["chunk_no"] + 1,
            use_llm=not (item.last_try and not upgrade), rolling_summary=rolling)
        if upgrade and prepared.extraction is None:
            raise RuntimeError(f"upgrade needs the LLM: {prepared.failure or 'not configured'}")

        async def write(conn: Connection) -> None:
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None or row["state"] != wanted:
                return  # someone else finished it; our completion of the item stands
            if upgrade and row["summary_source"] != "rule":
                return  # the summary was edited since: an upgrade never overwrites it
            if await conn.fetchval("memory_version", agent, ident) != version:
                # a message was forgotten since the transcript was read: read it again
                raise ContentionError(f"episode {ident} changed while it was being closed")
            await self._closer.write(conn, prepared)

        # the LLM call is paid for: an outage now waits for the database, not a new call
        await ctx.commit_when_possible(write)

    async def _rolling_summary(self, agent: str, ident: UUID) -> str | None:
        """Working memory's summary of the conversation, if it kept one (context for the
        close call beside the transcript, which stays the source of truth)."""
        return await rolling_summary_text(self._db, agent, ident)
