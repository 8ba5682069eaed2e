"""The slow tier: tests that take seconds each (a benchmark run, a kill, a fuzzer, the
browser, an outage, a whole build). CI runs everything; ``pytest -m "not slow"`` leaves
these out for the edit loop. A key is a test file, or a test in it (``file::name``, all
its parameters); the value says why it is slow."""

from __future__ import annotations

import pytest

SLOW: dict[str, str] = {
    # whole files
    "tests/integration/test_bench_smoke.py": "every benchmark script, small: each a process "
                                             "with its own database and model",
    "tests/integration/test_compose_up.py": "every compose service run as declared",
    "tests/integration/test_embedded.py": "starts embedded servers of its own",
    "tests/integration/test_cli.py": "nous-memory processes, one per command",
    "tests/integration/test_cli_portability.py": "nous-memory processes: export, import, "
                                                 "forget, round trips",
    "tests/integration/test_cli_remote.py": "CLI processes against a served instance",
    "tests/integration/test_mcp_conformance.py": "the MCP conformance suite on Node",
    "tests/integration/test_typescript_client.py": "the TypeScript client built and run on Node",
    "tests/integration/test_worker_durability.py": "workers SIGKILLed at each step of a close",
    "tests/integration/test_worker_outage.py": "two workers across a hard database outage",
    "tests/integration/test_outage_startup.py": "processes waiting for a database that is down",
    "tests/adversarial/test_outage.py": "restarts and hard stops under load",
    "tests/adversarial/test_fuzz_api.py": "schemathesis over a served instance",
    "tests/adversarial/test_fuzz_mcp.py": "both MCP transports fuzzed",
    "tests/browser/test_inspector_browser.py": "the inspector in headless Chromium",
    "tests/unit/test_docs_site.py": "whole Sphinx builds of docs/",
    # single tests
    "tests/integration/test_embedding_backends.py::test_onnx_agrees_with_torch_on_1000_varied_texts":
        "1,000 texts through both backends",
    "tests/integration/test_cli_episodes.py::test_episode_commands_and_usage":
        "a dozen nous-memory processes",
    "tests/integration/test_cli_facts.py::test_learn_confirm_and_history":
        "nous-memory processes",
    "tests/integration/test_backup.py::test_the_commands": "backup and restore processes",
    "tests/integration/test_agent_indexes.py::test_built_past_the_limit_dropped_below_half":
        "builds HNSW and GIN indexes over thousands of rows",
    "tests/integration/test_outage_errors.py::test_rest_under_random_connection_kills_answers_no_500":
        "a served instance under random connection kills",
    "tests/integration/test_doc_shell.py": "every shell command of docs/: nous-memory "
                                           "processes, two served instances, backups",
    "tests/integration/test_readme_example.py::test_doc_examples_run":
        "every python example of docs/ in processes",
    "tests/integration/test_cli_episodes.py": "nous-memory processes, a dozen a test",
    "tests/adversarial/test_deployment.py": "serve processes refusing bad deployments",
    "tests/integration/test_keys.py::test_revocation_reaches_a_second_replica_within_a_second":
        "two served replicas",
    "tests/integration/test_keys.py::test_cli_manages_keys": "nous-memory keys processes",
    "tests/integration/test_embedding_backends.py::test_a_damaged_or_half_written_export_is_never_used":
        "exports the model to ONNX again",
    "tests/integration/test_embedding_backends.py::test_commands_that_do_not_embed_import_no_model_runtime":
        "a nous-memory process per command",
    "tests/integration/test_mcp.py::test_stdio_server_bound_to_one_agent":
        "an MCP stdio server process",
    "tests/integration/test_mcp.py::test_stdio_server_reports_an_unreachable_database_in_one_line":
        "an MCP stdio server process",
    "tests/integration/test_facts.py::test_no_changed_value_is_merged_through_the_real_path":
        "every hand-written value pair through learn_fact and the model",
    "tests/integration/test_openai_agents_session.py::test_two_hundred_turns_fit_the_budget_and_keep_turn_three":
        "two hundred turns through the session",
    "tests/integration/test_jobs_scheduler.py::test_a_sigkilled_run_resumes_and_frees_the_lock":
        "a SIGKILLed job run",
    "tests/integration/test_jobs_scheduler.py::test_two_schedulers_fire_each_job_once_per_slot":
        "two schedulers waiting for their slots",
    "tests/integration/test_jobs_cli_api.py::test_scheduler_process_catches_up_and_stops_on_sigterm":
        "a scheduler process",
    "tests/integration/test_readme_example.py::test_the_tool_loop_runs_against_an_openai_compatible_server":
        "a process and a scripted LLM server",
    "tests/unit/test_context_sections.py::test_never_over_budget_and_whole_items":
        "hypothesis: 120 generated contexts",
    "tests/integration/test_client.py::test_client_and_store_agree_call_for_call":
        "every operation over a served instance and on the store",
    "tests/integration/test_client.py::test_behaviour_suite": "the behaviour suite, twice",
    "tests/integration/test_client.py::test_readme_client_example_runs":
        "a process against a served instance",
    "tests/integration/test_tools.py::test_long_memories_and_histories_give_bounded_results":
        "long memories and transcripts written first",
    "tests/integration/test_recall_surfaces.py::test_cli_recall_and_its_errors":
        "nous-memory processes",
    "tests/integration/test_history_surfaces.py::test_cli_ingest_of_a_benchmark_file_picks_its_samples":
        "nous-memory ingest processes",
    "tests/integration/test_api_episodes.py::test_app_with_a_given_store_runs_a_worker_only_on_request":
        "app lifespans with a worker",
    "tests/integration/test_api_episodes.py::test_app_that_opens_its_store_runs_the_worker_by_setting":
        "app lifespans that open a store and a worker",
    "tests/integration/test_context.py::test_sync_uses_the_llm_within_its_time_budget":
        "waits out the sync extraction's time budget",
    "tests/integration/test_conversation_tiers.py::test_trim_moves_the_transcript_tail_cold_and_back":
        "long transcripts closed, trimmed and restored",
    "tests/integration/test_conversation_tiers.py::test_an_upgrade_after_the_trim_reads_the_cold_tail":
        "long transcripts closed, trimmed and upgraded by the LLM",
    "tests/integration/test_portability.py::test_round_trip_into_another_agent_and_database":
        "a whole agent exported and imported into a second database",
    "tests/integration/test_observe.py::test_json_logs_of_episodes_working_memory_and_the_worker":
        "episodes, working memory and the worker with an echoing LLM",
    "tests/integration/test_recall_ranking.py::test_pins_scale_with_hundreds_of_user_stated_facts":
        "hundreds of facts written first",
}


def slow_reason(nodeid: str) -> str | None:
    path, _, rest = nodeid.partition("::")
    name = rest.split("[", 1)[0]
    return SLOW.get(path) or SLOW.get(f"{path}::{name}")


def mark_slow(items: list[pytest.Item]) -> None:
    for item in items:
        if slow_reason(item.nodeid) is not None:
            item.add_marker(pytest.mark.slow)
