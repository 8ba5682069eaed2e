from __future__ import annotations

from pathlib import Path

import pytest

from nous_memory.config import Settings
from nous_memory.errors import ConfigurationError
from nous_memory.tokens import count_tokens, estimate_tokens


def test_env_and_overrides() -> None:
    env = {"NOUS_MEMORY_DATABASE_URL": "postgresql://x@h/db", "NOUS_MEMORY_POOL_MAX_SIZE": "3",
           "NOUS_MEMORY_DATA_DIR": "~/nm"}
    s = Settings.from_env(env, pool_max_size=4)
    assert s.database_url == "postgresql://x@h/db"
    assert s.pool_max_size == 4
    assert s.data_dir == Path("~/nm").expanduser()


def test_bad_settings() -> None:
    with pytest.raises(ConfigurationError, match="NOUS_MEMORY_API_PORT"):
        Settings.from_env({"NOUS_MEMORY_API_PORT": "eighty"})
    with pytest.raises(ConfigurationError, match="pool"):
        Settings(pool_min_size=5, pool_max_size=2)
    with pytest.raises(ConfigurationError, match="database_name"):
        Settings(database_name='x"; DROP')


def test_exact_and_estimated_tokens() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special tokens are counted as plain text
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate_tokens(text) >= count_tokens(text)
