"""The secret detector: each kind found in several phrasings and formats, the values a
user wants kept left alone, and redaction deterministic and idempotent."""

from __future__ import annotations

import itertools

import pytest

from nous_memory.secrets import KINDS, find_secrets, placeholder, redact

FOUND = [
    # (text, secret value, kind)
    ("my email password is Tr0ub4dor&3, don't forget", "Tr0ub4dor&3", "password"),
    ("wifi pw: lemon-tree-77", "lemon-tree-77", "password"),
    ("the password for netflix is 'sunshine'", "sunshine", "password"),
    ("use Hunter2! to log in", "Hunter2!", "password"),
    ("login: ana@mail.com / Winter$Sun2025", "Winter$Sun2025", "password"),
    ("Mein Passwort ist Blume!42", "Blume!42", "password"),
    ("DB_PASSWORD=s3cr3t-Value", "s3cr3t-Value", "password"),
    ("OPENAI_API_KEY=sk-proj-abcDEF1234567890abcdefGHIJ", "sk-proj-abcDEF1234567890abcdefGHIJ",
     "api key"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghijABCDEFGHIJ012345",
     "api key"),
    ("AWS key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "api key"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcDEF123_-x",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcDEF123_-x", "api key"),
    ("db: postgres://admin:n0tS0secret@db.example.com/app", "n0tS0secret", "api key"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1c2\n-----END RSA PRIVATE KEY-----",
     "MIIEpAIBAAKCAQEA1c2", "api key"),
    ("card 4111 1111 1111 1111 exp 12/27", "4111 1111 1111 1111", "card number"),
    ("pay with 5425-2334-3010-9903 please", "5425-2334-3010-9903", "card number"),
    ("amex 378282246310005", "378282246310005", "card number"),
    ("CVV 123 on the visa", "123", "card security code"),
    ("card 4111111111111111, the code on the back is 552", "552", "card security code"),
    ("IBAN DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00", "iban"),
    ("send it to GB82WEST12345698765432 today", "GB82WEST12345698765432", "iban"),
    ("sort code 12-34-56, account number 31926819", "31926819", "bank account"),
    ("sort code 12-34-56, account number 31926819", "12-34-56", "bank account"),
    ("routing number 021000021", "021000021", "bank account"),
    ("Your verification code is 482913", "482913", "one-time code"),
    ("OTP: 5521", "5521", "one-time code"),
    ("Le code de vérification est 504 817", "504 817", "one-time code"),
    ("the gate code is 4821#", "4821", "pin"),
    ("my locker combination is 12-34-56", "12-34-56", "pin"),
    ("alarm code 7301, back at 6", "7301", "pin"),
    ("my PIN is 0482", "0482", "pin"),
    ("the safe opens with 36-12-48", "36-12-48", "pin"),
    ("my SSN is 123-45-6789", "123-45-6789", "government id"),
    ("NI number AB 12 34 56 C", "AB 12 34 56 C", "government id"),
    ("passport number 533380006", "533380006", "government id"),
    # a remark between cue and link, or a value set apart in brackets
    ("my password (for the wifi) is hunter22", "hunter22", "password"),
    ("my password is (hunter22)", "hunter22", "password"),
    ("the door code (4471) works", "4471", "pin"),
    ("my wifi password (new: Tr0ub4dor&3x)", "Tr0ub4dor&3x", "password"),
    ("password (for the wifi: hunter22)", "hunter22", "password"),
    ("password (hunter22, lowercase)", "hunter22", "password"),
    ("PIN (changed to 4821) for the card", "4821", "pin"),
    ("password (gmail) Xk9#mP2qZ", "Xk9#mP2qZ", "password"),
    # a cue glued to its kind is one word; link words ending outside ASCII
    ("de pincode van de fietskluis is 8462", "8462", "pin"),
    ("pinkoden till kortet är 8 1 4 0", "8 1 4 0", "pin"),
    ("il codice del lucchetto della palestra è 3-7-1-9", "3-7-1-9", "pin"),
    ("meu CPF é 384.917.260-04", "384.917.260-04", "government id"),
    ("Mein Personalausweis hat die Nummer L7X4RT2F9", "L7X4RT2F9", "government id"),
    ("Ditt engångslösenord är 804 551", "804 551", "password"),
    # what the value is, then the value; a card pasted whole; a door code with a letter
    ("cvc is the 3 digits on back: 480", "480", "card security code"),
    ("4111 1111 1111 1111 / 04/29 / 615 - work card", "615", "card security code"),
    ("le code de la porte c'est 4B728", "4B728", "pin"),
    ("passphrase: velvet otter harbor lantern 9", "velvet otter harbor lantern 9", "password"),
    ("hook https://discord.com/api/webhooks/1187264530918273645/Xk9mQ2pLzR7tVn4Bw8cY1dJ6hF3g",
     "Xk9mQ2pLzR7tVn4Bw8cY1dJ6hF3g", "api key"),
]

KEPT = [
    "the door code is on the fridge: see the note",
    "see https://docs.google.com/document/d/1aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789abc/edit",
    "card ending 4242, expires 04/29, 3 items in the basket",
    "My mom's number is (415) 555-0134, save it under Mom",
    "call me at +1 415 555 2671",
    "my card ending in 4242 was declined",
    "order number 1234567890123 ships Friday",
    "zip code 90210",
    "error code 404 again",
    "the flight is on 2024-03-15 at 14:30",
    "it cost $1,249.99",
    "I forgot my password again, remind me to reset it",
    "the key is under the mat",
    "we use it for the password reset emails",
    "use code SAVE20 at checkout",
    "the meeting ID is 842 1177 5521? no, that's Zoom",
    "[redacted: password] and [redacted: card number]",
    # a remark opened after a cue is its own clause: "great" is no mnemonic's value
    "Mnemonic flashcards (Tofugu's hiragana guide is great), writing each one out",
    "the password field (optional) can stay empty",
]


def _covered(text: str, value: str) -> set[str]:
    start = text.index(value)
    spans = [s for s in find_secrets(text) if s.start <= start and s.end >= start + len(value)]
    return {s.kind for s in spans}


@pytest.mark.parametrize(("text", "value", "kind"), FOUND)
def test_each_kind_is_found_with_its_kind(text: str, value: str, kind: str) -> None:
    assert _covered(text, value) == {kind}
    assert value not in redact(text).text


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_are_kept(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text).text == text


def test_redact_keeps_the_rest_byte_for_byte() -> None:
    text = "I live in Porto 🏔 and my PIN is 0482; the door code is 1234."
    out = redact(text)
    assert out.text == ("I live in Porto 🏔 and my PIN is [redacted: pin]; "
                        "the door code is [redacted: pin].")
    assert out.kinds == ("pin", "pin") and out.count == 2


@pytest.mark.parametrize(("text", "value", "kind"), FOUND)
def test_redaction_is_idempotent(text: str, value: str, kind: str) -> None:
    once = redact(text)
    twice = redact(once.text)
    assert twice.text == once.text and twice.count == 0


def test_placeholders_are_never_secrets() -> None:
    text = " ".join(f"my password is {placeholder(kind)}" for kind in KINDS)
    assert find_secrets(text) == []


def test_secrets_are_in_order_and_disjoint() -> None:
    text = "pw: Abc!2345 " * 3 + "card 4111 1111 1111 1111 cvv 123 OTP 99812"
    found = find_secrets(text)
    assert [s.kind for s in found][-3:] == ["card number", "card security code", "one-time code"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))


def test_a_repeated_value_is_redacted_everywhere() -> None:
    assert redact("door code 4416? no wait, just 4416").text == (
        "door code [redacted: pin]? no wait, just [redacted: pin]")


def test_a_large_text_is_handled() -> None:
    """A few MB of mixed text (speed is the bench's business: bench/secrets.py)."""
    unit = "I live in Porto, order 1234567890123, my PIN is 0482. " * 50
    text = unit * 400  # about 1 MB
    out = redact(text)
    assert out.count == 50 * 400 and "0482" not in out.text
