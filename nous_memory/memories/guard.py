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


def holds_placeholder(text: str) -> bool:
    """Whether a text holds a redacted secret's placeholder (it can be no fact)."""
    return "[redacted: " in text


def secret_reason(content: object, policy: SecretPolicy) -> str | None:
    """Why a statement cannot be a fact for its secrets, or None: it holds one (unless
    the agent keeps them) or the placeholder of one taken out."""
    if not isinstance(content, str):
        return None
    if holds_placeholder(content):
        return "holds a redacted secret: a fact is never made of one"
    if policy is not SecretPolicy.KEEP:
        found = _redact(content)
        if found.kinds:
            return (f"holds a secret ({', '.join(dict.fromkeys(found.kinds))}): a fact is "
                    "never made of one")
    return None


def clean(text: str, policy: SecretPolicy, field: str) -> Cleaned:
    """``text`` as the policy stores it (a refusal names ``field`` and the kind)."""
    if policy is SecretPolicy.KEEP:
        return Cleaned(text)
    found = _redact(text)
    if not found.kinds:
        return Cleaned(text)
    if policy is SecretPolicy.REFUSE:
        raise InvalidInputError.single(
            field, f"holds a secret ({', '.join(dict.fromkeys(found.kinds))}); this agent "
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
    kinds: list[str] = []
    if new.kind is Kind.FACT and isinstance(new.detail, FactDetail):
        found = _redact(new.detail.content)
        if found.kinds:
            raise InvalidInputError.single(
                f"{prefix}content", f"holds a secret ({', '.join(dict.fromkeys(found.kinds))}):"
                " a fact is never made of one")
    changes: dict[str, object] = {}
    for name, value in new.detail:
        if name in _STRUCTURAL:
            continue
        if type(value) is str:
            done = clean(value, policy, f"{prefix}{name}")
            if done.kinds:
                changes[name], kinds = done.text, [*kinds, *done.kinds]
        elif isinstance(value, list) and value and all(type(v) is str for v in value):
            parts = clean_all(value, policy, f"{prefix}{name}[{{}}]")
            if any(p.kinds for p in parts):
                changes[name] = [p.text for p in parts]
                kinds += [k for p in parts for k in p.kinds]
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
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "content" and isinstance(value, str):
            found = _redact(value)
            if found.kinds:
                raise InvalidInputError.single(
                    name, f"holds a secret ({', '.join(dict.fromkeys(found.kinds))}): a "
                          "fact is never made of one")
        if type(value) is str and name not in _STRUCTURAL:
            value = clean(value, policy, name).text
        elif isinstance(value, list) and value and all(type(v) is str for v in value):
            value = [c.text for c in clean_all(value, policy, f"{name}[{{}}]")]
        out[name] = value
    return out
