"""Every script in bench/ runs here once, small, the way a person runs it.

``python bench/NAME.py --small-flags`` as a subprocess from the repository's root, its
database a fresh one on the session's embedded server (NOUS_MEMORY_DATABASE_URL), so no
script pays for starting its own.  Checked: exit code 0, every stdout line is a ``#``
comment or ``name: value`` with a finite number in the range the metric can take, and the
headline metric bench/README.md names is the last one.  Never a timing threshold: the
numbers are the benchmarks' business, not the suite's.

A new script gets one line in SMOKES (``test_every_bench_script_has_a_smoke_run`` fails
until it has one).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nous_memory.db import EmbeddedServer
from nous_memory.testing import JSONReply, ScriptedLLMServer, ScriptStep
from tests.conftest import create_database, drop_database

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
# modules the scripts import, not benchmarks
HELPERS = {"backends.py", "schema_replies.py", "shared_data.py", "staleness_cases.py"}
TIMEOUT_S = 300.0  # a stalled script fails its test instead of stalling the suite


@dataclass(frozen=True, kw_only=True)
class Smoke:
    argv: tuple[str, ...]
    headline: str
    database: bool = True  # NOUS_MEMORY_DATABASE_URL: a fresh, empty database
    llm: bool = False  # NOUS_MEMORY_LLM_BASE_URL/_MODEL: a scripted model (reading_model)
    before: str | None = None  # a script whose smoke run fills the database first
    data: str | None = None  # the shared evaluation file it reads (shared/data/<data>)


CONTEXT_LATENCY = ("--memories", "1000", "--per-agent", "500", "--chunks-per-agent", "20",
                   "--real-agents", "1", "--centroids", "20", "--queries", "3", "--warmup", "1")

# script -> its smallest run that still takes every path, and its headline metric
SMOKES: dict[str, Smoke] = {
    "calibrate_dedup.py": Smoke(argv=("--limit", "200"),
                                data="stsb/dev.csv", headline="chosen_rule_threshold",
                                database=False),
    "client.py": Smoke(argv=("--memories", "30", "--calls", "2", "--warmup", "1",
                             "--cli-runs", "1"), headline="cli_recall_url_s_p50"),
    "capacity.py": Smoke(argv=("--write-sample", "20", "--p95-ms", "10"),
                         headline="agents_per_node_in_memory", before="context_latency.py"),
    "context_latency.py": Smoke(argv=CONTEXT_LATENCY, headline="context_ms_p50"),
    "dedup_eval.py": Smoke(argv=("--limit", "40", "--learn-n", "10"),
                           data="stsb/dev.csv", headline="dedup_f1"),
    "embeddings.py": Smoke(argv=("--queries", "5", "--batches", "1", "--agreement", "20",
                                 "--rounds", "1"), headline="onnx_over_torch_query_p50",
                           database=False),
    "episode_close.py": Smoke(argv=("--limit-sessions", "2"),
                              data="locomo/locomo-dev.json", headline="close_overhead_ms_p50"),
    "fact_extraction.py": Smoke(argv=("--limit", "2"),
                                data="locomo/locomo-dev.json",
                                headline="observation_coverage_rules", database=False,
                                llm=True),
    "fairness.py": Smoke(argv=("--bulk", "500", "--transcript", "100", "--queries", "5"),
                         headline="fairness_p95_ratio"),
    "inspector.py": Smoke(argv=("--memories", "1000", "--messages", "250", "--requests", "3",
                                "--warmup", "1"), headline="inspector_list_ms_p95"),
    "integrations.py": Smoke(argv=("--memories", "30", "--turns", "6", "--calls", "2",
                                    "--warmup", "1"),
                             headline="integrations_overhead_ms_p50"),
    "jobs_scale.py": Smoke(argv=("--episodes", "300", "--agents", "3", "--batch", "40",
                                 "--one-agent"), headline="rows_per_s"),
    "large_agent_graph.py": Smoke(argv=("--rows", "2000", "--queries", "5",
                                         "--build-memory", "64MB"),
                                   headline="halfvec_ms_p50"),
    "longmemeval.py": Smoke(argv=("--questions", "2", "--sessions", "3"),
                            data="longmemeval/longmemeval-s-dev.json.gz",
                            headline="lme_turn_recall_any@10"),
    "locomo_recall.py": Smoke(argv=("--conversations", "1", "--sessions", "2", "--trim-all",
                                    "--archive-all", "--speaker"), data="locomo/locomo-dev.json",
                              headline="locomo_recall@10_cat1-4"),
    "mcp_fuzz.py": Smoke(argv=("--requests", "20"), headline="rows_changed_by_invalid_calls"),
    "operations.py": Smoke(argv=("--agents", "2", "--load-agents", "2", "--load-memories",
                                 "20", "--recalls", "2", "--scripted-llm"),
                           headline="operations_failed"),
    "outage.py": Smoke(argv=("--restarts", "2", "--hard", "1", "--hard-down-s", "1",
                             "--clients", "2", "--gap-s", "0.5", "--backup-memories", "20",
                             "--backup-episodes", "2"),
                       headline="outage_checks_failed", database=False),
    "portability.py": Smoke(argv=("--memories", "50"), headline="export_rows_per_s"),
    "redaction.py": Smoke(argv=("--limit", "40"), headline="secret_recall", database=False),
    "soak.py": Smoke(argv=("--clients", "2", "--minutes", "0.1", "--agents", "2"),
                     headline="soak_errors"),
    "people.py": Smoke(argv=("--groups", "1"), headline="people_attribution"),
    "staleness.py": Smoke(argv=("--cases", "3", "--plans", "1"),
                          headline="stale_current_first"),
    "tenancy.py": Smoke(argv=("--agents", "40", "--max-size", "60", "--large", "1",
                              "--large-size", "400", "--topics", "20", "--queries", "3",
                              "--warmup", "1", "--build-memory", "64MB",
                              # the large agent takes the index path through its own indexes
                              "--exact-scan-max-rows", "300", "--own-index-rows", "300"),
                        headline="tenancy_min_recall_at_10"),
    "tools.py": Smoke(argv=("--memories", "30", "--calls", "2", "--warmup", "1",
                            "--baseline", str(ROOT)),  # this checkout as its own baseline
                      headline="mcp_overhead_ms_p50"),
    "working_memory.py": Smoke(argv=("--limit", "1", "--turns", "120", "--window", "1024"),
                               data="locomo/locomo-dev.json",
                               headline="max_prompt_tokens_over_budget"),
    "write_throughput.py": Smoke(argv=("--n", "64", "--rounds", "1"),
                                 headline="remember_many_over_embed"),
}

# the range a metric can take, by its name; the first pattern that matches decides
INF = math.inf
RANGES: list[tuple[str, float, float]] = [
    (r"overhead|growth_pct", -INF, INF),  # differences: noise can make them negative
    (r"auc", 0.0, 1.0),
    (r"cosine", -1.0, 1.0),
    (r"_ms|_s$|_s_|per_s|_mb|bytes|_over_|ratio", 0.0, INF),
    (r"recall|precision|f1|coverage|share|retention|threshold|^stale_", 0.0, 1.0),
    (r"", 0.0, INF),  # counts, sizes, rates
]
LINE = re.compile(r"(?P<name>[A-Za-z0-9_@.\-]+): (?P<value>\S+)")


def metric_range(name: str) -> tuple[float, float]:
    return next((lo, hi) for pattern, lo, hi in RANGES if re.search(pattern, name))


def metrics(stdout: str) -> list[tuple[str, float]]:
    """The ``name: value`` lines in order; fails on any other line."""
    out = []
    for line in stdout.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        matched = LINE.fullmatch(line)
        assert matched, f"not a '# comment' or 'name: value' line: {line!r}"
        try:
            value = float(matched["value"])
        except ValueError:
            raise AssertionError(f"not a number: {line!r}") from None
        out.append((matched["name"], value))
    return out


def reading_model(request: dict[str, Any]) -> ScriptStep:
    """A stand-in model for episode extraction: the first sentence of the first three
    messages of the transcript as facts."""
    transcript = str(request["messages"][-1]["content"])
    said = re.findall(r"<message [^>]*>(.*?)</message>", transcript, re.S)
    facts = [{"content": text.split(". ")[0][:300]} for text in said[:3]]
    return JSONReply(content={"title": "A conversation", "summary": "Two people talked.",
                              "facts": facts})


async def run_script(script: str, argv: tuple[str, ...], env: dict[str, str]) -> str:
    """Its stdout; fails with its stderr unless it exits 0 in time."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(BENCH / script), *argv, cwd=ROOT, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True)  # its own process group: a timeout ends its children too
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except TimeoutError:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        pytest.fail(f"{script} {' '.join(argv)} ran over {TIMEOUT_S:.0f} s")
    command = f"python bench/{script} {' '.join(argv)}"
    assert proc.returncode == 0, (
        f"{command} exited {proc.returncode}:\n{stderr.decode(errors='replace')[-4000:]}")
    return stdout.decode()


