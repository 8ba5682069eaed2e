"""Secrets recognised by their own shape, wherever they stand: vendor keys, JWTs, private
key blocks, credentials in URLs, Luhn-valid card numbers, mod-97-valid IBANs, US SSNs and
UK National Insurance numbers.

Each shape is strict enough (a vendor prefix with its alphabet and length, a check
digit, an issuer range, a government's numbering rules) that no cue is needed; what is
not checked here is left to the cued values (``cued.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import re2

from .checks import IBAN_LENGTHS, card_issuer, iban, looks_random, luhn, ssn
from .found import API_KEY, BANK, CARD, GOV_ID, IBAN, Found, compile_pattern

# keys whose prefix names the vendor, with each vendor's alphabet and length
_VENDOR_KEY = compile_pattern(
    r"\b(?:"
    r"sk-(?:proj-|ant-(?:api\d\d-)?|or-v1-|svcacct-|live-)?[A-Za-z0-9_\-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,}|glpat-[A-Za-z0-9_\-]{20,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|AIPA)[A-Z0-9]{16}|AIza[0-9A-Za-z_\-]{35}"
    r"|ya29\.[0-9A-Za-z_\-]{20,}|xox[abposr]-[A-Za-z0-9\-]{10,}|xapp-\d-[A-Za-z0-9\-]{10,}"
    r"|(?:sk|pk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{24,}"
    r"|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_\-]{50,}"
    r"|SG\.[\w\-]{16,}\.[\w\-]{16,}|SK[0-9a-f]{32}|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"
    r"|dop_v1_[a-f0-9]{64}|key-[0-9a-zA-Z]{32}|sq0(?:atp|csp)-[0-9A-Za-z\-_]{22,}"
    r"|EAA[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{40,}|r8_[A-Za-z0-9]{30,}|AGE-SECRET-KEY-1[0-9A-Z]{50,}"
    r")")
# any other key that follows the vendor convention: a short prefix, ``_`` or ``-``, then a
# long random body (checked by ``looks_random``, so an ordinary hyphenated id is kept)
_PREFIXED_KEY = compile_pattern(
    r"\b[A-Za-z][A-Za-z0-9]{1,11}(?:[_\-][A-Za-z0-9]{1,10}){0,2}[_\-]([A-Za-z0-9]{20,})\b")
_JWT = compile_pattern(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*")
_PEM = compile_pattern(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s\\:,.\-]*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$|\n\s*\n)")
# scheme://user:password@host: the password, a credential of a service like a key
_URL_CREDENTIALS = compile_pattern(
    r"\b[A-Za-z][A-Za-z0-9+.\-]{1,15}://[^\s:/@]{1,64}:([^\s@/]{1,128})@")
# a generated token in a URL's path after a word that says what it is: a webhook's or
# a service hook's secret (Discord, Slack), a key or token passed in the path
_URL_TOKEN = compile_pattern(
    r"://[^\s/]+/(?:[^\s/?#]+/)*?(?:webhooks?|hooks|services|tokens?|keys?|secrets?)/"
    r"(?:[^\s/?#]+/){0,3}([A-Za-z0-9_\-]{24,})", case_sensitive=False)
# a run of digits in groups parted by one space or dash; ``cards`` finds a card in it
_DIGIT_RUN = compile_pattern(r"\d+(?:[ \-]\d+)*")
_IBAN = compile_pattern(r"\b[A-Za-z]{2}\d{2}[ ]?[A-Za-z0-9]{2}(?:[ ]?[A-Za-z0-9]){8,30}")
_SSN = compile_pattern(r"\b(\d{3})-(\d{2})-(\d{4})\b|\b(\d{3}) (\d{2}) (\d{4})\b")
_NI_NUMBER = compile_pattern(
    r"\b([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_NI_NEVER = frozenset({"BG", "GB", "NK", "KN", "TN", "NT", "ZZ"})


def _free_before(text: str, start: int) -> bool:
    """Whether nothing number-like is glued to the left (a phone's ``+``, a decimal point,
    another digit or letter)."""
    if start == 0:
        return True
    before = text[start - 1]
    return not (before.isalnum() or before in "+.,/$£€")


def cards(text: str) -> Iterator[Found]:
    """Card numbers: 13-19 digits (whole groups of a run), an issuer's range, Luhn."""
    for run in _DIGIT_RUN.finditer(text):
        start, end = run.span()
        if end - start < 13 or not _free_before(text, start):
            continue
        if end < len(text) and (text[end].isalpha() or (text[end] in "/,."
                                and end + 1 < len(text) and text[end + 1].isdigit())):
            continue
        groups = [(m.start() + start, m.end() + start)
                  for m in re2.finditer(r"\d+", text[start:end])]
        found = _card_in(text, groups)
        if found is not None:
            yield found


def _card_in(text: str, groups: list[tuple[int, int]]) -> Found | None:
    """The longest card number made of consecutive groups, the first one first."""
    for i in range(len(groups)):
        digits = ""
        best = None
        for j in range(i, len(groups)):
            digits += text[groups[j][0]:groups[j][1]]
            if len(digits) > 19:
                break
            if len(digits) >= 13 and card_issuer(digits) and luhn(digits):
                best = (groups[i][0], groups[j][1])
        if best is not None:
            return Found(best[0], best[1], CARD, 0)
    return None


def ibans(text: str) -> Iterator[Found]:
    """IBANs: the country's length reached on group boundaries, then mod-97."""
    for match in _IBAN.finditer(text):
        start, end = match.span()
        if not _free_before(text, start):
            continue
        country = text[start:start + 2].upper()
        length = IBAN_LENGTHS.get(country)
        if length is None:
            continue
        compact, pos = "", start
        while pos < end and len(compact) < length:
            if text[pos] != " ":
                compact += text[pos].upper()
            pos += 1
        if (len(compact) == length and (pos == len(text) or not text[pos].isalnum())
                and iban(compact)):
            yield Found(start, pos, IBAN, 0)


def shaped(text: str) -> Iterator[Found]:
    """Keys, tokens, private keys, URL passwords, SSNs and NI numbers."""
    for match in _PEM.finditer(text):
        yield Found(match.start(), match.end(), API_KEY, 0)
    for match in _JWT.finditer(text):
        yield Found(match.start(), match.end(), API_KEY, 0)
    for match in _VENDOR_KEY.finditer(text):
        yield Found(match.start(), match.end(), API_KEY, 0)
    for match in _PREFIXED_KEY.finditer(text):
        if looks_random(match.group(1), 20):
            yield Found(match.start(), match.end(), API_KEY, 1)
    for match in _URL_CREDENTIALS.finditer(text):
        yield Found(match.start(1), match.end(1), API_KEY, 0)
    for match in _URL_TOKEN.finditer(text):
        if looks_random(match.group(1), 24):
            yield Found(match.start(1), match.end(1), API_KEY, 1)
    for match in _SSN.finditer(text):
        parts = match.groups()
        area, group, serial = parts[:3] if parts[0] is not None else parts[3:]
        if ssn(area, group, serial) and _free_before(text, match.start()):
            yield Found(match.start(), match.end(), GOV_ID, 1)
    for match in _NI_NUMBER.finditer(text):
        if match.group(1) not in _NI_NEVER:
            yield Found(match.start(), match.end(), GOV_ID, 1)


def find_shaped(text: str) -> Iterator[Found]:
    """Every secret known by its shape alone."""
    yield from shaped(text)
    yield from cards(text)
    yield from ibans(text)


__all__ = ["BANK", "find_shaped"]
