"""Durable deferred work: rows in ``work_items`` claimed with ``FOR UPDATE SKIP LOCKED``.

- ``tasks``: every task's name, and the deferred flow they form;
- ``queue``: enqueue, the records a task handler sees, completion under the lease;
- ``worker``: claims, runs handlers, heartbeats, retries with backoff.
"""
