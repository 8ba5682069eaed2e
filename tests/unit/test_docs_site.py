"""The docs site builds offline with warnings as errors, loads nothing from another
origin, holds the tables generated from the code, and a broken internal link fails it."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from jobs.registry import JOBS
from nous_memory.config import ENV_PREFIX, Settings
from tests.unit.test_readme import DOCS


def sphinx(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(source), str(out)], capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs-html")
    built = sphinx(DOCS, out)
    assert built.returncode == 0, built.stderr
    return out


def test_no_page_loads_anything_from_another_origin(site: Path) -> None:
    pages = list(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        text = page.read_text()
        for tag in re.findall(r"<(?:script|link|img|iframe|source)\b[^>]*>", text):
            for url in re.findall(r"""(?:src|href)=["']([^"']*)""", tag):
                assert not re.match(r"(?i)(https?:)?//", url), (page.name, tag)
        assert "@import url(http" not in text


def test_the_generated_tables_hold_every_setting_and_job(site: Path) -> None:
    settings = (site / "operations" / "settings.html").read_text()
    for field in fields(Settings):
        assert ENV_PREFIX + field.name.upper() in settings, field.name
    jobs = (site / "operations" / "jobs.html").read_text()
    for job in JOBS.values():
        assert f"{ENV_PREFIX}JOB_{job.name.upper()}_CRON" in jobs
        assert html.escape(job.description, quote=False) in jobs, job.name


def test_the_api_reference_is_built_from_the_docstrings(site: Path) -> None:
    reference = (site / "reference" / "api.html").read_text()
    assert 'id="nous_memory.MemoryStore.assemble_context"' in reference
    assert 'id="nous_memory.client.AsyncMemoryClient.recall"' in reference


def test_a_broken_internal_link_fails_the_build(tmp_path: Path) -> None:
    """With the site's own configuration: a link to a missing section and one to a
    missing page are each an error, and nothing else in the small site is."""
    source = tmp_path / "docs"
    source.mkdir()
    shutil.copy(DOCS / "conf.py", source)
    shutil.copytree(DOCS / "_ext", source / "_ext")
    (source / "index.md").write_text(
        "# Home\n\n```{toctree}\npage\n```\n\n[Here](page.md#a-section), "
        "[there](page.md#another-section).\n")
    (source / "page.md").write_text("# Page\n\n## Another section\n\n[Gone](gone.md), "
                                    "[home](index.md).\n")
    broken = sphinx(source, tmp_path / "html")
    assert broken.returncode != 0
    problems = [line for line in broken.stderr.splitlines() if "WARNING" in line]
    assert len(problems) == 2, broken.stderr
    assert "a-section" in problems[0] + problems[1] and "gone.md" in broken.stderr
