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
    "tests/integration/test_readme_example.py::test_doc_examples_run":
        "every python example of docs/ in processes",
}


def slow_reason(nodeid: str) -> str | None:
    path, _, rest = nodeid.partition("::")
    name = rest.split("[", 1)[0]
    return SLOW.get(path) or SLOW.get(f"{path}::{name}")


def mark_slow(items: list[pytest.Item]) -> None:
    for item in items:
        if slow_reason(item.nodeid) is not None:
            item.add_marker(pytest.mark.slow)
