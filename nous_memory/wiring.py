"""The wiring: every service of a store built from ``Settings``, the database and the
embedder, in one place and in one order.

Each service is built once, after everything it needs (no attribute is set after
construction): caches and records first, then what learns (facts, episodes), then
what reads (recall, context, which working memory asks for its context), then the
jobs and the owner's tools, and last the work queue's handlers, bound to the services
above by ``pipeline.task_handlers``.  Every setting reaches its service here; the
defaults live in ``config.Settings`` alone.
"""

from __future__ import annotations

from .access import Keys
from .config import Settings
from .context.access import AccessLog
from .context.assembly import ContextAssembler
from .context.expand import Expander
from .context.extraction import Extractor
from .context.recall import Fusion, Recaller
from .conversation import WorkingMemory
from .db import Database
from .embeddings import Embedder
from .embeddings.cache import EmbeddingCache
from .episodes.close import CloseSettings, EpisodeCloser
from .episodes.forget import MessageForgetter
from .episodes.learn import EpisodeLearner
from .episodes.lifecycle import EpisodeManager
from .episodes.tasks import EpisodeTasks
from .facts.conflicts import ConflictResolver
from .facts.consolidation import Thresholds
from .facts.learning import FactLearner
from .facts.undelete import Undeleter
from .history import HistoryImporter
from .llm import LLMClient, PostgresCallRecorder
from .maintenance import Maintenance, MaintenancePolicy
from .maintenance.runs import JobRuns
from .memories.manager import MemoryManager
from .pipeline import task_handlers
from .work.queue import TaskHandler
from .work.tasks import Task
from .work.worker import Worker


class Services:
    """The services a store forwards to (``MemoryStore`` is one of these)."""

    def __init__(self, settings: Settings, db: Database, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        self._db = db
        # 1. what every write goes through: embeddings (cached), records, the LLM
        self.embeddings = EmbeddingCache(db, embedder)
        self.memories = MemoryManager(db, self.embeddings)
        self.llm = llm_from_settings(settings, db)
        # 2. learning: facts (dedup thresholds), their undo and conflicts, episodes
        thresholds = Thresholds.from_settings(settings)
        self.facts = FactLearner(db, self.memories, self.embeddings, thresholds, self.llm)
        self.undeleter = Undeleter(db, self.memories, self.embeddings, self.facts, thresholds)
        self.conflicts = ConflictResolver(db, self.memories)
        self.episodes = EpisodeManager(db, self.memories)
        self.closer = EpisodeCloser(self.llm, CloseSettings.from_settings(settings))
        self.learner = EpisodeLearner(db, self.memories, self.embeddings, self.facts)
        self.forgetter = MessageForgetter(db, self.embeddings, self.closer,
                                          settings.episode_chunk_tokens)
        self.importer = HistoryImporter(db, self.memories)
        # 3. reading: recall, the extraction cache, context assembly, expand; working
        # memory takes its context from the assembler
        self.access = AccessLog(db)
        self.recaller = Recaller(db, self.embeddings,
                                 exact_scan_max_rows=settings.recall_exact_scan_max_rows,
                                 ef_search=settings.recall_ef_search,
                                 fusion=Fusion(text_weight=settings.recall_text_weight))
        self.extractor = Extractor(db, self.llm, ttl_s=settings.extraction_ttl_s,
                                   sync_timeout_s=settings.extraction_sync_timeout_s)
        self.contexts = ContextAssembler(db, self.embeddings, self.recaller, self.extractor,
                                         self.access)
        self.expander = Expander(db, self.memories, self.facts, self.access)
        self.conversation = WorkingMemory(db, self.llm,
                                          defaults_json=settings.conversation_policy_json,
                                          context_provider=self.contexts.for_prompt)
        # 4. the jobs' bodies, their run log, the API keys
        self.maintenance = Maintenance(db, self.memories, self.embeddings, self.llm,
                                       MaintenancePolicy.from_settings(settings))
        self.job_runs = JobRuns(db)
        self.keys = Keys(db)
        # 5. the work queue: each task's handler (pipeline.PIPELINE says which)
        self.episode_tasks = EpisodeTasks(db, self.episodes, self.closer,
                                          idle_close_after_s=settings.episode_idle_close_s)
        self.handlers: dict[Task, TaskHandler] = task_handlers(
            episodes=self.episode_tasks, learner=self.learner,
            conversation=self.conversation, extractor=self.extractor,
            maintenance=self.maintenance)

    def worker(self, *, worker_id: str | None = None, poll_s: float = 1.0) -> Worker:
        """A work-queue worker on these services (``await worker.run(stop_event)``)."""
        return Worker(self._db, self.handlers, idle_sweep=self.episode_tasks.close_idle,
                      worker_id=worker_id, lease_s=self.settings.worker_lease_s,
                      poll_s=poll_s)


def llm_from_settings(settings: Settings, db: Database) -> LLMClient | None:
    """The configured LLM (every call recorded in llm_calls), or None: rule-based fallbacks."""
    if not settings.llm_base_url or not settings.llm_model:
        return None
    return LLMClient(base_url=settings.llm_base_url, model=settings.llm_model,
                     api_key=settings.llm_api_key, max_attempts=settings.llm_max_attempts,
                     timeout_s=settings.llm_timeout_s, recorder=PostgresCallRecorder(db))
