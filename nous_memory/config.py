"""Settings: constructor arguments, else ``NOUS_MEMORY_*`` environment variables, else defaults."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import platformdirs

from .errors import ConfigurationError

EmbeddingProvider = Literal["local", "openai"]
EmbeddingBackend = Literal["onnx", "torch"]
LogFormat = Literal["text", "json"]
JobSweeps = Literal["auto", "table", "agent"]

ENV_PREFIX = "NOUS_MEMORY_"


_SIZE_UNITS_KB = {"kB": 1, "MB": 2**10, "GB": 2**20}


def size_kb(size: str) -> int | None:
    """A size as PostgreSQL writes it ("512MB", "2GB", "65536kB") in kB, or None when
    the text is not one."""
    found = re.fullmatch(r"([1-9][0-9]{0,6})(kB|MB|GB)", size)
    return None if found is None else int(found[1]) * _SIZE_UNITS_KB[found[2]]


def default_data_dir() -> Path:
    """Where the embedded PostgreSQL keeps its data when nothing else is configured."""
    return Path(platformdirs.user_data_dir("nous-memory", appauthor=False))


def default_model_cache_dir() -> Path:
    """Where a local model's ONNX export is kept: a cache, safe to delete at any time."""
    return Path(platformdirs.user_cache_dir("nous-memory", appauthor=False)) / "models"


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything configurable.  Field ``foo_bar`` reads env ``NOUS_MEMORY_FOO_BAR``."""

    # a PostgreSQL 15-18 with pgvector (0.8 or later) and contrib's btree_gin, or a Citus
    # coordinator (docs/scaling.md); unset: the embedded server in data_dir
    database_url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)  # the embedded server's data
    # the embedded server's shared_buffers: a size ("512MB", "2GB"), or "auto": an eighth
    # of the machine's memory, 128MB to 2GB (db/embedded.py); applies at its next start
    embedded_shared_buffers: str = "auto"
    database_name: str = "nous_memory"  # the embedded server's database
    # connection pool (the max also bounds the scan pool of small agents' recall)
    pool_min_size: int = 1
    pool_max_size: int = 10
    # at start, how long to wait for a database that is not up yet (a container started
    # with its database, a server rebooting) before giving up with one line; 0: one try
    db_wait_s: float = 30.0

    embedding_provider: EmbeddingProvider = "local"  # a local model folder, or openai
    # a local model folder, or the OpenAI model name; unset: the bundled all-MiniLM-L6-v2
    embedding_model: str | None = None
    # a local model runs on ONNX Runtime (exported once into model_cache_dir) or torch;
    # both give the same vectors (cosine >= 0.999), so switching needs no re-embedding
    embedding_backend: EmbeddingBackend = "onnx"
    embedding_threads: int | None = None  # intra-op threads; default: the cores, at most 4
    # where a local model's ONNX export is kept (safe to delete: it is rebuilt)
    model_cache_dir: Path = field(default_factory=default_model_cache_dir)
    embedding_batch_size: int = 64  # texts a bulk encode takes at once
    # an OpenAI-compatible embedding endpoint (embedding_provider openai)
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    embedding_dimensions: int | None = None  # OpenAI: shortened embeddings / unknown models

    # an OpenAI-compatible LLM for close extraction, summaries and the fact classifier
    # (base URL and model: both, or neither); attempts and timeout of each call
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_max_attempts: int = 4
    llm_timeout_s: int = 60

    # episodes: verbatim chunk size, LLM input cap at close, idle close, worker lease
    episode_chunk_tokens: int = 160
    close_input_cap_tokens: int = 8_000
    episode_idle_close_s: int = 1_800
    worker_lease_s: int = 300
    run_worker_in_serve: bool = True  # serve also runs the work-queue worker

    # raw cosine thresholds of fact dedup (calibration: docs/guide/write-path.md)
    fact_confirm_threshold: float = 0.90
    fact_rule_threshold: float = 0.70
    fact_candidate_threshold: float = 0.60

    # working memory: default summary-policy knobs as a JSON object, e.g.
    # '{"window_tokens": 16384, "mode": "rule"}' (per agent and per call they can change)
    conversation_policy_json: str | None = None
    # maintenance jobs (jobs/, nous_memory/maintenance/): schedules are cron expressions
    # (5 fields, or 6 with seconds first) in jobs_timezone; "off" disables a job's schedule
    # (`jobs run` still works)
    trim_after_days: int = 30
    trim_keep_chars: int = 2_000
    short_summary_chars: int = 50
    archive_after_days: int = 90
    retention_days: int | None = None  # off unless set: cold detail is kept forever
    compress_over_notes: int = 10
    compress_to_notes: int = 5
    promote_confirmations: int = 3
    flag_min_uses: int = 5
    flag_effectiveness_below: float = 0.4
    retire_min_activations: int = 5
    retire_false_positive_share: float = 0.5
    job_batch_size: int = 2_000
    # how a nightly job walks the tables: "table", one pass over every agent's rows (fast
    # on one PostgreSQL); "agent", agent by agent (what Citus can route to one shard);
    # "auto", per agent where the citus extension is installed, else the whole table
    job_sweeps: JobSweeps = "auto"
    # how many batches of one job run at once, each in its own transaction on its own
    # connection (disjoint keys, or different agents): the database's cores, not the job
    # runner's, do the work; 1 runs them one after another
    job_workers: int = 2
    jobs_timezone: str = "UTC"
    job_misfire_grace_s: int = 3_600
    # each job's schedule; archive before trim: trim then only handles what archive
    # leaves hot
    job_archive_cron: str = "0 2 * * *"
    job_trim_cron: str = "30 2 * * *"
    job_compress_cron: str = "0 3 * * *"
    job_lifecycle_cron: str = "30 3 * * *"
    job_retention_cron: str = "0 4 * * *"
    job_housekeeping_cron: str = "15 * * * *"
    # LLM upgrades of episodes closed without one: at most backfill_per_run a run, due
    # backfill_spacing_s apart (the worker spreads the calls)
    job_backfill_cron: str = "*/20 * * * *"
    job_indexes_cron: str = "40 * * * *"  # the indexes job (agent_indexes_*)
    backfill_per_run: int = 50
    backfill_spacing_s: float = 10.0
    run_scheduler_in_serve: bool = False  # serve also runs the maintenance jobs
    # context assembly: tier-2 extraction cache lifetime, sync LLM time budget
    extraction_ttl_s: int = 3_600
    extraction_sync_timeout_s: float = 2.0
    # recall: an agent with at most this many memories (and chunks) is read whole and
    # ranked exactly; larger agents take the HNSW and GIN indexes (0: always the indexes).
    # On bench/context_latency.py an exact scan of 1,000 rows costs about 1.5 ms, less
    # than a filtered HNSW scan over every agent's rows, and the answer is exact
    recall_exact_scan_max_rows: int = 20_000
    # a second pool whose sessions are set up for small agents' recall (one round trip per
    # call); off behind a transaction-mode pooler (pgbouncer, ...), which would hand those
    # sessions to other clients: recall then sets its plan settings per transaction
    recall_scan_pool: bool = True
    # on a Citus coordinator whose read functions are distributed: call them on the
    # agent's worker itself (its address from the coordinator's catalog, this URL's user,
    # password and database), not through the coordinator, which costs a hop per read
    citus_worker_reads: bool = True
    # the full-text (BM25) leg's weight in recall's fusion, the vector leg's being 1
    # (bench/README.md: where the text leg helps and where it adds noise)
    recall_text_weight: float = 2.0
    # large agents' own indexes (the indexes job, maintenance/indexes.py): an agent past
    # agent_indexes_min_rows memories (or chunks) gets partial HNSW and GIN indexes of its
    # own, at most agent_indexes_max agents (the largest), built with this much
    # maintenance_work_mem; recall searches their HNSW graphs with recall_ef_search
    # (pgvector's default is 40: a vector leg takes 60 rows, so 64 fills it without a
    # second round of the iterative scan; on bench/tenancy.py 40, 64 and 100 all agreed
    # with an exact top 10)
    agent_indexes_min_rows: int = 20_000
    agent_indexes_max: int = 200
    agent_indexes_build_memory: str = "1GB"
    recall_ef_search: int = 64

    # where serve listens; a non-loopback host needs api_keys
    api_host: str = "127.0.0.1"
    api_port: int = 8765
    # "key" or "key:agent-a|agent-b", comma-separated (16+ characters each); unset: no
    # auth, loopback only; keys made with `nous-memory keys` live in the database
    api_keys: str | None = None
    # serve a non-loopback address without api_keys (only behind another layer that
    # authenticates every request); refused otherwise
    insecure_no_auth_on_network: bool = False
    # let the assistant's model purge (erase for good) through the agent tools; without it
    # memory_forget only soft-deletes, which the owner can undo
    tools_allow_purge: bool = False
    # let the assistant's model restore what was forgotten (memory_restore); without it
    # only the owner restores (Python, REST, CLI, inspector): a forget the user asked for
    # is not undone by the model, nor by text it was shown
    tools_allow_restore: bool = False
    # the largest import body (POST /agents/{agent_id}/import), read as it arrives
    api_import_max_bytes: int = 4 * 1024 * 1024 * 1024
    # signs the inspector's session cookies; unset: a random secret made once and kept
    # in the database (store_meta), shared by every process serving it
    ui_session_secret: str | None = None
    # serve's log lines: "text" for a terminal, "json" (one object a line, with the
    # request id) for a log pipeline
    log_format: LogFormat = "text"

    def __post_init__(self) -> None:
        if self.job_sweeps not in ("auto", "table", "agent"):
            raise ConfigurationError(f"job_sweeps must be 'auto', 'table' or 'agent', not "
                                     f"{self.job_sweeps!r}")
        if self.log_format not in ("text", "json"):
            raise ConfigurationError(f"log_format must be 'text' or 'json', not "
                                     f"{self.log_format!r}")
        if not 0 <= self.db_wait_s <= 86_400:
            raise ConfigurationError("db_wait_s must be between 0 and 86400 seconds")
        if self.api_import_max_bytes < 1:
            raise ConfigurationError("api_import_max_bytes must be >= 1")
        if self.pool_min_size < 0 or self.pool_max_size < max(1, self.pool_min_size):
            raise ConfigurationError(
                f"pool sizes must satisfy 0 <= min <= max, max >= 1 "
                f"(got min={self.pool_min_size}, max={self.pool_max_size})"
            )
        if self.ui_session_secret is not None and len(self.ui_session_secret) < 32:
            raise ConfigurationError("ui_session_secret needs at least 32 characters")
        if self.embedding_batch_size < 1:
            raise ConfigurationError("embedding_batch_size must be >= 1")
        if self.embedding_backend not in ("onnx", "torch"):
            raise ConfigurationError(
                f"embedding_backend must be 'onnx' or 'torch', not {self.embedding_backend!r}")
        if self.embedding_threads is not None and self.embedding_threads < 1:
            raise ConfigurationError("embedding_threads must be >= 1")
        if self.embedding_provider not in ("local", "openai"):
            raise ConfigurationError(
                f"embedding_provider must be 'local' or 'openai', not {self.embedding_provider!r}"
            )
        if not (0 < self.fact_candidate_threshold <= self.fact_rule_threshold
                <= self.fact_confirm_threshold <= 1):
            raise ConfigurationError(
                "fact thresholds must satisfy 0 < candidate <= rule <= confirm <= 1 (got "
                f"candidate={self.fact_candidate_threshold}, rule={self.fact_rule_threshold}, "
                f"confirm={self.fact_confirm_threshold})")
        if bool(self.llm_base_url) != bool(self.llm_model):
            raise ConfigurationError(
                "set both NOUS_MEMORY_LLM_BASE_URL and NOUS_MEMORY_LLM_MODEL, or neither")
        for name in ("episode_chunk_tokens", "close_input_cap_tokens", "episode_idle_close_s",
                     "worker_lease_s"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1")
        if self.extraction_ttl_s < 1 or not self.extraction_sync_timeout_s > 0:
            raise ConfigurationError("extraction_ttl_s must be >= 1 and "
                                     "extraction_sync_timeout_s > 0")
        if self.recall_exact_scan_max_rows < 0:
            raise ConfigurationError("recall_exact_scan_max_rows must be >= 0")
        if not 0 <= self.recall_text_weight <= 10:
            raise ConfigurationError("recall_text_weight must be within [0, 10]")
        if not 1 <= self.recall_ef_search <= 1000:
            raise ConfigurationError("recall_ef_search must be within [1, 1000]")
        if self.agent_indexes_min_rows < 2 or self.agent_indexes_max < 0:
            raise ConfigurationError("agent_indexes_min_rows must be >= 2 and "
                                     "agent_indexes_max >= 0")
        buffers_kb = size_kb(self.embedded_shared_buffers)
        if self.embedded_shared_buffers != "auto" and (
                buffers_kb is None or buffers_kb < 16 * 2**10):
            raise ConfigurationError("embedded_shared_buffers must be 'auto' or a size of "
                                     "16MB or more, such as 512MB or 2GB")
        if not re.fullmatch(r"[1-9][0-9]{0,6}\s*(kB|MB|GB)", self.agent_indexes_build_memory):
            raise ConfigurationError("agent_indexes_build_memory must be a size such as "
                                     "512MB or 2GB")
        if self.llm_max_attempts < 1 or self.llm_timeout_s < 1:
            raise ConfigurationError("llm_max_attempts and llm_timeout_s must be >= 1")
        for name in ("trim_after_days", "trim_keep_chars", "archive_after_days",
                     "compress_over_notes", "compress_to_notes", "promote_confirmations",
                     "flag_min_uses", "retire_min_activations", "job_batch_size",
                     "job_misfire_grace_s"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be >= 1")
        if not 1 <= self.job_workers <= 32:
            raise ConfigurationError("job_workers must be within [1, 32]")
        if self.retention_days is not None and self.retention_days < 1:
            raise ConfigurationError("retention_days must be >= 1 (or unset: off)")
        if self.compress_to_notes >= self.compress_over_notes:
            raise ConfigurationError("compress_to_notes must be below compress_over_notes")
        if not (0 <= self.flag_effectiveness_below <= 1
                and 0 <= self.retire_false_positive_share <= 1):
            raise ConfigurationError(
                "flag_effectiveness_below and retire_false_positive_share must be in [0, 1]")
        if self.backfill_per_run < 1 or self.backfill_spacing_s < 0:
            raise ConfigurationError("backfill_per_run must be >= 1 and backfill_spacing_s "
                                     ">= 0")
        if self.short_summary_chars < 0:
            raise ConfigurationError("short_summary_chars must be >= 0")
        if not self.database_name.replace("_", "").isalnum():
            raise ConfigurationError("database_name may hold letters, digits and '_' only")

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, **overrides: Any
    ) -> Settings:
        """Build settings from the environment; explicit ``overrides`` win over it."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            values[f.name] = _coerce(f.name, f.type, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        for name in ("data_dir", "model_cache_dir"):
            if name in values:
                values[name] = Path(values[name]).expanduser()
        return cls(**values)

    def with_changes(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)


def _coerce(name: str, annotation: object, raw: str) -> Any:
    text = str(annotation)
    if text == "float":
        try:
            return float(raw)
        except ValueError:
            raise ConfigurationError(
                f"{ENV_PREFIX}{name.upper()} must be a number, got {raw!r}") from None
    if text.startswith("int"):  # int and "int | None"
        try:
            return int(raw)
        except ValueError:
            raise ConfigurationError(
                f"{ENV_PREFIX}{name.upper()} must be an integer, got {raw!r}"
            ) from None
    if text == "Path":
        return Path(raw)
    if text == "bool":
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigurationError(f"{ENV_PREFIX}{name.upper()} must be true or false, got {raw!r}")
    return raw
