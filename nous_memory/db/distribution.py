"""Where every table lives on Citus (distributed PostgreSQL sharded by ``agent_id``).

The one statement of each table's role and of the queries that read across agents:
``docs/scaling.md`` explains it, ``citus_script()`` turns it into the commands an operator
runs on the coordinator, and the test suite checks it against a migrated database's
catalog and every named query's plan.  Nothing here needs Citus to import or run.
"""

from __future__ import annotations

from typing import Final

DISTRIBUTION_COLUMN: Final = "agent_id"

# Tenant data, distributed by agent_id and co-located with `memories`, in an order in
# which every table a foreign key references is distributed before the table holding it.
DISTRIBUTED: Final[tuple[str, ...]] = (
    "memories", "episodes", "decisions", "facts", "procedures", "censors",
    "episode_messages", "episode_chunks", "episode_extractions", "memory_events",
    "memory_archive", "extraction_cache", "embedding_cache", "llm_calls",
    "conversation_policies", "conversation_state", "conversation_summaries",
    "conversation_analyses", "agent_settings",
)

# Plain tables on the coordinator (no Citus metadata): every process connects to the
# coordinator, so they behave exactly as on one machine.
COORDINATOR_LOCAL: Final[dict[str, str]] = {
    "schema_version": "migration bookkeeping: read and written by the migration runner at "
                      "start, under its advisory lock, on the node every process connects to",
    "store_meta": "database-wide facts fixed at initialisation (embedding dimension and "
                  "model), read once per process open; no query joins it with tenant data",
    "job_runs": "one row per maintenance job run, cluster-wide bookkeeping of the "
                "schedulers (advisory locks and the once-per-slot check live on the "
                "coordinator too); no query joins it with tenant data",
    "agent_erasures": "receipts of forgotten agents (a hash of the id, counts, who asked): "
                      "no agent_id on purpose, so erasing an agent keeps its receipt; written "
                      "once per erasure in the erasing transaction",
    "api_keys": "keys made at run time: looked up by the SHA-256 of a presented secret "
                "on every authenticated request and changed by their owner; no agent_id "
                "(a key may act for many agents) and no query joins it with tenant data",
    "work_items": "the durable work queue: the worker claims across agents with FOR UPDATE "
                  "SKIP LOCKED (Citus runs row locks on router queries only) and tells dead "
                  "workers by their presence locks in pg_locks, which is per node: both hold "
                  "only where every worker connects, the coordinator",
}

# Coordinator-local tables registered in Citus's metadata (citus_add_local_table_to_metadata:
# the rows stay on the coordinator): a transaction that writes one of them and a shard
# on a worker then commits on both with two-phase commit.  The queue is written inside
# tenant transactions (closing an episode marks it on its shard and queues its item).
# Not job_runs: Citus would then refuse its now() updates, and no tenant transaction
# writes it.
REGISTERED_LOCAL: Final[tuple[str, ...]] = ("work_items",)

# Reference tables (a copy on every node): none; a table joined with distributed ones in
# queries that run on the workers would go here.
REFERENCE: Final[dict[str, str]] = {}

# Named queries that read or write more than one agent's rows, with the reason each is
# safe.  Every other named query that touches a distributed table filters agent_id by one
# value on every distributed table it reads or writes (Citus routes it to one shard).
_SWEEP = ("maintenance sweep in key-ordered batches over every agent: Citus runs it on "
          "every shard in parallel; joins between distributed tables are on agent_id "
          "(co-located) and every row written keeps its own agent_id")
_AGENTS = ("a maintenance sweep's read-only list of the agents it has work for (a "
           "multi-shard GROUP BY agent_id, a page at a time); the sweep's batches then run "
           "per agent, routed to one shard group")
_WHOLE_TABLE = ("a maintenance sweep's batch over every agent at once, on a single "
                "PostgreSQL only (its row locks over a key range are refused by Citus, which "
                "runs the per-agent form instead, see SINGLE_NODE_ONLY): one pass in "
                "primary-key order (a batch's keys) or through an index, in bounded "
                "batches; joins are on agent_id and every row written keeps its own "
                "agent_id")
