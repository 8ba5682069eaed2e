"""The maintenance policy: ages, sizes and thresholds of every job, from Settings."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenancePolicy:
    trim_after_days: int = 30
    trim_keep_chars: int = 2_000
    short_summary_chars: int = 50
    archive_after_days: int = 90
    retention_days: int | None = None
    compress_over_notes: int = 10
    compress_to_notes: int = 5
    promote_confirmations: int = 3
    flag_min_uses: int = 5
    flag_effectiveness_below: float = 0.4
    retire_min_activations: int = 5
    retire_false_positive_share: float = 0.5
    batch_size: int = 2_000

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
            batch_size=s.job_batch_size)
