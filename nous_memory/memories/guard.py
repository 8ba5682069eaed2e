"""What a write keeps out of memory: the secrets it holds (secrets/), by the agent's policy.

A password, a door code, a card number or an API key kept verbatim is repeated into every
later prompt, log, export and backup.  Every write path (appended messages, history
import, ``remember``, ``update``, ``learn_fact``, the tools and adapters over them) passes
its texts through here before anything is stored:

- ``redact`` (the default): each secret is replaced by ``[redacted: <kind>]`` and the rest
  kept; the audit says which kinds were taken out, never the value;
- ``refuse``: the write fails with the field and the kind (HTTP 422), nothing stored;
- ``keep``: the owner's explicit choice, stored as given.

A fact is never made of a secret: ``learn_fact`` rejects one (its reason names the kind),
``remember`` of a fact refuses it, and a statement holding a placeholder is no fact.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import secrets
from ..db import Database
from ..errors import FieldProblem, InvalidInputError
from ..secrets.policy import SecretPolicy, parse_policy
from .kinds import FactDetail, Kind, NewMemory, is_utf8, parse_agent_id

POLICY_TTL_S = 5.0  # a policy set by another process is seen within this long


@dataclass(frozen=True, slots=True)
class Cleaned:
    """A text as it is stored, and the kinds of secret taken out of it."""

    text: str
    kinds: tuple[str, ...] = ()


def _redact(text: str) -> secrets.Redacted:
    """The detector's redaction; a text that is not Unicode (a lone surrogate) is left to
    the write's own checks, which refuse it."""
    return secrets.redact(text) if is_utf8(text) else secrets.Redacted(text, ())


_PLACEHOLDER_HEAD = secrets.placeholder("")[:-1]  # "[redacted: "


def holds_placeholder(text: str) -> bool:
    """Whether a text holds a redacted secret's placeholder (it can be no fact)."""
    return _PLACEHOLDER_HEAD in text


def _named(kinds: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(kinds))


def _no_fact(text: str) -> str | None:
    """Why ``text`` can be no fact for a secret it holds, or None."""
    found = _redact(text)
    return f"holds a secret ({_named(found.kinds)}): a fact is never made of one" \
        if found.kinds else None


def secret_reason(content: object, policy: SecretPolicy) -> str | None:
    """Why a statement cannot be a fact for its secrets, or None: it holds one (unless
    the agent keeps them) or the placeholder of one taken out."""
    if not isinstance(content, str):
        return None
    if holds_placeholder(content):
        return "holds a redacted secret: a fact is never made of one"
    return None if policy is SecretPolicy.KEEP else _no_fact(content)


def clean(text: str, policy: SecretPolicy, field: str) -> Cleaned:
    """``text`` as the policy stores it (a refusal names ``field`` and the kind)."""
    if policy is SecretPolicy.KEEP:
        return Cleaned(text)
    found = _redact(text)
    if not found.kinds:
        return Cleaned(text)
    if policy is SecretPolicy.REFUSE:
        raise InvalidInputError.single(
            field, f"holds a secret ({_named(found.kinds)}); this agent "
                   "refuses secrets: send it without")
    return Cleaned(found.text, found.kinds)


def clean_all(texts: Sequence[str], policy: SecretPolicy, field: str
              ) -> list[Cleaned]:
    """``clean`` of each text (``field`` gets the index: ``messages[3].content``); every
    refusal is reported at once."""
    out: list[Cleaned] = []
    problems: list[FieldProblem] = []
    for index, text in enumerate(texts):
        try:
            out.append(clean(text, policy, field.format(index)))
        except InvalidInputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InvalidInputError(problems)
    return out


class Guard:
    """The agents' secret policies, read once in a while (``POLICY_TTL_S``)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._cache: dict[str, tuple[float, SecretPolicy]] = {}

    async def policy(self, agent_id: str) -> SecretPolicy:
        agent = parse_agent_id(agent_id)
        cached = self._cache.get(agent)
        if cached is not None and time.monotonic() - cached[0] < POLICY_TTL_S:
            return cached[1]
        value = await self._db.fetchval("agent_secrets_policy", agent)
        policy = SecretPolicy(value) if value is not None else SecretPolicy.REDACT
        if len(self._cache) > 10_000:  # bounded: many agents only cost a reread
            self._cache.clear()
        self._cache[agent] = (time.monotonic(), policy)
        return policy

    async def set_policy(self, agent_id: str, policy: SecretPolicy | str) -> SecretPolicy:
        agent = parse_agent_id(agent_id)
        chosen = parse_policy(policy)
        await self._db.execute("agent_set_secrets_policy", agent, chosen.value)
        self._cache[agent] = (time.monotonic(), chosen)
        return chosen


# detail fields that are not free text a person wrote (a censor's trigger is a pattern)
_STRUCTURAL = frozenset({"trigger_pattern", "source_key"})


def clean_memory(new: NewMemory, policy: SecretPolicy, prefix: str = ""
                 ) -> tuple[NewMemory, tuple[str, ...]]:
    """A memory to create with the secrets of its texts taken out (its detail's text and
    list-of-text fields, an episode's given summary); a fact holding one is refused."""
    if policy is SecretPolicy.KEEP:
        return new, ()
    if new.kind is Kind.FACT and isinstance(new.detail, FactDetail):
        _refuse_a_fact(new.detail.content, f"{prefix}content")
    kinds: list[str] = []
    changes: dict[str, object] = {}
    for name, value in new.detail:
        cleaned, taken = _clean_field(name, value, policy, f"{prefix}{name}")
        if taken:
            changes[name], kinds = cleaned, [*kinds, *taken]
    common = new.common
    if common.summary is not None:
        done = clean(common.summary, policy, f"{prefix}summary")
        if done.kinds:
            common, kinds = common.model_copy(update={"summary": done.text}), [
                *kinds, *done.kinds]
    if not changes and common is new.common:
        return new, ()
    return new.model_copy(update={"detail": new.detail.model_copy(update=changes),
                                  "common": common}), tuple(kinds)


def clean_changes(changes: Mapping[str, Any], policy: SecretPolicy) -> dict[str, Any]:
    """An owner's changes to a memory with the secrets of their texts taken out, as a
    new memory's are (a fact's content holding one is refused: ``clean_memory``)."""
    if policy is SecretPolicy.KEEP:
        return dict(changes)
    if isinstance(changes.get("content"), str):
        _refuse_a_fact(changes["content"], "content")
    return {name: _clean_field(name, value, policy, name)[0]
            for name, value in changes.items()}


def _refuse_a_fact(content: str, field: str) -> None:
    reason = _no_fact(content)
    if reason is not None:
        raise InvalidInputError.single(field, reason)


def _clean_field(name: str, value: object, policy: SecretPolicy, field: str
                 ) -> tuple[object, tuple[str, ...]]:
    """A field's value with the secrets of its text (or list of texts) taken out, and
    their kinds; any other value, or a structural field, as it is."""
    if name in _STRUCTURAL:
        return value, ()
    if type(value) is str:
        done = clean(value, policy, field)
        return done.text, done.kinds
    if isinstance(value, list) and value and all(type(v) is str for v in value):
        parts = clean_all(value, policy, f"{field}[{{}}]")
        return [p.text for p in parts], tuple(k for p in parts for k in p.kinds)
    return value, ()
