"""Every kind of queued work, by name, with who queues it and what it queues next.

The queue stores a task's name in ``work_items.task``; this enum is the only place
that name is written.  Which code runs an item is bound in ``nous_memory.pipeline``
(one handler per task, checked complete when a worker is built), so following a
``Task`` member from any ``enqueue`` leads to its handler, and ``PIPELINE`` below is
the map of the whole deferred flow:

    close_episode / history import / idle sweep
        -> EPISODE_CLOSE (summary, chunks, extraction: one LLM call or the rules)
            -> EPISODE_LEARN (embed chunks and summary; learn facts and decisions)
            -> EPISODE_UPGRADE later, when the LLM was configured but not used
                -> EPISODE_LEARN
    build_prompt            -> CONVERSATION_SUMMARIZE (fold into the rolling summary)
    assemble_context + LLM  -> CONTEXT_EXTRACT (fill the extraction cache)
    trim job                -> SUMMARY_REGENERATE, EPISODE_UPGRADE
    backfill job            -> EPISODE_UPGRADE (with an LLM) or EPISODE_LEARN (rules)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Task(StrEnum):
    EPISODE_CLOSE = "episode_close"
    EPISODE_LEARN = "episode_learn"
    EPISODE_UPGRADE = "episode_upgrade"
    CONVERSATION_SUMMARIZE = "conversation_summarize"
    CONTEXT_EXTRACT = "context_extract"
    SUMMARY_REGENERATE = "summary_regenerate"


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFlow:
    """Where a task sits in the deferred flow (documentation that tests hold true)."""

    does: str
    queued_by: tuple[str, ...]
    queues_next: tuple[Task, ...] = ()


PIPELINE: dict[Task, TaskFlow] = {
    Task.EPISODE_CLOSE: TaskFlow(
        does="summarise the transcript, cut verbatim chunks and extract facts and "
             "decisions (one LLM call, or the rule extractor on the last attempt)",
        queued_by=("EpisodeManager.close", "HistoryImporter", "the worker's idle sweep"),
        queues_next=(Task.EPISODE_LEARN, Task.EPISODE_UPGRADE)),
    Task.EPISODE_LEARN: TaskFlow(
        does="embed the new chunks and summary, then learn the extracted facts and "
             "decisions (dedup and supersession)",
        queued_by=("EpisodeCloser.write", "the backfill job (rules pass)")),
    Task.EPISODE_UPGRADE: TaskFlow(
        does="redo a rule-closed episode's extraction with the LLM",
        queued_by=("EpisodeCloser.write (delayed)", "the trim job", "the backfill job"),
        queues_next=(Task.EPISODE_LEARN,)),
    Task.CONVERSATION_SUMMARIZE: TaskFlow(
        does="fold due messages into an open conversation's rolling summary with the LLM",
        queued_by=("WorkingMemory.build_prompt",)),
    Task.CONTEXT_EXTRACT: TaskFlow(
        does="cache the LLM's query-time extraction of a long memory",
        queued_by=("Extractor.queue (assemble_context with an LLM)",)),
    Task.SUMMARY_REGENERATE: TaskFlow(
        does="rewrite a too-short episode summary from its full detail",
        queued_by=("the trim job",)),
}

# a close and its follow-up: an episode is still being processed while either is open
# (a later upgrade attempt is not waited for)
EPISODE_PROCESSING: tuple[Task, ...] = (Task.EPISODE_CLOSE, Task.EPISODE_LEARN)
