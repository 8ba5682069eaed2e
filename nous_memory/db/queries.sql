-- The store's own bookkeeping: migrations, store settings, the server, the scan pool's sessions.
-- `-- name: x` starts a query; the comment lines after it say why it looks the way it
-- does.  Every query on tenant data filters by agent_id ($1 by convention); the few
-- that read across agents say so (tests/unit/test_queries.py lists them).  The loader
-- (nous_memory/db/queries.py) reads every package's queries.sql into one namespace.

-- ---------------------------------------------------------------- migrations and server

-- name: migration_lock
-- Serialises concurrent migrators for the rest of the transaction.
SELECT pg_advisory_xact_lock(hashtext($1));

-- name: schema_version_table_exists
SELECT to_regclass('schema_version') IS NOT NULL;

-- name: schema_version_current
SELECT max(version) FROM schema_version;

-- name: schema_version_record
INSERT INTO schema_version (version, name) VALUES ($1, $2);

-- name: pgvector_available
SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector');

-- name: store_meta_all
SELECT key, value FROM store_meta ORDER BY key;

-- name: store_meta_get
SELECT value FROM store_meta WHERE key = $1;

-- name: store_meta_set
INSERT INTO store_meta (key, value) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now();

-- name: store_meta_add
-- Only when absent: the first process to make a shared secret wins, the others read it.
INSERT INTO store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING;

-- name: database_exists
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1);

-- name: server_info
SELECT current_setting('server_version') AS server_version,
       (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector_version,
       current_database() AS database;

-- name: citus_installed
-- Whether this is a Citus coordinator (docs/scaling.md): the store then plans no statement
-- generically, since Citus routes a statement to an agent's shard by its bound agent_id.
SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus');

-- name: citus_agent_node
-- On a Citus coordinator only (it reads Citus's own catalog): the active primary node
-- holding the agent's shard of memories (every table of the agent is co-located with
-- it), to which the store sends the agent's read function calls itself.
SELECT n.nodename, n.nodeport
FROM pg_dist_placement p
JOIN pg_dist_node n ON n.groupid = p.groupid
WHERE p.shardid = get_shard_id_for_distribution_column('memories', $1::text)
  AND n.isactive AND n.noderole = 'primary' AND n.hasmetadata
LIMIT 1;

-- name: citus_local_shard_agents
-- On a Citus node only (it reads Citus's own catalog): one made-up agent name for each
-- shard group of memories placed on this node, found among $1 candidates (with 1,000
-- shard groups, 20,000 candidates miss any with a chance of about 2e-6).  A worker
-- connection prepares its reads for each (connector.py, _prepare_shard_groups), so no
-- request pays for it.
SELECT DISTINCT ON (p.shardid) a.agent
FROM pg_dist_placement p
JOIN pg_dist_local_group g ON g.groupid = p.groupid
JOIN (SELECT 'nous-warm-' || i AS agent,
             get_shard_id_for_distribution_column('memories', 'nous-warm-' || i) AS shardid
      FROM generate_series(1, $1::integer) AS i) AS a ON a.shardid = p.shardid
ORDER BY p.shardid, a.agent;

-- name: citus_reads_delegated
-- On a Citus coordinator only (it reads Citus's own catalog): whether memories is
-- distributed and every read function (schema.sql, "reads as functions"; $1 their names)
-- is distributed by its agent argument, co-located with memories.  Then the store calls
-- the functions (the *_delegated queries), which the coordinator hands whole to the
-- agent's worker; otherwise (the citus script not run since the functions came) it runs
-- the statements.
SELECT count(*) = cardinality($1::text[])
FROM pg_dist_object o
JOIN pg_dist_partition p ON p.logicalrelid = 'memories'::regclass AND p.partmethod = 'h'
                        AND p.colocationid = o.colocationid
WHERE o.classid = 'pg_proc'::regclass AND o.distribution_argument_index = 0
  AND o.objid = ANY(ARRAY(SELECT to_regproc(f)::oid FROM unnest($1::text[]) AS f));

-- name: scan_session_settings
-- The scan pool's sessions (db/connector.py), set once per connection; they run only a
-- small agent's recall.  Its statement needs no plan of its own: a generic plan saves
-- 5-8 ms of planning per call.  Its rows are read through agent_id indexes: a generic
-- plan guesses an agent's share of a table from the number of agents, and with one large
-- agent among few it would scan them all, so sequential scans are off.
SELECT set_config('plan_cache_mode', 'force_generic_plan', false),
       set_config('enable_seqscan', 'off', false);

-- ---------------------------------------------------------------- schema drift

-- name: catalog_columns
-- Every column of the store's schema as the catalog has it (db/drift.py compares);
-- tables that belong to an extension (PostGIS's spatial_ref_sys, ...) are not ours.
SELECT c.table_name::text AS table_name, c.column_name::text AS column_name,
       c.udt_name::text AS udt_name, c.is_nullable = 'YES' AS nullable
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
  AND NOT EXISTS (
      SELECT 1 FROM pg_depend d
      WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
        AND d.objid = format('%I.%I', c.table_schema, c.table_name)::regclass);

-- name: catalog_views
SELECT table_name::text AS view_name FROM information_schema.views
WHERE table_schema = current_schema();

-- name: catalog_primary_keys
SELECT cls.relname::text AS table_name, a.attname::text AS column_name
FROM pg_index i
JOIN pg_class cls ON cls.oid = i.indrelid
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indisprimary AND cls.relnamespace = current_schema()::regnamespace;

-- name: catalog_agent_tables
-- Every table of the store that holds tenant rows (it has an agent_id column): what
-- forgetting an agent empties, and what an export must account for.
SELECT c.table_name::text AS table_name
FROM information_schema.columns c
JOIN information_schema.tables t
  ON t.table_schema = c.table_schema AND t.table_name = c.table_name
WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
  AND c.column_name = 'agent_id'
ORDER BY 1;

-- ---------------------------------------------------------------- backups

-- name: backup_checksum_statements
-- One statement per table of the store, built here with %I quoting: its rows counted
-- and their whole text hashed and summed, per agent where the table has an agent_id
-- (a backup covers every agent; the statements read across agents on purpose).  Run in
-- the backup's own snapshot, and again after a restore, to verify it.
SELECT c.relname::text AS table_name,
       format('SELECT %s AS agent_id, count(*) AS n, '
              'COALESCE(sum(hashtextextended(t::text, 0)::numeric), 0)::text AS checksum '
              'FROM %I.%I t%s',
              CASE WHEN a.attname IS NULL THEN '''''' ELSE 't.agent_id' END,
              n.nspname, c.relname,
              CASE WHEN a.attname IS NULL THEN '' ELSE ' GROUP BY t.agent_id' END
       ) AS statement
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a
  ON a.attrelid = c.oid AND a.attname = 'agent_id' AND NOT a.attisdropped
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY c.relname;

-- name: backup_text_settings
-- A row's text depends on the session's settings: fix them, so that a checksum taken
-- on one machine matches the same rows read on another.
SELECT set_config('TimeZone', 'UTC', true), set_config('DateStyle', 'ISO, MDY', true),
       set_config('IntervalStyle', 'postgres', true),
       set_config('extra_float_digits', '1', true);

-- name: backup_export_snapshot
-- The backup's moment: pg_dump reads the database as this transaction sees it.
SELECT pg_export_snapshot();

-- name: database_relations
-- What a restore would overwrite: the relations of the schema (an empty database has
-- none; the extensions' functions and types do not count).
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'S');
