"""Which code runs each queued task: the one place a task's handler is bound.

``nous_memory.work.tasks`` names the tasks and the flow between them; this module
joins each name to the domain method that does the work, and refuses to hand a
worker a map with a task missing (it would claim items it cannot run).
"""

from __future__ import annotations

from .context.extraction import Extractor
from .conversation import WorkingMemory
from .episodes.learn import EpisodeLearner
from .episodes.tasks import EpisodeTasks
from .maintenance import Maintenance
from .work.queue import TaskHandler
from .work.tasks import Task


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

