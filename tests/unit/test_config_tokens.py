from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nous_memory.config import Settings
from nous_memory.errors import ConfigurationError
from nous_memory.tokens import count_line, count_tokens, estimate_tokens


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
    with pytest.raises(ConfigurationError, match="job_sweeps must be"):
        Settings.from_env({"NOUS_MEMORY_JOB_SWEEPS": "shard"})


def test_exact_and_estimated_tokens() -> None:
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens("<|endoftext|>") > 1  # special tokens are counted as plain text
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate_tokens(text) >= count_tokens(text)


# lines as context assembly writes them, and worse: every whitespace and newline form,
# punctuation runs that absorb newlines, contractions, digits, CJK and emoji
_PIECES = st.sampled_from([*"abcXYZ019 .,;:!?'\"()[]{}<>#*-_/\\\t\r\n", "'s", "'ll", "\r\n",
                           "  ", "\n ", " \n", "\n\n", "...", "é", "漢字", "🙂", "\u2028"])
_LINE = st.tuples(st.sampled_from([*"aZ9.([<#'-", "é", "漢", "🙂"]),
                  st.lists(_PIECES, max_size=30).map("".join)).map("".join)


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_LINE, min_size=1, max_size=8), last=_LINE)
def test_a_text_counts_as_the_sum_of_its_lines(lines: list[str], last: str) -> None:
    # what lets context assembly prove its budget line by line: no cl100k piece spans a
    # newline into a line that starts with a non-space character
    text = "".join(line + "\n" for line in lines) + last
    assert sum(count_line(line) for line in lines) + count_tokens(last) == count_tokens(text)


def test_count_line_refuses_a_line_it_cannot_add_up() -> None:
    for bad in ("", " indented", "\nnext", "\tx"):
        with pytest.raises(ValueError, match="non-space"):
            count_line(bad)


def test_fact_thresholds_must_be_ordered() -> None:
    with pytest.raises(ConfigurationError, match="candidate <= rule <= confirm"):
        Settings(fact_candidate_threshold=0.8, fact_rule_threshold=0.7)
    with pytest.raises(ConfigurationError, match="candidate <= rule <= confirm"):
        Settings.from_env({"NOUS_MEMORY_FACT_CONFIRM_THRESHOLD": "0.65"})
    with pytest.raises(ConfigurationError, match="must be a number"):
        Settings.from_env({"NOUS_MEMORY_FACT_RULE_THRESHOLD": "high"})
    settings = Settings.from_env({"NOUS_MEMORY_FACT_RULE_THRESHOLD": "0.75"})
    assert settings.fact_rule_threshold == 0.75


def test_llm_settings_come_in_pairs_and_bools_parse() -> None:
    with pytest.raises(ConfigurationError, match="LLM_MODEL"):
        Settings(llm_base_url="http://127.0.0.1:1/v1")
    assert Settings.from_env({"NOUS_MEMORY_RUN_WORKER_IN_SERVE": "no"}).run_worker_in_serve is False
    with pytest.raises(ConfigurationError, match="true or false"):
        Settings.from_env({"NOUS_MEMORY_RUN_WORKER_IN_SERVE": "maybe"})
