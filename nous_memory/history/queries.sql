-- The history import's own queries.  `-- name: x` starts a query; the comment lines
-- after it say why it looks the way it does.

-- name: history_status
-- How far an agent's imports are: the sessions imported (episodes with a key), the
-- episodes whose close work is still open (an episode has its close or, after it, its
-- follow-up open, never both), and close work that failed for good.  Both counts read
-- one agent's rows of an index each.  $2: the tasks that process an episode.
SELECT (SELECT count(*) FROM episodes
        WHERE agent_id = $1 AND source_key IS NOT NULL) AS sessions,
       (SELECT count(*) FROM work_items
        WHERE agent_id = $1 AND task = ANY($2::text[])
          AND state IN ('pending', 'running')) AS closing,
       (SELECT count(*) FROM work_items
        WHERE agent_id = $1 AND task = ANY($2::text[])
          AND state = 'failed') AS failed;
