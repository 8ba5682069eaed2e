"""Facts from plain first-person statements, without an LLM: the close's rule extractor.

A small clause pipeline over each message a person wrote (role ``user``; never the
assistant's, a tool's or the system's):

1. clean: injected memory blocks, quoted text ("...", “...”) and parentheticals go;
2. split into sentences; questions (``?``) go;
3. split sentences into clauses at conjunctions that start a new first-person clause
   ("I moved to Lisbon and I love it");
4. drop clauses that assert nothing about the speaker: hypotheticals and wishes (if,
   would, could, maybe, wish, ...), reported speech (said, told, according to, ...),
   clauses about the listener (you, your), and the speaker's transient states (I'm
   tired, I'm sure);
5. keep clauses whose subject is the speaker ("I ...", "my sister ...") and rewrite them
   in the third person with the speaker's name ("I don't eat meat any more" -> "Ana
   doesn't eat meat any more"; without a name, "The user ...");
6. classify by pattern family: preference, plan, relationship, change, or statement.

What it cannot see it leaves out: it would rather miss a fact than invent one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .. import blocks
from ..memories.event_time import names_a_day
from ..memories.fact_slots import TITLE_DOT, read_slot
from ..memories.messages import TranscriptMessage
from ..people import group_statement
from .statement_words import (
    ADVERBS,
    CHANGE_VERBS,
    DISCOURSE,
    EMPTY,
    HEDGES,
    IRREGULAR_PAST,
    MY_CLAUSE_VERBS,
    NON_FACT_VERBS,
    PLAN_MARKERS,
    PREFERENCE_VERBS,
    RELATIONS,
    REPORTING,
    TRANSIENT_STATES,
)

RULE_CONFIDENCE = 0.5  # below any LLM extraction's (see learn.LLM_DEFAULT_CONFIDENCE)
MIN_WORDS, MAX_WORDS = 2, 40

# quoted text (straight or curly double quotes, curly single quotes) and parentheticals
_QUOTED = re.compile("\"[^\"]*\"|\u201c[^\u201d]*\u201d|\u2018[^\u2019]*\u2019|\\([^)]*\\)"
                     "|\\[[^\\]]*\\]")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# where a new clause starts: before a first-person subject, after punctuation, a
# coordinating conjunction, a dash, or a subordinator (whose clause inherits its main
# clause's doubt: "I wish that I ...", "she said that I ...")
_CLAUSE_BREAK = re.compile(
    r"\s*(?:[,;:]\s*(?:(?:and|but|so|though|although|because|since)\s+)?"
    r"|\s(?:and|but|so|though|although)\s+|\s[-\u2013\u2014]\s+"
    r"|\s(?P<sub>because|since|when|after|before|until|that|as|while|cause"
    r"|realized|realised|noticed|remembered|discovered|learned|found out|figured out)\s+)"
    r"(?=(?:i|i'm|i've|i'll|i'd|my|we|we're|we've|we'll|our)\b)", re.I)
_CONDITIONAL = re.compile(r"^(?:\W*(?:and|but|so|well|oh)\b\W*)*(?:if|unless|whether|suppose"
                          r"|imagine|even if|what if|in case)\b", re.I)
_TIME_PHRASE = re.compile(
    r"(?:just |only )?(?:yesterday|today|tonight|recently|lately|earlier|finally|now|then"
    r"|(?:last|this|next|on|in|over|during|every|at|since) (?:the )?\w+(?: \w+)?"
    r"|(?:a|an|one|two|three|four|five|six|a few|few|a couple of|several) (?:\w+ )?"
    r"(?:days?|weeks?|months?|years?) ago)(?: (?:morning|afternoon|evening|night))?")
_WORD = re.compile(r"[A-Za-z]+(?:['\u2019-][A-Za-z]+)*|\d+(?:[.,:]\d+)*|[^\sA-Za-z\d]")
# "we" and "our" speak for the user too ("we moved to Porto", "our dog died")
_SUBJECTS = ("i", "i'm", "i've", "i'll", "my", "we", "we're", "we've", "we'll", "our")
# a trailing invitation to the listener: "I've done one too, take a look!"
_INVITATION = re.compile(r"[,;]?\s*(?:take a look|have a look|check (?:it|this|them) out"
                         r"|see for yourself|look)\s*[.!]*\s*$", re.I)
# a statement and then a question in one sentence ("I've had my Fitbit for 6 months now,
# any tips for lazy Sundays?"): the question starts at a break, with an asking word
_QUESTION_PART = re.compile(
    r"(?:[,;:]|\s[-\u2013\u2014])\s+(?:(?:and|but|so|also|then|now|well|oh|btw|by the way"
    r"|speaking of which|in that case|anyway)[, ]+)*(?:do|does|did|can|could|would|will"
    r"|should|shall|is|are|was|were|have|has|any|what|what's|how|why|where|when|which|who"
    r"|whom|whose|got|know|mind|ideas|thoughts|suggestions|recommendations|tips)\b", re.I)
_ASKING = re.compile(r"^\W*(?:do|does|did|can|could|would|will|should|shall|is|are|was"
                     r"|were|have|has|any|what|how|why|where|when|which|who)\b", re.I)
# an aside after a dash that is not the speaker's own clause ("... for 9 months now - it's
# crazy how time flies") is commentary, not part of the fact
_ASIDE = re.compile(r"\s[-\u2013\u2014]\s+")
# a thing of the speaker's with a date that moved or is set: "the report is now due on ..."
_THING_PLAN = re.compile(r"^the [a-z' -]{2,40}? (?:is|are|was|were|has been|got|just got)"
                         r" (?:now |finally |officially )?(?:due|moved|rescheduled|"
                         r"postponed|pushed|cancell?ed|called off|set|booked|scheduled)\b")
# "the team dinner is on 12 April": a dated plan, kept when it names a day
_THING_ON = re.compile(r"^the [a-z' -]{2,40}? (?:is|are|will be) (?:now )?(?:on|at|this|"
                       r"next|tomorrow|set for|planned for|scheduled for|booked for)\b")
# a statement whose subject is left out: "Just accepted an offer from Revolut", "Got
# promoted today": the speaker's own news (a past verb of change first)
_ELIDED = frozenset("accepted adopted bought booked finished got graduated joined landed "
                    "left married moved quit relocated retired signed sold started "
                    "switched took transferred went".split())
# a clause that ends on a bare pronoun points at something the fact cannot carry
_DANGLING = frozenset("it them that this those these him her one".split())


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """One fact the rules found: its sentence, whose it is, its kind, where it was said."""

    content: str
    subject: str
    category: str
    seq: int
    confidence: float = RULE_CONFIDENCE
    group: bool = False  # said for a group ("our wifi ..."): shared, not the speaker's own


def extract_statements(messages: Sequence[TranscriptMessage]) -> list[Statement]:
    """The facts a conversation's people stated about themselves, in order, deduplicated."""
    seen: set[str] = set()
    found: list[Statement] = []
    for message in messages:
        if message.role != "user":
            continue  # the assistant's words are not facts about the user
        speaker = (message.name or "").strip() or "The user"
        for clause in clauses(blocks.strip(message.content)):
            statement = rewrite(clause, speaker, message.seq)
            if statement is not None and statement.content.lower() not in seen:
                seen.add(statement.content.lower())
                found.append(replace(statement, group=group_statement(clause)))
    return found


