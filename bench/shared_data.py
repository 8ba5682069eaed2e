"""Where the evaluation data is: ``shared/data/`` beside the repository's root, or, from a
git worktree nested deeper than the main checkout, in the nearest ancestor that has it.
Imported by the bench scripts beside it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_data(relative: str) -> Path:
    """``shared/data/<relative>`` in the nearest ancestor of the repository that has it;
    beside the root when none has (so an error names the documented place)."""
    wanted = Path("shared") / "data" / relative
    for parent in ROOT.parents:
        if (parent / wanted).exists():
            return parent / wanted
    return ROOT.parent / wanted