CROSS_TENANT_QUERIES: Final[dict[str, str]] = {
    "work_claim": "the work queue is coordinator-local (see work_items); the claimed item "
                  "is then handled by code scoped to its own agent",
    "work_fail_exhausted": "coordinator-local work queue",
    "work_release_own": "coordinator-local work queue: the items one worker holds",
    "work_queue_depths": "the /metrics gauges of the coordinator-local work queue: counts "
                         "and ages per task, no agent's data",
    "requeue_stuck_work": "coordinator-local work queue",
    "known_agents": "the inspector's agent list for a key of every agent: agent ids only, "
                    "read-only (a loose index scan on one PostgreSQL; Citus does not run "
                    "its recursive CTE across shards, so on Citus the store uses "
                    "known_agents_distributed)",
    "known_agents_distributed": "known_agents on Citus: a multi-shard GROUP BY agent_id "
                                "(each shard groups its own agents), read-only",
    "idle_open_episodes": "the worker's read-only sweep for idle open episodes (a "
                          "multi-shard SELECT joined on agent_id); each hit is then closed "
                          "within its own agent",
    "episode_agents": _AGENTS,
    "retention_agents": _AGENTS,
    "lifecycle_promote_agents": _AGENTS,
    "lifecycle_flag_agents": _AGENTS,
    "lifecycle_retire_agents": _AGENTS,
    "expired_cache_agents": _AGENTS,
    "episode_keys": "the whole-table sweeps' next batch of keys (read-only, single "
                    "PostgreSQL only; on Citus episode_key_range_agent)",
    "trim_episodes_all_agents": _WHOLE_TABLE,
    "trim_transcripts_all_agents": _WHOLE_TABLE,
    "archive_episodes_all_agents": _WHOLE_TABLE,
    "retention_all_agents": _WHOLE_TABLE,
    "lifecycle_promote_facts_all_agents": _WHOLE_TABLE,
    "lifecycle_flag_procedures_all_agents": _WHOLE_TABLE,
    "lifecycle_retire_censors_all_agents": _WHOLE_TABLE,
    "expire_extraction_cache_all_agents": _WHOLE_TABLE,
    "agent_index_candidates": "the indexes job's read-only list of the largest agents (a "
                              "multi-shard GROUP BY agent_id); each agent's own indexes "
                              "are then built with its id in their predicate",
    "slots_unread_facts": "the slot reader's read-only, multi-shard page of facts stored "
                          "before slots, in key order (optional agent filter); each page "
                          "is then written agent by agent (slots_set)",
    "backfill_upgrade_candidates": "the fact backfill's read-only, multi-shard page of "
                                   "candidate episodes in key order (optional agent filter)",
    "backfill_upgrades_enqueue": "the fact backfill's queueing of those candidates into the "
                                 "coordinator-local work queue; every item keeps its own "
                                 "agent_id",
    "backfill_upgrades_left": "the fact backfill's count of episodes still waiting "
                              "(read-only, multi-shard)",
    "backfill_rules_candidates": "the rule backfill's read-only, multi-shard page of "
                                 "candidate episodes in key order (optional agent filter)",
    "backfill_rules_enqueue": "the rule backfill's queueing into the coordinator-local "
                              "work queue; every item keeps its own agent_id",
    "compress_candidates": _SWEEP + " (read-only)",
    "compress_candidates_count": _SWEEP + " (read-only)",
    "stale_embeddings_batch": _SWEEP + " (read-only)",
    "reembed_write": _SWEEP + "; each row is matched by (agent_id, id) and its version",
    "stale_chunk_embeddings_batch": _SWEEP + " (read-only)",
    "reembed_chunks_write": _SWEEP + "; each chunk is matched by its full key",
    "count_stale_embeddings": _SWEEP + " (read-only)",
}


