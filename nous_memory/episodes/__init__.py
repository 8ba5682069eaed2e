"""Episodes: a conversation's lifecycle from start to closed, and what is learned from it.

The close pipeline, in the order it runs (each step a queued task, so a crash at any
instant resumes where it stopped; the tasks and their flow are named in
``nous_memory.work.tasks``, their handlers bound in ``nous_memory.pipeline``):

1. ``lifecycle.EpisodeManager.close`` marks the episode ``closing`` and queues
   ``Task.EPISODE_CLOSE`` (so do the history import and the worker's idle sweep);
2. ``tasks.EpisodeTasks.process`` runs it: reads the transcript, then
   ``close.EpisodeCloser.prepare`` makes the summary, the verbatim ``chunks`` and the
   extraction (one structured LLM call, or ``statements``/``decisions`` rules without
   one), and ``EpisodeCloser.write`` stores them and queues ``Task.EPISODE_LEARN`` (and,
   when an LLM is configured but was not used, a delayed ``Task.EPISODE_UPGRADE``);
3. ``learn.EpisodeLearner.process`` embeds the chunks and summary and learns the
   extracted facts (``facts.learning``: dedup, supersession) and decisions.

Modules:
- ``lifecycle``: start, append, close (which only queues the work), transcript reads;
- ``chunks``: verbatim transcript chunks, embedded and full-text indexed for recall;
- ``close``: the one structured LLM call (or the rule-based fallback) at close;
- ``statements``, ``decisions``: the rule extractor's facts and decisions;
- ``learn``: the follow-up that learns the close's facts and decisions;
- ``tasks``: the handler of the close and upgrade tasks.
"""
