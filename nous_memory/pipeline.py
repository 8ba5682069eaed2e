"""Which code runs each queued task: the one place a task's handler is bound.

``nous_memory.work.tasks`` names the tasks and the flow between them; this module
joins each name to the domain method that does the work, and refuses to build a
worker that could claim an item it has no handler for.
"""

from __future__ import annotations

from .context.extraction import Extractor
from .conversation import WorkingMemory
from .db import Database
from .episodes.learn import EpisodeLearner
from .episodes.tasks import EpisodeTasks
from .maintenance import Maintenance
from .work.queue import TaskHandler
from .work.tasks import Task
from .work.worker import Worker


def task_handlers(*, episodes: EpisodeTasks, learner: EpisodeLearner,
                  conversation: WorkingMemory, extractor: Extractor,
                  maintenance: Maintenance) -> dict[Task, TaskHandler]:
    """Every task's handler; raises if a task was added without one."""
    handlers: dict[Task, TaskHandler] = {
        Task.EPISODE_CLOSE: episodes.process,
        Task.EPISODE_UPGRADE: episodes.process,
        Task.EPISODE_LEARN: learner.process,
        Task.CONVERSATION_SUMMARIZE: conversation.summarize_task,
        Task.CONTEXT_EXTRACT: extractor.process,
        Task.SUMMARY_REGENERATE: maintenance.regenerate_summary,
    }
    missing = [task.value for task in Task if task not in handlers]
    if missing:
        raise RuntimeError(f"tasks without a handler: {', '.join(missing)}")
    return handlers


def build_worker(db: Database, *, episodes: EpisodeTasks, learner: EpisodeLearner,
                 conversation: WorkingMemory, extractor: Extractor,
                 maintenance: Maintenance, worker_id: str | None, lease_s: float,
                 poll_s: float) -> Worker:
    """A worker that runs every task and, between items, closes idle episodes."""
    handlers = task_handlers(episodes=episodes, learner=learner, conversation=conversation,
                             extractor=extractor, maintenance=maintenance)
    return Worker(db, handlers, idle_sweep=episodes.close_idle, worker_id=worker_id,
                  lease_s=lease_s, poll_s=poll_s)