# Named queries the store runs only on a single PostgreSQL, each with the one it runs on
# Citus instead (the store knows which it is on: Database.distributed).
SINGLE_NODE_ONLY: Final[dict[str, str]] = {
    "known_agents": "known_agents_distributed",
    # the jobs' whole-table sweeps (maintenance/batches.py)
    "episode_keys": "episode_key_range_agent",
    "trim_episodes_all_agents": "trim_episodes_batch",
    "trim_transcripts_all_agents": "trim_transcripts_batch",
    "archive_episodes_all_agents": "archive_episodes_batch",
    "retention_all_agents": "retention_batch",
    "lifecycle_promote_facts_all_agents": "lifecycle_promote_facts",
    "lifecycle_flag_procedures_all_agents": "lifecycle_flag_procedures",
    "lifecycle_retire_censors_all_agents": "lifecycle_retire_censors",
    "expire_extraction_cache_all_agents": "expire_extraction_cache",
}


# The read path's statements as functions of one agent (schema.sql, "reads as
# functions"): named query -> its function.  The citus script distributes each by its
# agent argument, co-located with `memories`, so that the coordinator hands a call whole
# to the agent's worker; the store then runs `<query>_delegated` instead of the query.
DELEGATED_READS: Final[dict[str, str]] = {
    "recall_agent_rows": "nous_recall_agent_rows",
    "recall": "nous_recall",
    "recall_current_of_slots": "nous_recall_current_of_slots",
    "context_always_on": "nous_context_always_on",
    "context_tier2": "nous_context_tier2",
}
DELEGATION_ARGUMENT: Final = "agent"

# Named queries that read Citus's own catalog: run only where the citus extension is
# (plain PostgreSQL has no such tables, so they neither prepare nor plan there).
CITUS_CATALOG_QUERIES: Final[dict[str, str]] = {
    "citus_reads_delegated": "whether the read functions are distributed (pg_dist_object)",
    "citus_agent_node": "the node holding an agent's shards, for reads sent to it "
                        "(pg_dist_placement, pg_dist_node)",
    "citus_local_shard_agents": "an agent name per shard group placed on this node, for "
                                "preparing a worker connection's reads (pg_dist_placement)",
}


def citus_script() -> str:
    """The SQL an operator runs once on the Citus coordinator of a migrated database."""
    first = DISTRIBUTED[0]
    lines = [
        "-- nous-memory on Citus: run once on the coordinator after `nous-memory db init`",
        "-- (rows already there are copied into the shards while the tables are locked).",
        "CREATE EXTENSION IF NOT EXISTS citus;",
        f"SELECT create_distributed_table('{first}', '{DISTRIBUTION_COLUMN}');",
    ]
    lines += [f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}', "
              f"colocate_with => '{first}');" for table in DISTRIBUTED[1:]]
    lines += [f"SELECT create_reference_table('{table}');" for table in REFERENCE]
    lines.append("-- the read path's functions, each handed whole to the worker holding "
                 "its agent:")
    lines += [f"SELECT create_distributed_function('{function}'::regproc, "
              f"distribution_arg_name => '{DELEGATION_ARGUMENT}', "
              f"colocate_with => '{first}');" for function in DELEGATED_READS.values()]
    lines.append("-- coordinator-local, registered so that a transaction writing it and a "
                 "shard commits with 2PC:")
    lines += [f"SELECT citus_add_local_table_to_metadata('{table}');"
              for table in REGISTERED_LOCAL]
    lines.append("-- coordinator-local, left as they are: "
                 + ", ".join(sorted(set(COORDINATOR_LOCAL) - set(REGISTERED_LOCAL))))
    lines += [
        "-- SET LOCAL in a transaction reaches the workers it runs on (recall's scan "
        "settings);",
        "-- new sessions of this database take it:",
        "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET citus.propagate_set_commands "
        "= %L', current_database(), 'local'); END $$;",
    ]
    return "\n".join(lines) + "\n"
