"""Process-wide Prometheus metrics (``prometheus-client``'s default registry), counted
where the work happens: the LLM client, the embedding queue, the job runner, the HTTP
and MCP surfaces.  ``/metrics`` renders them with the database's own gauges (work-queue
depth and age, pool connections), read at scrape time.

Labels are closed sets (routes as templates, purposes, tool and job names), never ids,
texts or keys, so a series count stays bounded and nothing private reaches a scraper.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

PREFIX = "nous_memory"
FAST = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SLOW = (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)

REQUESTS = Counter(f"{PREFIX}_http_requests", "HTTP requests by route template and status",
                   ["method", "route", "status"])
REQUEST_SECONDS = Histogram(f"{PREFIX}_http_request_seconds", "HTTP request latency",
                            ["method", "route"], buckets=FAST)
TOOL_CALLS = Counter(f"{PREFIX}_mcp_tool_calls", "MCP tool calls by tool and outcome",
                     ["tool", "outcome"])
TOOL_SECONDS = Histogram(f"{PREFIX}_mcp_tool_seconds", "MCP tool call latency", ["tool"],
                         buckets=FAST)
EMBED_WAIT = Histogram(f"{PREFIX}_embedding_queue_wait_seconds",
                       "Time an encode waited for the model's thread", ["model", "priority"],
                       buckets=FAST)
EMBED_DEPTH = Gauge(f"{PREFIX}_embedding_queue_depth", "Encodes waiting for the model's "
                    "thread", ["model"])
JOB_RUNS = Counter(f"{PREFIX}_job_runs", "Maintenance job runs by job and status",
                   ["job", "status"])
JOB_SECONDS = Histogram(f"{PREFIX}_job_run_seconds", "Maintenance job run durations", ["job"],
                        buckets=SLOW)
LLM_CALLS = Counter(f"{PREFIX}_llm_calls", "LLM calls (HTTP attempts) by purpose and outcome",
                    ["purpose", "model", "outcome"])
LLM_TOKENS = Counter(f"{PREFIX}_llm_tokens", "LLM tokens by purpose and direction",
                     ["purpose", "model", "direction"])
LLM_SECONDS = Histogram(f"{PREFIX}_llm_call_seconds", "LLM call latency", ["purpose"],
                        buckets=(*SLOW[:5], 30.0, 60.0, 120.0))


def llm_call(purpose: str, model: str, outcome: str, prompt_tokens: int,
             completion_tokens: int, latency_ms: int) -> None:
    LLM_CALLS.labels(purpose, model, outcome).inc()
    LLM_TOKENS.labels(purpose, model, "prompt").inc(prompt_tokens)
    LLM_TOKENS.labels(purpose, model, "completion").inc(completion_tokens)
    LLM_SECONDS.labels(purpose).observe(latency_ms / 1000)