def compound_statements(text: str) -> list[str]:
    """A text of several clauses, each a fact of its speaker about a different thing, as
    the facts the close would learn from it ("I live in Lisbon and I have a dog called
    Pepper": two).  [] (learn the text whole) when it is one statement, when any clause
    is not such a fact (nothing of it may be lost: "I'm vegan. Please never recommend
    steakhouses."), or when two clauses give one slot two values ("I moved to Berlin in
    2020. Before that I lived in Lisbon": which holds is in the words between them)."""
    parts = list(clauses(blocks.strip(text)))
    if len(parts) < 2 or REPORTING & {w.lower() for w in _WORD.findall(text)}:
        return []  # one statement, or someone else's words reported
    found = extract_statements([TranscriptMessage(seq=0, role="user", content=text)])
    slots = [read_slot(statement.content) for statement in found]
    keys = [slot.key for slot in slots if slot is not None]
    if len(found) != len(parts) or len(set(keys)) != len(keys):
        return []
    return [statement.content for statement in found]


def clauses(text: str) -> Iterable[str]:
    """Declarative clauses: quotes, questions, conditionals and parentheticals removed,
    and a subordinate clause of a doubtful main clause with it."""
    text = TITLE_DOT.sub(r"\1", _QUOTED.sub(" ", text).replace("\u2019", "'"))
    for sentence in _SENTENCE.findall(text):
        sentence = sentence.strip()
        if sentence.endswith("?"):
            sentence = declarative_head(sentence)
        if not sentence or _CONDITIONAL.match(sentence):
            continue
        start, doubtful, subordinate, carry = 0, False, False, ""
        for match in [*_CLAUSE_BREAK.finditer(sentence), None]:
            end = match.start() if match is not None else len(sentence)
            clause = _ASIDE.split(sentence[start:end], maxsplit=1)[0]
            clause = _INVITATION.sub("", clause).strip(" ,;:-.!").strip()
            clause = f"{carry} {clause}".strip()
            carry = clause if _TIME_PHRASE.fullmatch(clause.lower()) else ""
            doubtful = (subordinate and doubtful) or _unasserted(
                [w.lower() for w in _WORD.findall(clause)])
            if clause and not doubtful and not carry:
                yield clause
            if match is not None:
                start, subordinate = match.end(), match.group("sub") is not None


