"""The maintenance policy: ages, sizes and thresholds of every job, from Settings."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import JobSweeps, Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenancePolicy:
    """The defaults (and their validation) live in Settings; this is the jobs' view."""

    trim_after_days: int
    trim_keep_chars: int
    short_summary_chars: int
    archive_after_days: int
    retention_days: int | None
    compress_over_notes: int
    compress_to_notes: int
    promote_confirmations: int
    flag_min_uses: int
    flag_effectiveness_below: float
    retire_min_activations: int
    retire_false_positive_share: float
    batch_size: int
    sweeps: JobSweeps
    workers: int
    backfill_per_run: int
    backfill_spacing_s: float
    agent_indexes_min_rows: int
    agent_indexes_max: int
    agent_indexes_build_memory: str

    @classmethod
    def from_settings(cls, s: Settings) -> MaintenancePolicy:
        return cls(
            trim_after_days=s.trim_after_days, trim_keep_chars=s.trim_keep_chars,
            short_summary_chars=s.short_summary_chars,
            archive_after_days=s.archive_after_days, retention_days=s.retention_days,
            compress_over_notes=s.compress_over_notes, compress_to_notes=s.compress_to_notes,
            promote_confirmations=s.promote_confirmations, flag_min_uses=s.flag_min_uses,
            flag_effectiveness_below=s.flag_effectiveness_below,
            retire_min_activations=s.retire_min_activations,
            retire_false_positive_share=s.retire_false_positive_share,
            batch_size=s.job_batch_size, sweeps=s.job_sweeps,
            workers=s.job_workers,
            backfill_per_run=s.backfill_per_run,
            backfill_spacing_s=s.backfill_spacing_s,
            agent_indexes_min_rows=s.agent_indexes_min_rows,
            agent_indexes_max=s.agent_indexes_max,
            agent_indexes_build_memory=s.agent_indexes_build_memory)
