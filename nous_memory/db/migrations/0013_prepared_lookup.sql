-- Schema version 13.
--
-- nous_prepared remembers in a session setting which statements its session prepared,
-- instead of reading pg_prepared_statements on every call: that view lists every
-- prepared statement with its text, and a Citus worker's session from the coordinator
-- holds one per shard group and read function it has served (at 160, about 1 ms a call).
-- On Citus it uses the agent's shards only while their placement is on its own node: a
-- copy a shard move leaves behind for a while is never read.

CREATE OR REPLACE FUNCTION nous_prepared(query text, agent text, statement text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    citus CONSTANT boolean := to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
    statement_name text := 'local';
    relations text[] := '{}';
    found text;
    rel text;
    shard bigint;
BEGIN
    IF citus THEN  -- a prepared statement per shard group (the agent's memories shard),
        -- used only while that shard is placed on this node: a copy a move left behind
        -- for a while is never read (the statement then runs on the distributed tables)
        shard := get_shard_id_for_distribution_column('memories', agent);
        IF NOT EXISTS (SELECT 1 FROM pg_dist_placement p
                       JOIN pg_dist_local_group g ON g.groupid = p.groupid
                       WHERE p.shardid = shard) THEN
            RETURN NULL;
        END IF;
        statement_name := shard::text;
    END IF;
    statement_name := format('nous_%s_%s_%s', query, statement_name, left(md5(statement), 8));
    -- a session setting remembers what the session prepared: pg_prepared_statements
    -- lists every statement with its text, a cost that grows with the shard groups a
    -- session serves (a Citus worker's session from the coordinator serves many).  A
    -- DEALLOCATE without DISCARD ALL (which resets the setting too) would leave the
    -- session's reads failing: nothing in the store or Citus does that
    IF current_setting('nous_prepared.' || statement_name, true) = 'yes' THEN
        RETURN statement_name;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_prepared_statements p WHERE p.name = statement_name) THEN
        -- prepared in a transaction that rolled back (a PREPARE stays, a setting does not)
        PERFORM set_config('nous_prepared.' || statement_name, 'yes', false);
        RETURN statement_name;
    END IF;
    -- each table the statement reads (after FROM, JOIN or a comma), by the relation that
    -- holds it here: on Citus the agent's shard, which must be on this node; on one
    -- PostgreSQL the table itself, schema-qualified
    FOR found IN SELECT DISTINCT m[1] FROM regexp_matches(
            statement, '(?:FROM|JOIN|,)\s+([a-z_]+)\M', 'g') AS m LOOP
        CONTINUE WHEN to_regclass(found) IS NULL;  -- a CTE, an alias, a column
        rel := NULL;
        IF citus THEN  -- (Citus's catalog only where it is)
            IF EXISTS (SELECT 1 FROM pg_dist_partition
                       WHERE logicalrelid = to_regclass(found)) THEN
                rel := shard_name(found::regclass, get_shard_id_for_distribution_column(
                    found::regclass, agent));
                IF to_regclass(rel) IS NULL THEN
                    RETURN NULL;  -- the shard is on another node: the statement as it is
                END IF;
            END IF;
        END IF;
        IF rel IS NULL THEN
            SELECT format('%I.%I', n.nspname, c.relname) INTO rel
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.oid = to_regclass(found);
        END IF;
        relations := relations || ARRAY[found, rel];
    END LOOP;
    FOR i IN 1 .. cardinality(relations) / 2 LOOP
        statement := regexp_replace(statement, '((?:FROM|JOIN|,)\s+)' || relations[2 * i - 1]
                                    || '\M', '\1' || relations[2 * i], 'g');
    END LOOP;
    EXECUTE format('PREPARE %I AS %s', statement_name, statement);
    PERFORM set_config('nous_prepared.' || statement_name, 'yes', false);
    RETURN statement_name;
END
$fn$;