def declarative_head(sentence: str) -> str:
    """What a question sentence stated before it asked ("" when it only asks): the part
    before the first break that starts the question, unless that part asks too."""
    match = _QUESTION_PART.search(sentence)
    if match is None:
        return ""
    head = sentence[:match.start()].strip()
    return "" if _ASKING.match(head) else head


def rewrite(clause: str, speaker: str, seq: int) -> Statement | None:
    """The clause as a third-person fact about ``speaker``, or None (see the module)."""
    words = _WORD.findall(clause)
    while words and (words[0].lower() in DISCOURSE or not words[0][0].isalnum()):
        words = words[1:]
    words, when = _leading_time(words)
    low = [w.lower() for w in words]
    if low and low[-1] in _DANGLING:
        # "I bought a bike and love it": the part before the last "and" stands alone
        cut = max((i for i, w in enumerate(low) if w in ("and", "but")), default=0)
        words, low = words[:cut], low[:cut]
    if not MIN_WORDS <= len(low) <= MAX_WORDS or _unasserted(low) or (
            not low or low[-1] in _DANGLING):
        return None
    if low[0] in ("my", "our"):
        return _about_my(words, low, speaker, seq)
    if low[0] == "the" and (_THING_PLAN.search(" ".join(low)) or (
            _THING_ON.search(" ".join(low)) and names_a_day(clause))):
        # "the grant report is now due on 3 March": a plan of the speaker's, as said
        return _statement(words, speaker, "plan", seq)
    if low[0] in _ELIDED or (low[0] in ("just", "finally", "recently") and len(low) > 1
                             and low[1] in _ELIDED):
        words, low = ["I", words[0].lower(), *words[1:]], ["i", *low]
    if low[0] not in ("i", "i'm", "i've", "i'll", "we", "we're", "we've", "we'll"):
        return None  # about someone else, or no subject: never the speaker's fact
    at, head = _predicate(low)
    if at is None or not _has_content(low[at + (head not in ("is", "was")):]):
        return None
    verb = low[at]
    if verb in NON_FACT_VERBS or (head in ("is", "was") and verb in TRANSIENT_STATES
                                  and not _states_a_preference(low, at, head)):
        return None
    category = _category(low, at, head)
    if category == "preference" and low[at + 1:at + 2] and low[at + 1] in EMPTY and (
            not _has_content(low[at + 2:])):
        return None  # "I love that!": a reaction, not a preference
    rest = list(words[at:])
    if not head and not _past(verb):
        rest[0] = conjugate(rest[0])
    qualifiers = [w for w in words[1:at] if w.lower() in ADVERBS or w.lower() == "not"]
    phrase = [speaker, *([head] if head else []), *qualifiers, *_own_words(rest, speaker),
              *when]
    return _statement(phrase, speaker, category, seq)


def _leading_time(words: list[str]) -> tuple[list[str], list[str]]:
    """"Last month I got hurt" -> ("I got hurt", "last month"): the time goes last."""
    low = [w.lower() for w in words]
    at = next((i for i, w in enumerate(low[:7]) if w in _SUBJECTS), 0)
    lead = [w for w in low[:at] if w != ","]
    if at and _TIME_PHRASE.fullmatch(" ".join(lead)):
        when = [w for w in words[:at] if w != ","]
        return words[at:], [when[0].lower(), *when[1:]]
    return words, []


def _about_my(words: list[str], low: list[str], speaker: str, seq: int) -> Statement | None:
    """"My sister Ana lives in Porto" -> "Ana's sister Ana lives in Porto"."""
    if len(low) < 3 or not any(w in MY_CLAUSE_VERBS or w.endswith("ed") for w in low[2:]):
        return None
    category = "relationship" if low[1] in RELATIONS else "statement"
    return _statement(_own_words(words, speaker), speaker, category, seq)


