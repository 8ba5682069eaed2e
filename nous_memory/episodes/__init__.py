"""Episodes: a conversation's lifecycle from start to closed, and what is learned from it.

The close pipeline, in the order it runs (each step a queued task, so a crash at any
instant resumes where it stopped; the tasks are named in ``nous_memory.work.tasks``,
their handlers and producers mapped in ``nous_memory.pipeline.PIPELINE``):

1. ``lifecycle.EpisodeManager.close`` marks the episode ``closing`` and queues
   ``Task.EPISODE_CLOSE`` (so do the history import and the worker's idle sweep);
2. ``tasks.EpisodeTasks.process`` runs it: reads the transcript, then
   ``close.EpisodeCloser.prepare`` makes the summary (the LLM's, or a rule summary),
   the verbatim ``chunks`` and, with an LLM, the extraction of facts and decisions in
   the same structured call; ``EpisodeCloser.write`` stores them and queues
   ``Task.EPISODE_LEARN`` (and, when an LLM is configured but was not used, a delayed
   ``Task.EPISODE_UPGRADE``, which reruns this step with the LLM);
3. ``learn.EpisodeLearner.process`` embeds the chunks and summary and learns the
   extracted facts (``facts.learning``: dedup, supersession) and decisions; an episode
   closed without an LLM extraction gets the rule extractor's facts here
   (``statements``) instead.

Modules:
- ``lifecycle``: start, append, close (which only queues the work), transcript reads;
- ``chunks``: verbatim transcript chunks, embedded and full-text indexed for recall;
- ``close``: the one structured LLM call (or the rule summary) at close;
- ``statements``: the rule extractor's facts (run by ``learn``);
- ``decisions``: matching a learned decision with the stored ones;
- ``learn``: the follow-up that learns the close's facts and decisions, or the rules';
- ``tasks``: the handler of the close and upgrade tasks.
"""
