"""Every kind of queued work, by name.

The queue stores a task's name in ``work_items.task``; this enum is the only place
that name is written.  ``nous_memory.pipeline.PIPELINE`` (above the domains, which this
layer cannot import) holds each task's handler, the functions that queue it and what it
queues next, as references a test compares with the code (the rule extractor, for
one, runs in ``EPISODE_LEARN``, not in the close); ``pipeline.describe()`` prints it.
"""

from __future__ import annotations

from enum import StrEnum


class Task(StrEnum):
    EPISODE_CLOSE = "episode_close"
    EPISODE_LEARN = "episode_learn"
    EPISODE_UPGRADE = "episode_upgrade"
    CONVERSATION_SUMMARIZE = "conversation_summarize"
    CONTEXT_EXTRACT = "context_extract"
    SUMMARY_REGENERATE = "summary_regenerate"


# a close and its follow-up: an episode is still being processed while either is open
# (a later upgrade attempt is not waited for)
EPISODE_PROCESSING: tuple[Task, ...] = (Task.EPISODE_CLOSE, Task.EPISODE_LEARN)