def _unasserted(low: list[str]) -> bool:
    """Hypotheticals, wishes, reported speech, or about the listener."""
    return any(w in HEDGES or w in REPORTING or w in ("you", "your", "you're", "yours")
               for w in low) or any(a == "according" and b == "to"
                                    for a, b in itertools.pairwise(low))


def _has_content(low: Sequence[str]) -> bool:
    return any(w.isalpha() and len(w) > 2 and w not in EMPTY for w in low) or any(
        w[:1].isdigit() for w in low)


_AUXILIARIES = {"am": "is", "are": "is", "were": "was", "have": "has", "haven't": "hasn't",
                "don't": "doesn't",
                "do": "does", "was": "was", "wasn't": "wasn't", "had": "had",
                "will": "will", "won't": "won't", "did": "did", "didn't": "didn't",
                "can": "can", "can't": "can't"}


def _predicate(low: list[str]) -> tuple[int | None, str]:
    """Where the main verb is, and the auxiliary in its third-person form ("is", "has",
    "doesn't", ...; "" for a bare verb)."""
    head = {"i'm": "is", "i've": "has", "i'll": "will", "we're": "is", "we've": "has",
            "we'll": "will"}.get(low[0], "")
    at = 1
    while at < len(low) and low[at] in ADVERBS:
        at += 1
    if not head and at < len(low) and low[at] in _AUXILIARIES:
        head = _AUXILIARIES[low[at]]
        at += 1
    while at < len(low) and (low[at] in ADVERBS or low[at] == "not"):
        at += 1
    return (at, head) if at < len(low) else (None, head)


def _states_a_preference(low: list[str], at: int, head: str) -> bool:
    return _category(low, at, head) == "preference"


def _category(low: list[str], at: int, head: str) -> str:
    verb = low[at]
    following = low[at:at + 4]
    if _base(verb) in PREFERENCE_VERBS or (head == "is" and (
            verb in ("into", "allergic", "vegetarian", "vegan") or "fan" in following)):
        return "preference"
    if head == "will" or _base(verb) in PLAN_MARKERS or verb in PLAN_MARKERS or (
            verb in ("going", "planning") and "to" in following):
        return "plan"
    if _base(verb) in CHANGE_VERBS or "anymore" in low or any(
            a in ("any", "no") and b in ("more", "longer")
            for a, b in itertools.pairwise(low)):
        return "change"
    return "statement"


def _past(verb: str) -> bool:
    return verb in IRREGULAR_PAST or verb.endswith("ed")


def _base(verb: str) -> str:
    if verb in IRREGULAR_PAST:
        return IRREGULAR_PAST[verb]
    for suffix, repl in (("ied", "y"), ("ing", ""), ("ing", "e"), ("ed", "e"), ("ed", ""),
                         ("ies", "y"), ("es", ""), ("s", "")):
        if verb.endswith(suffix) and len(verb) > len(suffix) + 2:
            candidate = verb[: -len(suffix)] + repl
            if candidate[-1:] == candidate[-2:-1] and candidate[:-1] in CHANGE_VERBS:
                candidate = candidate[:-1]  # "quitting", "planned"
            if candidate in CHANGE_VERBS or candidate in PREFERENCE_VERBS or (
                    candidate in PLAN_MARKERS):
                return candidate
    return verb


def _own_words(words: Sequence[str], speaker: str) -> list[str]:
    """The speaker's own pronouns made third person: my -> Ana's, me -> Ana."""
    inside = "the user" if speaker == "The user" else speaker  # not capitalised mid-text
    own = {"my": f"{inside}'s", "mine": f"{inside}'s", "me": inside,
           "myself": "themselves", "our": f"{inside}'s", "ours": f"{inside}'s",
           "us": inside, "ourselves": "themselves"}
    return [own.get(w.lower(), w) for w in words]


def conjugate(verb: str) -> str:
    """Third person singular of a base verb: eat -> eats, go -> goes, study -> studies."""
    low = verb.lower()
    special = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is"}
    if low in special:
        return special[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _statement(words: list[str], speaker: str, category: str, seq: int) -> Statement | None:
    text = " ".join(words)
    text = re.sub(r"\s+([,.!;:%])", r"\1", text)
    text = re.sub(r"\s+'s\b", "'s", text)
    text = re.sub(r"(\w) ' (?=\w)", r"\1' ", text).strip()  # "the neighbors' dogs"
    if len(text.split()) < MIN_WORDS + 1 or not any(c.isalpha() for c in text[len(speaker):]):
        return None
    return Statement(content=text[0].upper() + text[1:] + ".", subject=speaker,
                     category=category, seq=seq)
