"""The house's import rules (pyproject's [tool.importlinter]) hold, and they bite.

Layers: surfaces (cli, api, jobs) over the ``MemoryStore`` facade over the domains
over ``db``, which imports no domain; no cycle among a package's modules; the product
never imports the test kit; the remote client never loads the database or a model.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=120, check=False)


def test_the_code_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


def _copy(tmp_path: Path) -> Path:
    for package in ("nous_memory", "jobs"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


BREAKS = [
    # db importing a domain: the layers contract names the offending import
    ("nous_memory/db/connector.py", "from ..memories import kinds",
     "nous_memory.db.connector -> nous_memory.memories.kinds"),
    # output is imported by every command module; importing one back closes a cycle
    ("nous_memory/cli/output.py", "from . import recall",
     "No cycle among the modules of any package BROKEN"),
    ("nous_memory/store.py", "from .testing import FakeEmbedder",
     "The test kit is for tests: the product never imports it BROKEN"),
    # the remote client reaching the store (through a module it imports) would load the
    # driver and the model in every `nous-memory --url` process
    ("nous_memory/context/results.py", "from ..db import Database",
     "The remote client loads no database, store or model BROKEN"),
]


@pytest.mark.parametrize(("module", "line", "report"), BREAKS,
                         ids=["db-imports-domain", "cycle", "product-imports-test-kit",
                              "client-loads-the-database"])
def test_a_broken_rule_fails_the_check(tmp_path: Path, module: str, line: str,
                                       report: str) -> None:
    tree = _copy(tmp_path)
    path = tree / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    result = _lint(tree)
    assert result.returncode == 1
    assert report in result.stdout


def test_importing_the_package_loads_no_test_kit() -> None:
    """The root ``__init__`` is outside the contracts' source modules: checked here."""
    probe = ("import sys, nous_memory; "
             "print(sorted(m for m in sys.modules if m.startswith('nous_memory.testing')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "[]"
