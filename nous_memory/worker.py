"""The work-queue worker: durable deferred work, safe with several workers at once.

An item is claimed with ``FOR UPDATE SKIP LOCKED`` under a lease.  Slow work (LLM,
embeddings) happens with no transaction open; the result is written in one transaction
that first re-checks the lease, so a worker killed at any instant leaves either nothing
(the item is claimed again when its lease expires) or the complete result, never both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

from .chunks import TranscriptMessage
from .db import Database
from .episode_close import EpisodeCloser
from .episodes import TRANSCRIPT_PAGE, EpisodeManager, to_message
from .errors import ConflictError, NotFoundError, NousMemoryError
from .kinds import EpisodeState, FactsState

_log = logging.getLogger(__name__)

MAX_ATTEMPTS = 6


class LeaseLost(ConflictError):
    """Another worker took the item over (our lease expired); our result is dropped."""


class Worker:
    def __init__(self, db: Database, episodes: EpisodeManager, closer: EpisodeCloser, *,
                 worker_id: str | None = None, lease_s: float = 300.0, poll_s: float = 1.0,
                 idle_close_after_s: float = 1800.0, retry_base_s: float = 5.0) -> None:
        self._db = db
        self._episodes = episodes
        self._closer = closer
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._lease_s = lease_s
        self._poll_s = poll_s
        self._idle_s = idle_close_after_s
        self._retry_base_s = retry_base_s

    async def run(self, stop: asyncio.Event) -> None:
        """Work until ``stop`` is set: close idle episodes, drain ready items, wait."""
        while not stop.is_set():
            try:
                await self.close_idle()
            except Exception:  # the sweep must never stop the queue
                _log.exception("idle-episode sweep failed")
            try:
                while not stop.is_set() and await self.run_once():
                    pass
            except Exception:  # keep serving; the item itself was already retried
                _log.exception("worker loop error")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self._poll_s)

    async def drain(self, limit: int = 10_000) -> int:
        """Process ready items until none is left (or ``limit``); returns how many."""
        done = 0
        while done < limit and await self.run_once():
            done += 1
        return done

    async def close_idle(self, limit: int = 100) -> int:
        """Close open episodes with no message for ``idle_close_after_s``."""
        rows = await self._db.fetch("idle_open_episodes", self._idle_s, limit)
        closed = 0
        for row in rows:
            try:
                await self._episodes.close(row["agent_id"], row["memory_id"])
                closed += 1
            except NousMemoryError as exc:  # deleted or changed meanwhile: skip this one
                _log.warning("idle close of episode %s skipped: %s", row["memory_id"], exc)
        return closed

    async def run_once(self) -> bool:
        await self._db.execute("work_fail_exhausted", MAX_ATTEMPTS)
        item = await self._db.fetchrow("work_claim", self._lease_s, self.worker_id,
                                       MAX_ATTEMPTS)
        if item is None:
            return False
        try:
            async with self._heartbeat(item):
                await self._handle(item)
        except LeaseLost as exc:  # expected when a slow worker was overtaken
            _log.info("result of work item %s dropped: %s", item["id"], exc)
        except Exception as exc:
            delay = min(self._retry_base_s * 2 ** (item["attempts"] - 1), 3600.0)
            state = await self._db.fetchval(
                "work_retry", item["agent_id"], item["id"], self.worker_id, MAX_ATTEMPTS,
                delay, f"{type(exc).__name__}: {exc}"[:2000])
            log = _log.warning if state == "pending" else _log.error
            log("work item %s (%s) failed, now %s: %s", item["id"], item["task"], state, exc)
        return True

    async def _handle(self, item: Any) -> None:
        agent, ident = item["agent_id"], item["memory_id"]
        try:
            episode = await self._episodes.get(agent, ident)
        except NotFoundError:
            await self._finish_only(item)  # deleted meanwhile: nothing left to do
            return
        detail = episode.detail
        upgrade = item["task"] == "episode_upgrade"
        wanted = (EpisodeState.CLOSED if upgrade else EpisodeState.CLOSING)
        if detail.state != wanted or (  # type: ignore[union-attr]
                upgrade and detail.facts_state != FactsState.NOT_EXTRACTED):  # type: ignore[union-attr]
            await self._finish_only(item)  # already done (a retried or duplicate item)
            return
        messages = await self._transcript(agent, ident)
        last = await self._db.fetchrow("episode_last_chunk", agent, ident)
        assert last is not None
        # the last attempt of a close skips the LLM: a rule summary beats a stuck episode
        last_try = not upgrade and item["attempts"] >= MAX_ATTEMPTS
        prepared = await self._closer.prepare(
            agent, ident, detail.title, messages,  # type: ignore[union-attr]
            chunked_upto=last["last_seq"], next_chunk=last["chunk_no"] + 1,
            use_llm=not last_try)
        if upgrade and prepared.extraction is None:
            raise RuntimeError(f"upgrade needs the LLM: {prepared.failure or 'not configured'}")
        async with self._db.transaction() as conn:
            if await conn.fetchval("work_complete", agent, item["id"], self.worker_id) is None:
                raise LeaseLost(f"lease on work item {item['id']} lost")
            row = await conn.fetchrow("episode_for_update", agent, ident)
            if row is None or row["state"] != wanted:
                return  # someone else finished it; our completion of the item stands
            if upgrade and row["summary_source"] != "rule":
                return  # the summary was edited since: an upgrade never overwrites it
            await self._closer.write(conn, prepared)

    async def _transcript(self, agent: str, ident: Any) -> list[TranscriptMessage]:
        """The whole transcript, read in pages (no silent cap on its length)."""
        messages: list[TranscriptMessage] = []
        while True:
            page = await self._db.fetch("episode_messages", agent, ident, len(messages),
                                        TRANSCRIPT_PAGE)
            messages.extend(to_message(r) for r in page)
            if len(page) < TRANSCRIPT_PAGE:
                return messages

    @contextlib.asynccontextmanager
    async def _heartbeat(self, item: Any) -> AsyncIterator[None]:
        """Extend the lease every third of it while the item is being worked on."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self._lease_s / 3)
                await self._db.fetchval("work_extend_lease", item["agent_id"], item["id"],
                                        self.worker_id, self._lease_s)

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _finish_only(self, item: Any) -> None:
        await self._db.fetchval("work_complete", item["agent_id"], item["id"], self.worker_id)
