"""Passwords and keys introduced by a cue, and config lines that name a secret.

"my password is X", "login: me@mail.com / X", "use X to log in", "X is my password",
``DB_PASSWORD=X``, "API key: X", "Bearer X".  A password's value is anything but
grammar after an explicit link; a key's value must read as generated (``looks_random``),
so "the key is under the mat" is kept.
"""

from __future__ import annotations

from collections.abc import Iterator

from .checks import looks_random
from .cues import TOKEN, cue_pattern, cues, trim, value_after
from .found import API_KEY, PASSWORD, PIN, Found, compile_pattern
from .vocabulary import KEY_CUES, NOT_A_VALUE, PASSWORD_CUES, PASSWORD_SUFFIXES

_PASSWORD_CUE = cue_pattern(PASSWORD_CUES, r"|\pL+(?:" + "|".join(PASSWORD_SUFFIXES) + ")")
_KEY_CUE = cue_pattern(KEY_CUES)
_PHRASE_CUES = ("passphrase", "seed phrase", "recovery phrase", "mnemonic")
_WEAK_CUES = ("pass", "login", "log-in", "sign-in", "creds", "credentials")
# NAME_KEY=value, "secret": value, AccountKey=value, as in env files and configs
_NAMED_SECRET = compile_pattern(
    r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*_?(KEY|Key|TOKEN|Token|SECRET|Secret|"
    r"PASSWORD|Password|PASSWD|PWD|PASS)(?:_[A-Za-z0-9]+)*[\"']?\s*[=:]\s*[\"']?"
    r"([^\s\"',;]+)")
_USE_TO_LOG_IN = compile_pattern(
    r"\b(?:use|used|using|try|enter|type)\s+[\"'\x{201C}\x{2018}]?([^\s\"'\x{201C}\x{201D}\x{2018}\x{2019}]+?)[\"'\x{201D}\x{2019}]?\s+"
    r"(?:to|for)\s+(?:log|sign)(?:ging)?\s*-?\s*(?:in|on|into)\b", case_sensitive=False)
# "the tablet unlocks with dinosaur1234" (digits alone are a PIN: ``codes``)
_OPENS_WITH = compile_pattern(
    r"\b(?:unlocks?|unlocked|opens?|opened)\s+with\s+[\"'\x{201C}\x{2018}]?([^\s\"'\x{201C}\x{201D}\x{2018}\x{2019}]+)",
    case_sensitive=False)
_IS_MY = compile_pattern(
    r"([^\s\"'\x{201C}\x{201D}\x{2018}\x{2019}]+)[\"'\x{201D}\x{2019}]?\s+(?:is|was)\s+(?:my|the|our|his|her|their|your)\s+"
    r"(?:[A-Za-z\-]+\s+){0,3}?(?:password|pw)\b", case_sensitive=False)
# "user / password", "user:password" after a login cue: the second is the password
_PAIR = compile_pattern(r"\s*[/|:]\s*([^\s\"'\x{201C}\x{201D}\x{2018}\x{2019},;]+)")
_SPACED_GROUPS = compile_pattern(r" (\d+)\b")
_SHAPED_NEAR = 200  # characters around a found password in which a strong-shaped token is one too
_TOKENS = compile_pattern(r"[^\s\"'\x{201C}\x{201D}\x{2018}\x{2019}`,;()]{8,64}")


def _email(value: str) -> bool:
    return "@" in value and "." in value.rsplit("@", 1)[-1]


def password_like(value: str, explicit: bool) -> bool:
    """Whether a value after a password cue is one: grammar never is; without a link it
    needs a digit, a symbol or an inner capital."""
    if len(value) < 3 or value.startswith(("http://", "https://", "[")) or _email(value):
        return False
    letters = value.replace("-", "").replace("'", "")
    if letters.isalpha():
        lower = value.lower()
        if lower in NOT_A_VALUE or (value[1:].islower() and lower.endswith(("ed", "ing", "ly"))):
            return False
        return explicit or value[1:] != value[1:].lower()
    return True


def strong_shape(token: str) -> bool:
    """Letters of both cases, a digit and a symbol: a chosen password, not a word."""
    return (any(c.islower() for c in token) and any(c.isupper() for c in token)
            and any(c.isdigit() for c in token) and any(not c.isalnum() for c in token)
            and not _email(token) and "://" not in token and not token.startswith("["))


def _phrase_end(text: str, end: int, words: int = 12) -> int:
    """A phrase runs to the end of its clause: lower-case words (a number among them),
    up to ``words``."""
    while words:
        nxt = end
        while nxt < len(text) and text[nxt] == " ":
            nxt += 1
        stop = nxt
        while stop < len(text) and ((text[stop].isalpha() and text[stop].islower())
                                    or text[stop].isdigit()):
            stop += 1
        if stop == nxt or (stop < len(text) and not text[stop].isspace()
                           and text[stop] not in ".,;!?("):
            break
        end, words = stop, words - 1
    return end


def _cued_passwords(text: str) -> Iterator[Found]:
    for cue in cues(_PASSWORD_CUE, text):
        found = value_after(text, cue.end, TOKEN)
        if found is None:
            continue
        if text[found.start - 1:found.start] == "(" and not password_like(
                text[found.start:found.end], found.explicit):
            # a word set apart names what it is for ("password (gmail) Xk9#mP2qZ")
            found = value_after(text, found.end + 1, TOKEN) or found
        start, end = found.start, found.end if found.quoted else trim(text, found.start, found.end)
        value = text[start:end]
        colon = ":" in found.between or "=" in found.between
        pair = _PAIR.match(text[end:end + 80])
        if pair and (_email(value) or cue.word in _WEAK_CUES) and pair.group(1)[:1] != "[":
            start, end = end + pair.start(1), trim(text, end + pair.start(1), end + pair.end(1))
            value = text[start:end]
        if (cue.word in _WEAK_CUES and not password_like(value, False)) or (
                cue.word == "pass" and not colon):
            continue
        phrase = not found.quoted and (cue.word in _PHRASE_CUES or colon) and value.isalpha()
        if phrase and _phrase_end(text, end) > end and value.islower():
            stop = _phrase_end(text, end)
            if len(text[start:stop].split()) >= 3:
                yield Found(start, stop, PASSWORD, 2)
                continue
        if value.isdigit() and not found.quoted:  # "804 551": one code in groups
            groups = _SPACED_GROUPS.match(text[end:end + 40])
            while groups and len(groups.group(1)) == len(value.split()[0]):
                end += groups.end()
                groups = _SPACED_GROUPS.match(text[end:end + 40])
            value = text[start:end]
        if password_like(value, found.explicit or found.quoted):
            yield Found(start, end, PASSWORD, 3 if value.replace(" ", "").isdigit() else 2)


def passwords(text: str) -> Iterator[Found]:
    found = list(_cued_passwords(text))
    for match in _USE_TO_LOG_IN.finditer(text):
        if password_like(match.group(1), False):
            found.append(Found(match.start(1), match.end(1), PASSWORD, 2))
    for match in _OPENS_WITH.finditer(text):
        end = trim(text, match.start(1), match.end(1))
        value = text[match.start(1):end]
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            found.append(Found(match.start(1), end, PASSWORD, 2))
    for match in _IS_MY.finditer(text):
        end = trim(text, match.start(1), match.end(1))
        if password_like(text[match.start(1):end], False):
            found.append(Found(match.start(1), end, PASSWORD, 2))
    for match in _NAMED_SECRET.finditer(text):
        name, value = match.group(1).upper(), match.group(2)
        if value.startswith(("$", "<", "[", "{")) or len(value) < 4:
            continue
        if match.group(1).isupper() or looks_random(value, 12):
            kind = PASSWORD if name.startswith("PA") or name == "PWD" else API_KEY
            found.append(Found(match.start(2), match.end(2), kind, 1))
    yield from found
    for secret in found:  # a strong-shaped token beside a password is one too
        if secret.kind != PASSWORD:
            continue
        near = max(0, secret.start - _SHAPED_NEAR)
        for token in _TOKENS.finditer(text[near:secret.end + _SHAPED_NEAR]):
            end = trim(text, near + token.start(), near + token.end())
            if strong_shape(text[near + token.start():end]):
                yield Found(near + token.start(), end, PASSWORD, 4)


def keys(text: str) -> Iterator[Found]:
    """High-entropy tokens introduced as keys, tokens or secrets."""
    for cue in cues(_KEY_CUE, text):
        found = value_after(text, cue.end, TOKEN)
        if found is None:
            continue
        end = trim(text, found.start, found.end)
        strong = "key" not in cue.word or "api" in cue.word
        if looks_random(text[found.start:end], 12 if found.explicit and strong else 16):
            yield Found(found.start, end, API_KEY, 2)


__all__ = ["PIN", "keys", "passwords"]
