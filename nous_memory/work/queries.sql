-- The durable work queue: enqueue, claim under a lease, heartbeat, finish, retry.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- work queue

-- name: work_enqueue
-- $5 dedup_key ('' when one open item per (task, memory) is enough), $6 payload
INSERT INTO work_items (agent_id, task, memory_id, run_after, dedup_key, payload)
VALUES ($1, $2, $3, now() + make_interval(secs => $4), $5, $6)
ON CONFLICT (agent_id, task, memory_id, dedup_key) WHERE state IN ('pending', 'running') DO NOTHING;

-- name: worker_present
-- A live worker holds this session lock on a connection of its own for as long as it
-- works; when its process dies, the connection and so the lock go with it.
SELECT pg_advisory_lock(hashtext('nous_memory.worker'), hashtext($1));

-- name: work_claim
-- cross-agent: the worker serves every agent's queue; the claimed item is then handled
-- within its own agent.  An item is claimable again when its lease expired, or at once
-- when the worker holding it is known dead (its presence lock is gone; a worker that
-- never took one, or lost only its lock connection, is overtaken the same way, and its
-- late result is dropped by the lease check at completion).  For $4 seconds after the
-- server (re)started a missing lock proves nothing: every session ended with the old
-- server, and the live workers are taking their locks again.
UPDATE work_items w SET state = 'running', attempts = w.attempts + 1, locked_by = $2,
       lease_until = now() + make_interval(secs => $1), updated_at = now()
FROM (SELECT agent_id, id FROM work_items i
      WHERE (state = 'pending' AND run_after <= now())
         OR (state = 'running' AND attempts < $3
             AND (lease_until < now() OR (
                 pg_postmaster_start_time() < now() - make_interval(secs => $4)
                 AND NOT EXISTS (
                 SELECT 1 FROM pg_locks l
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                   AND l.database = (SELECT oid FROM pg_database
                                     WHERE datname = current_database())
                   AND l.classid = hashtext('nous_memory.worker')::oid
                   AND l.objid = hashtext(i.locked_by)::oid))))
      ORDER BY run_after, id
      LIMIT 1 FOR UPDATE SKIP LOCKED) c
WHERE w.agent_id = c.agent_id AND w.id = c.id
RETURNING w.agent_id, w.id, w.task, w.memory_id, w.attempts, w.payload;

-- name: work_release_own
-- cross-agent: a claim whose reply was lost with its connection may have committed,
-- leaving an item running under this live worker, which no other worker overtakes (its
-- presence lock is held) and which this one does not know it has: put back every item it
-- holds but is not working on ($2), the claim undone.
UPDATE work_items SET state = 'pending', attempts = greatest(attempts - 1, 0),
       locked_by = NULL, lease_until = NULL, run_after = now(), updated_at = now()
WHERE state = 'running' AND locked_by = $1 AND NOT (id = ANY($2::bigint[]));

-- name: work_fail_exhausted
-- cross-agent: items whose worker died on every one of their attempts stop here.
UPDATE work_items SET state = 'failed', lease_until = NULL, locked_by = NULL,
       last_error = COALESCE(last_error || '; ', '') || 'lease expired on the last attempt',
       updated_at = now()
WHERE state = 'running' AND lease_until < now() AND attempts >= $1;

-- name: work_extend_lease
-- Heartbeat while slow work (LLM calls) runs, so a live worker keeps its item.
UPDATE work_items SET lease_until = now() + make_interval(secs => $4), updated_at = now()
WHERE agent_id = $1 AND id = $2 AND locked_by = $3 AND state = 'running'
RETURNING id;

-- name: work_commit_lock_wait
-- How long a result transaction waits for a lock (the agent's, then any row's on one
-- PostgreSQL; on Citus the coordinator's waits, the agent's lock among them) before it
-- gives up and the item is put back: an erasure or import of the agent holds the first.
SELECT set_config('lock_timeout', $1, true);

-- name: work_complete
-- Inside the result transaction: only the worker that still holds the lease may finish.
UPDATE work_items SET state = 'done', lease_until = NULL, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND locked_by = $3 AND state = 'running'
RETURNING id;

-- name: work_retry
-- $7 false: the item lost to another transaction (an erasure or import of the agent held
-- its lock), not its own fault: the attempt its claim counted is given back, so it is
-- neither failed for good nor run degraded as a last try for having waited.
UPDATE work_items SET state = CASE WHEN $7 AND attempts >= $4 THEN 'failed' ELSE 'pending' END,
       attempts = attempts - CASE WHEN $7 THEN 0 ELSE 1 END,
       run_after = now() + make_interval(secs => $5), last_error = $6, locked_by = NULL,
       lease_until = NULL, updated_at = now()
WHERE agent_id = $1 AND id = $2 AND locked_by = $3 AND state = 'running'
RETURNING state;

-- name: work_open_for
-- Whether a memory still has open items of the given tasks (e.g. a close's follow-up).
SELECT EXISTS (SELECT 1 FROM work_items
               WHERE agent_id = $1 AND memory_id = $2 AND task = ANY($3::text[])
                 AND state IN ('pending', 'running'));

-- name: work_items_of_agent
-- An owner's view of the queue: open items first, then the most recently changed.
SELECT id, task, memory_id, state, attempts, run_after, lease_until, locked_by,
       last_error, created_at, updated_at
FROM work_items WHERE agent_id = $1
ORDER BY state IN ('pending', 'running') DESC, updated_at DESC, id DESC
LIMIT $2;

-- name: work_counts_of_agent
SELECT task, state, count(*) AS n FROM work_items WHERE agent_id = $1
GROUP BY task, state ORDER BY task, state;

-- name: work_queue_depths
-- What /metrics shows of the queue, every agent at once: open items per task and state,
-- and the age of the oldest (by run_after: a retried item waits from its new due time).
-- Reads the open rows only, through the partial index work_items_ready.
SELECT task, state, count(*) AS items,
       coalesce(extract(epoch FROM now() - min(run_after)), 0)::float8 AS oldest_s
FROM work_items WHERE state IN ('pending', 'running')
GROUP BY task, state ORDER BY task, state;
