"""Episodes: a conversation's lifecycle from start to closed, and what is learned from it.

- ``lifecycle``: start, append, close (which only queues the work), transcript reads;
- ``chunks``: verbatim transcript chunks, embedded and full-text indexed for recall;
- ``close``: the one structured LLM call (or the rule-based fallback) at close;
- ``learn``: the follow-up that learns the close's facts and decisions;
- ``tasks``: the work-queue handlers that drive the above.
"""