@contextlib.asynccontextmanager
async def environment(smoke: Smoke, server: EmbeddedServer) -> AsyncIterator[dict[str, str]]:
    """This process's environment without any NOUS_MEMORY_* setting of its own, plus the
    database and the model the smoke run asks for."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_MEMORY_")}
    env["HF_HUB_OFFLINE"] = "1"
    async with contextlib.AsyncExitStack() as stack:
        if smoke.database:
            dsn = await create_database(server, None)
            stack.push_async_callback(drop_database, server, dsn)
            env["NOUS_MEMORY_DATABASE_URL"] = dsn
        if smoke.llm:
            llm = await stack.enter_async_context(ScriptedLLMServer(default=reading_model))
            env |= {"NOUS_MEMORY_LLM_BASE_URL": llm.base_url,
                    "NOUS_MEMORY_LLM_MODEL": "scripted"}
        yield env


def shared_file(relative: str) -> Path:
    """Where the bench scripts find a shared evaluation file (bench/shared_data.py)."""
    wanted = Path("shared") / "data" / relative
    return next((parent / wanted for parent in ROOT.parents if (parent / wanted).exists()),
                ROOT.parent / wanted)


@pytest.mark.parametrize("script", sorted(SMOKES))
async def test_bench_script_runs_small(script: str, pg_server: EmbeddedServer) -> None:
    smoke = SMOKES[script]
    if smoke.data is not None and not shared_file(smoke.data).exists():
        pytest.skip(f"the evaluation data {smoke.data} is not beside this checkout "
                    "(shared/data in an ancestor folder, as bench/shared_data.py looks)")
    async with environment(smoke, pg_server) as env:
        if smoke.before is not None:
            await run_script(smoke.before, SMOKES[smoke.before].argv, env)
        stdout = await run_script(script, smoke.argv, env)
    found = metrics(stdout)
    assert found, f"{script} printed no 'name: value' line:\n{stdout}"
    for name, value in found:
        lo, hi = metric_range(name)
        assert math.isfinite(value) and lo <= value <= hi, (
            f"{script}: {name} = {value}, outside [{lo}, {hi}]")
    assert found[-1][0] == smoke.headline, (
        f"{script}: last metric {found[-1][0]}, bench/README.md's headline {smoke.headline}")


def test_every_bench_script_has_a_smoke_run() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")} - HELPERS
    assert scripts - set(SMOKES) == set(), "bench scripts without a line in SMOKES"
    assert set(SMOKES) - scripts == set(), "SMOKES names scripts that are not in bench/"


def test_every_headline_is_the_one_bench_readme_names() -> None:
    readme = (BENCH / "README.md").read_text()
    for script, smoke in SMOKES.items():
        section = readme.split(f"## {script}\n", 1)
        assert len(section) == 2, f"bench/README.md has no section for {script}"
        text = section[1].split("\n## ", 1)[0]
        assert f"`{smoke.headline}`" in text, (
            f"bench/README.md's {script} section does not name `{smoke.headline}`")


@pytest.mark.parametrize(("name", "expected"), [
    ("recall@10_cat1-4", (0.0, 1.0)), ("recall_ms_p50", (0.0, INF)),
    ("trim_recall_ratio", (0.0, INF)), ("cosine_roc_auc", (0.0, 1.0)),
    ("agreement_cosine_min", (-1.0, 1.0)), ("mcp_overhead_ms_p50", (-INF, INF)),
    ("dedup_f1", (0.0, 1.0)), ("observation_coverage_rules_at_0.4", (0.0, 1.0)),
    ("episodes", (0.0, INF)), ("learn_per_s", (0.0, INF)),
])
def test_metric_ranges(name: str, expected: tuple[float, float]) -> None:
    assert metric_range(name) == expected


def test_metrics_reject_what_is_not_a_metric_line() -> None:
    assert metrics("# a comment: 3\nrecall@10_all: 0.5\nn: 12\n") == [
        ("recall@10_all", 0.5), ("n", 12.0)]
    for bad in ("recall: 0.5  # 3 questions", "pairs: 300 (97 duplicates)",
                "dev_at_chosen: P=0.9 R=0.8", "threshold: high", "just text"):
        with pytest.raises(AssertionError):
            metrics(bad)
