"""The deferred flow: for every queued task, the code that runs it, the code that queues
it and the tasks it queues next, held as references so that a rename breaks the import
and ``tests/unit/test_pipeline_map.py`` can read the code and compare it with this map.

``nous_memory.work.tasks`` names the tasks (the work layer cannot import the domains);
this module, above them, joins each name to its handler and producers, and refuses to
hand a worker a map with a task missing (it would claim items it cannot run).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .context.extraction import Extractor
from .conversation import WorkingMemory
from .episodes.close import EpisodeCloser
from .episodes.learn import EpisodeLearner
from .episodes.lifecycle import EpisodeManager
from .episodes.tasks import EpisodeTasks
from .history.importer import HistoryImporter
from .maintenance import Maintenance
from .maintenance.backfill import Backfill
from .maintenance.tiering import _queue_trim_work
from .work.queue import TaskHandler, WorkContext
from .work.tasks import Task

Handler = Callable[[Any, WorkContext], Awaitable[None]]  # a method, unbound


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskFlow:
    """Where a task sits in the deferred flow."""

    does: str
    handler: Handler
    queued_by: tuple[Callable[..., Any], ...]  # the functions whose code queues it
    queues_next: tuple[Task, ...] = ()


PIPELINE: dict[Task, TaskFlow] = {
    Task.EPISODE_CLOSE: TaskFlow(
        does="summarise the transcript and cut verbatim chunks; with an LLM, one call "
             "also extracts facts and decisions (the last attempt skips the LLM)",
        handler=EpisodeTasks.process,
        # close_episode, the worker's idle sweep (EpisodeTasks.close_idle) and the
        # history import
        queued_by=(EpisodeManager.close, HistoryImporter._write),
        queues_next=(Task.EPISODE_LEARN, Task.EPISODE_UPGRADE)),
    Task.EPISODE_LEARN: TaskFlow(
        does="embed the new chunks and summary, then learn the LLM's facts and decisions, "
             "or, closed without an LLM extraction, the rule extractor's facts "
             "(dedup and supersession)",
        handler=EpisodeLearner.process,
        queued_by=(EpisodeCloser.write, Backfill._rules)),
    Task.EPISODE_UPGRADE: TaskFlow(
        does="redo a rule-closed episode's close with the LLM",
        handler=EpisodeTasks.process,
        # delayed after a close without the LLM; the trim job; the backfill job
        queued_by=(EpisodeCloser.write, _queue_trim_work, Backfill.run),
        queues_next=(Task.EPISODE_LEARN,)),
    Task.CONVERSATION_SUMMARIZE: TaskFlow(
        does="fold due messages into an open conversation's rolling summary with the LLM",
        handler=WorkingMemory.summarize_task,
        queued_by=(WorkingMemory.build_prompt,)),
    Task.CONTEXT_EXTRACT: TaskFlow(
        does="cache the LLM's query-time extraction of a long memory",
        handler=Extractor.process,
        queued_by=(Extractor.queue,)),
    Task.SUMMARY_REGENERATE: TaskFlow(
        does="rewrite a too-short episode summary from its full detail",
        handler=Maintenance.regenerate_summary,
        queued_by=(_queue_trim_work,)),
}


def task_handlers(*, episodes: EpisodeTasks, learner: EpisodeLearner,
                  conversation: WorkingMemory, extractor: Extractor,
                  maintenance: Maintenance) -> dict[Task, TaskHandler]:
    """Every task's handler, bound to its object; raises if a task has none, or one
    other than ``PIPELINE`` says."""
    bound: dict[Task, TaskHandler] = {
        Task.EPISODE_CLOSE: episodes.process,
        Task.EPISODE_UPGRADE: episodes.process,
        Task.EPISODE_LEARN: learner.process,
        Task.CONVERSATION_SUMMARIZE: conversation.summarize_task,
        Task.CONTEXT_EXTRACT: extractor.process,
        Task.SUMMARY_REGENERATE: maintenance.regenerate_summary,
    }
    wrong = [task.value for task in Task if task not in PIPELINE or
             getattr(bound.get(task), "__func__", None) is not PIPELINE[task].handler]
    if wrong:
        raise RuntimeError(f"tasks without their handler: {', '.join(wrong)}")
    return bound


def describe() -> str:
    """The map as text (``docs/architecture.md`` quotes it; a test keeps them equal)."""
    lines: list[str] = []
    for task, flow in PIPELINE.items():
        lines.append(f"{task.name}  run by {_name(flow.handler)}")
        lines.append(f"    does:      {flow.does}")
        lines.append(f"    queued by: {', '.join(_name(f) for f in flow.queued_by)}")
        if flow.queues_next:
            lines.append(f"    queues:    {', '.join(t.name for t in flow.queues_next)}")
    return "\n".join(lines)


def _name(function: Callable[..., Any]) -> str:
    return f"{function.__module__.removeprefix('nous_memory.')}.{function.__qualname__}"
