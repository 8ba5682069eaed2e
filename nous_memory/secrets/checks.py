"""Check digits and shapes that tell a real number or key from a look-alike.

A random 16-digit order number passes Luhn one time in ten, a random IBAN-shaped string
mod-97 one time in ninety-seven: the checks are what lets the detector redact these
numbers without a cue and keep the numbers a user wants remembered.
"""

from __future__ import annotations

import math
from collections import Counter

# IBAN length by country (ISO 13616 registry): a wrong length is not an IBAN
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BI": 27, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24,
    "DE": 22, "DJ": 27, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27,
    "MT": 31, "MU": 30, "NI": 28, "NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28,
    "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24, "SC": 31,
    "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}


def luhn(digits: str) -> bool:
    """The Luhn check of card numbers (and Canadian SINs): one wrong digit fails it."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card_issuer(digits: str) -> bool:
    """Whether the first digits are an issuer range with this length (Visa, Mastercard,
    Amex, Discover, JCB, Diners, UnionPay, Maestro): an order number rarely is."""
    n, two, four = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if two in (30, 36, 38, 39):
        return 14 <= n <= 19
    if digits[0] in "56":
        return 13 <= n <= 19  # Discover, UnionPay, Maestro
    return two == 35 and 16 <= n <= 19  # JCB


def iban(compact: str) -> bool:
    """An IBAN's country length and its mod-97 check (``compact``: upper case, no spaces)."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact[2:4].isdigit():
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def aba_routing(digits: str) -> bool:
    """The ABA checksum of a 9-digit US routing number."""
    if len(digits) != 9:
        return False
    d = [ord(ch) - 48 for ch in digits]
    return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + d[2] + d[5] + d[8]) % 10 == 0


def ssn(area: str, group: str, serial: str) -> bool:
    """A US SSN's parts as the SSA issues them: never area 000, 666 or 9xx, group 00 or
    serial 0000."""
    return (area not in ("000", "666") and area[0] != "9" and group != "00"
            and serial != "0000")


def entropy(token: str) -> float:
    """Shannon entropy in bits per character: random keys score high, words low."""
    counts = Counter(token)
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_random(token: str, min_len: int = 16) -> bool:
    """A token that reads as generated rather than written: long, mixing letters with
    digits (or cases), and of high entropy."""
    if len(token) < min_len:
        return False
    has_digit = any(ch.isdigit() for ch in token)
    has_alpha = any(ch.isalpha() for ch in token)
    mixed_case = any(ch.isupper() for ch in token) and any(ch.islower() for ch in token)
    if not has_alpha or not (has_digit or mixed_case):
        return False
    return entropy(token) >= min(3.0, math.log2(len(token)) - 0.6)
