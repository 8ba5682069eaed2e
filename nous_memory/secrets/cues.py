"""The one mechanism behind every cued secret: a cue, then within a short window an
optional gap of words ("for my bank", "to the side door"), a link ("is", ":", "=",
"changed to", "lautet"), then a value of the shape the kind takes.

The more explicit the link, the less the value has to look like a secret: "password
hunter2" needs a digit or symbol, "password is sunshine" does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from .found import compile_pattern
from .vocabulary import alternation

WINDOW = 160  # characters after a cue in which its value must start
_GAP = r"(?:[\s()/]+\pL[\pL'\x{2019}&.\-]*){1,6}?"
_LINK_WORDS = (r"is|was|are|were|be|been|will|would|now|still|just|currently|set|changed|"
               r"updated|to|as|it's|it\x{2019}s|its|it|says|shows|reads|of|becomes|became|"
               r"should|number|no|num|nr|ist|lautet|sind|war|est|c'est|es|era|är|jest|"
               r"er|wie|zijn|sera|nummer|numer|numero|numeros")
# words ending in a letter outside ASCII: RE2's \b is ASCII, so their end is a space
_LINK_WORDS_WIDE = r"é|è|será|número|numéro"
_LINK_ONE = (rf"(?:\s+(?:{_LINK_WORDS})\b\.?|\s+(?:{_LINK_WORDS_WIDE})(?:\s|$)"
             r"|\s*[:=\x{FF1A}]+|\s+[-\x{2013}\x{2014}>#]+"
             r"|\s*\?|['\x{2019}]s\b|\s*は)")
_LINK_REQ = rf"(?:\s*[\"'\x{{201D}}\x{{2019}})]?{_LINK_ONE})+\s*"  # "(for the wifi) is"
_LINK_OPT = rf"(?:\s*[\"'\x{{201D}}\x{{2019}}]?{_LINK_ONE})*\s*"
_QUOTED = (r"[\"'\x{201C}\x{2018}`\x{AB}]"
           r"(?P<q>[^\"'\x{201C}\x{201D}\x{2018}\x{2019}`\x{AB}\x{BB}\n]{1,120})"
           r"[\"'\x{201D}\x{2019}`\x{BB}]")


def after(value: str) -> Any:
    """The anchored pattern of what follows a cue: gap and link, then the value (``q``
    quoted, ``b`` one token in brackets, or ``v``)."""
    return compile_pattern(
        rf"(?:(?P<gap>{_GAP}){_LINK_REQ}|(?P<link>{_LINK_OPT}))"
        rf"(?:{_QUOTED}|\((?P<b>[^\s(),]{{1,64}})[),]|(?P<v>{value}))",
        case_sensitive=False)


TOKEN = after(r"[^\s\"'\x{201C}\x{201D}\x{2018}\x{2019}`\x{AB}\x{BB}(]"
              r"[^\s\"'\x{201C}\x{201D}\x{2018}\x{2019}`\x{AB}\x{BB}]*")  # "(for" opens a remark
CODE = after(r"[#*]?(?:[A-Z]-)?[A-Za-z0-9]+(?:[ \-.][A-Za-z0-9]+)*[#*]?")
ID = after(r"[A-Za-z0-9]+(?:[ \-./][A-Za-z0-9]+)*")


class Cue(NamedTuple):
    start: int
    end: int
    word: str  # lower case, spaces collapsed


class Value(NamedTuple):
    start: int
    end: int
    explicit: bool  # a gap or a link stood between cue and value
    quoted: bool
    between: str  # the text from the cue's end to the value, lower case


def cue_pattern(words: tuple[str, ...], extra: str = "") -> Any:
    """The cues: at each place the longest ("pincode" is one word, not "pin" glued to
    "code")."""
    return compile_pattern(alternation(words) + extra, case_sensitive=False, longest=True)


def _glued(ch: str) -> bool:
    return ch.isalnum() and ord(ch) < 0x3000  # CJK cues stand without spaces


def cues(pattern: Any, text: str) -> Iterator[Cue]:
    """Where the pattern's words stand as words (not inside a longer one)."""
    for match in pattern.finditer(text):
        start, end = match.span()
        if (start and _glued(text[start - 1])) or (end < len(text) and _glued(text[end])):
            continue
        yield Cue(start, end, " ".join(match.group().lower().split()))


def value_after(text: str, cue_end: int, pattern: Any) -> Value | None:
    """The value a cue introduces, if one follows within the window."""
    window = text[cue_end:cue_end + WINDOW]
    match = pattern.match(window)
    if match is None:
        return None
    bracketed = match.group("b") is not None  # "(hunter22)": a value set apart, its
    quoted = match.group("q") is not None  # shape still checked ("(gmail)" is a word)
    group = pattern.groupindex["b" if bracketed else "q" if quoted else "v"]
    explicit = match.group("gap") is not None or bool(match.group("link").strip(" \t"))
    start, end = cue_end + match.start(group), cue_end + match.end(group)
    between = text[cue_end:start - bracketed].lower()
    if between.count("(") > between.count(")") and any(
            ch.isalpha() for ch in between[:between.rfind("(")]):
        return None  # inside a remark opened after other words: that clause's own words
        # ("Mnemonic flashcards (the guide is great)"); "password (new: X)" is the cue's
    return Value(start, end, explicit, quoted, between)


def trim(text: str, start: int, end: int) -> int:
    """The end of a value without the sentence's punctuation after it."""
    while end > start and text[end - 1] in ".,;:)]}>\"'\u201D\u2019":
        end -= 1
    return end


def words_before(text: str, start: int, span: int = 60) -> list[str]:
    """The words of the same clause just before ``start`` (lower case)."""
    before = text[max(0, start - span):start]
    for stop in ".!?\n;":
        before = before.rsplit(stop, 1)[-1]
    return before.lower().replace(",", " ").replace(":", " ").split()
