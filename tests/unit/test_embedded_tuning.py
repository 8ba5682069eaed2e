"""How the embedded server is sized for its machine (db/embedded.py)."""

from __future__ import annotations

import pytest

from nous_memory.config import Settings
from nous_memory.db.tuning import auto_shared_buffers, machine_memory, tuning_text
from nous_memory.errors import ConfigurationError

GB = 2**30


@pytest.mark.parametrize(("memory", "expected"), [
    (GB // 2, "128MB"), (4 * GB, "512MB"), (8 * GB, "1024MB"), (24 * GB, "2048MB"),
    (512 * GB, "2048MB")])
def test_auto_is_an_eighth_of_the_machine_within_bounds(memory: int, expected: str) -> None:
    assert auto_shared_buffers(memory) == expected


def test_the_include_file_names_the_size_and_the_prewarm_library() -> None:
    text = tuning_text("768MB", memory=8 * GB)
    assert "shared_buffers = '768MB'" in text.splitlines()
    assert "shared_preload_libraries = 'pg_prewarm'" in text.splitlines()
    assert "shared_preload_libraries" not in tuning_text("768MB", prewarm=False,
                                                         memory=8 * GB)
    assert f"shared_buffers = '{auto_shared_buffers()}'" in tuning_text("auto").splitlines()


def test_a_size_beyond_the_machine_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="more than this machine's memory"):
        tuning_text("9GB", memory=8 * GB)
    assert machine_memory() > 0 and auto_shared_buffers() == auto_shared_buffers(
        machine_memory())


@pytest.mark.parametrize("value", ["auto", "16MB", "512MB", "2GB", "16384kB"])
def test_sizes_the_setting_takes(value: str) -> None:
    assert Settings(embedded_shared_buffers=value).embedded_shared_buffers == value


@pytest.mark.parametrize("value", ["", "big", "512", "512 MB", "8MB", "0GB", "1TB", "-1GB"])
def test_sizes_the_setting_refuses(value: str) -> None:
    with pytest.raises(ConfigurationError, match="embedded_shared_buffers"):
        Settings(embedded_shared_buffers=value)
