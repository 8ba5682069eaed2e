"""Histories for bench/staleness.py, written for this project (no data set).

Each case: dated sessions of a user talking with an assistant, the question asked after
the last one, the value that is current, and the values that held before.  Varied
attributes, implicit changes, several changes of one value, out-of-order import (the
``reverse`` flag imports the newer sessions first), and distractors about other people.
Values are matched case-insensitively as words in the context text.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Turn = tuple[str, str]  # role, text
Session = tuple[str, list[Turn]]  # ISO date, turns

FILLER: list[Session] = [
    ("2024-02-03", [("user", "Can you suggest a good day hike near the coast?"),
                    ("assistant", "A coastal trail with a lighthouse at the end is lovely.")]),
    ("2024-03-14", [("user", "What's a quick dinner I can make with chickpeas?"),
                    ("assistant", "Try a chickpea curry with spinach and rice.")]),
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    name: str
    sessions: list[Session]
    question: str
    current: str
    old: list[str]
    reverse: bool = False  # import the sessions newest first
    filler: bool = True  # add the unrelated sessions
    kind: str = "developers"  # what kind of change (the histories' own kinds)
    never_current: list[str] = field(default_factory=list)  # e.g. a plan not yet done


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A history with plans: which events are upcoming ``days`` after ``as_of``."""

    name: str
    sessions: list[Session]
    as_of: str
    days: int
    expected: list[str]  # a word of each upcoming event's statement
    not_expected: list[str] = field(default_factory=list)


def _s(date: str, *turns: str) -> Session:
    """A session of alternating user / assistant turns."""
    return (date, [("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(turns)])


CASES: list[Case] = [
    Case(name="home-move", sessions=[
        _s("2024-01-10", "I live in Lisbon with my partner.", "Lisbon is a lovely city."),
        _s("2024-05-20", "We moved to Porto last month, still unpacking boxes.",
           "Congratulations on the move!")],
        question="Which city do I live in these days?", current="Porto", old=["Lisbon"]),
    Case(name="home-move-reverse", reverse=True, sessions=[
        _s("2024-01-10", "I live in Denver, near the park.", "Nice area."),
        _s("2024-06-02", "I relocated to Austin in May for the new job.", "How is Austin?")],
        question="Where do I live now?", current="Austin", old=["Denver"]),
    Case(name="home-twice", sessions=[
        _s("2023-11-02", "I'm based in Leeds at the moment.", "Got it."),
        _s("2024-02-18", "We just moved to Bristol, the flat is tiny.", "Bristol is great."),
        _s("2024-06-25", "Big news: we moved again, to Cardiff this time.", "Wow, again!")],
        question="What city am I living in?", current="Cardiff", old=["Leeds", "Bristol"]),
    Case(name="home-distractor", sessions=[
        _s("2024-01-05", "I live in Oslo.", "Noted."),
        _s("2024-04-11", "My neighbour Omar moved to Toronto last week.", "Sad to see him go."),
        _s("2024-05-30", "We moved to Bergen at the start of May.", "Bergen is rainy but nice.")],
        question="Where do I live?", current="Bergen", old=["Oslo"]),
    Case(name="employer", sessions=[
        _s("2024-01-08", "I work at Google on the maps team.", "Sounds interesting."),
        _s("2024-04-15", "I started a new job at Stripe last week!", "Congrats!")],
        question="Which company do I work for?", current="Stripe", old=["Google"]),
    Case(name="employer-reverse", reverse=True, sessions=[
        _s("2023-10-02", "I work for Deloitte as an auditor.", "OK."),
        _s("2024-03-12", "I joined Accenture in February.", "How's it going?")],
        question="Where do I work?", current="Accenture", old=["Deloitte"]),
    Case(name="employer-twice", sessions=[
        _s("2023-09-01", "I work at a startup called Fintly.", "Cool."),
        _s("2024-01-20", "I left Fintly and joined Monzo.", "Big change."),
        _s("2024-06-01", "Just accepted an offer from Revolut, starting Monday.", "Congrats!")],
        question="What company am I at right now?", current="Revolut", old=["Fintly", "Monzo"]),
    Case(name="job-title", sessions=[
        _s("2024-01-15", "I work as a nurse at the children's hospital.", "Hard work."),
        _s("2024-05-02", "I got promoted to charge nurse!", "Well deserved!")],
        question="What is my job title now?", current="charge nurse", old=[]),
    Case(name="job-title-2", sessions=[
        _s("2023-12-01", "I work as a junior developer.", "Nice."),
        _s("2024-04-22", "I got promoted to senior engineer yesterday.", "Congrats!")],
        question="What's my role at work?", current="senior engineer", old=["junior developer"]),
    Case(name="partner", sessions=[
        _s("2023-10-10", "I'm dating Sam, we met at a climbing gym.", "How nice."),
        _s("2024-02-14", "I broke up with Sam in January.", "I'm sorry."),
        _s("2024-05-05", "I'm seeing Alex now, it's going really well.", "Happy for you.")],
        question="Who is my partner?", current="Alex", old=["Sam"]),
    Case(name="pet-dog", sessions=[
        _s("2023-08-01", "I have a dog named Max, a beagle.", "Beagles are sweet."),
        _s("2024-03-10", "Sadly our dog Max died in February, so we adopted a rescue puppy "
           "and named her Luna.", "I'm sorry about Max. Welcome, Luna!")],
        question="What is my dog's name?", current="Luna", old=["Max"]),
    Case(name="pet-cat", sessions=[
        _s("2023-07-07", "We have a cat called Mochi.", "Cute name."),
        _s("2024-04-04", "Mochi passed away last month. We adopted a kitten named Tofu.",
           "So sorry. Tofu is a sweet name.")],
        question="What's my cat called?", current="Tofu", old=["Mochi"]),
    Case(name="diet", sessions=[
        _s("2024-01-03", "I'm vegetarian, so no meat recipes please.", "Noted."),
        _s("2024-05-18", "I went vegan in April.", "Great choice.")],
        question="What diet do I follow?", current="vegan", old=["vegetarian"]),
    Case(name="diet-keto", sessions=[
        _s("2023-11-11", "I'm pescatarian, fish is fine.", "Good to know."),
        _s("2024-03-03", "I started a keto diet this month.", "Keto can be tough.")],
        question="What am I eating these days, diet-wise?", current="keto", old=["pescatarian"]),
    Case(name="phone", sessions=[
        _s("2023-12-12", "My phone is a Pixel 7.", "Nice phone."),
        _s("2024-04-30", "I switched to an iPhone 15 last week.", "How do you like it?")],
        question="What phone do I use?", current="iPhone", old=["Pixel"]),
    Case(name="car", sessions=[
        _s("2023-10-01", "I drive a Honda Civic.", "Reliable car."),
        _s("2024-05-09", "We bought a Tesla Model 3 and sold the old car.", "Exciting!")],
        question="What car do I drive?", current="Tesla", old=["Civic"]),
    Case(name="commute", sessions=[
        _s("2024-01-12", "I commute by train every day.", "Trains are relaxing."),
        _s("2024-05-14", "I now bike to work instead of taking the train.", "Great exercise.")],
        question="How do I get to work?", current="bike", old=["train"]),
    Case(name="schedule-gym", sessions=[
        _s("2024-01-20", "I go to the gym on Mondays and Wednesdays.", "Good routine."),
        _s("2024-04-08", "My gym days moved to Tuesdays and Thursdays.", "Got it.")],
        question="Which days do I go to the gym?", current="Tuesdays", old=["Mondays"]),
    Case(name="schedule-yoga", sessions=[
        _s("2024-02-02", "I have yoga class on Fridays.", "Relaxing end of the week."),
        _s("2024-05-06", "My yoga class moved to Sundays.", "Noted.")],
        question="When is my yoga class?", current="Sundays", old=["Fridays"]),
    Case(name="count-kids", sessions=[
        _s("2023-06-06", "We have two kids, both in primary school.", "Busy house!"),
        _s("2024-03-20", "We have three kids now, the baby arrived in March!", "Congratulations!")],
        question="How many kids do I have?", current="three kids", old=["two kids"]),
    Case(name="count-cats", sessions=[
        _s("2023-09-09", "I have 2 cats at home.", "Fun."),
        _s("2024-02-27", "I have 4 cats now, we fostered two and kept them.",
           "That's a lot of cats!")],
        question="How many cats do I have now?", current="4 cats", old=["2 cats"]),
    Case(name="deadline", sessions=[
        _s("2024-01-15", "The grant report is due on 20 February.", "I'll remind you."),
        _s("2024-02-01", "The grant report is now due on 3 March.", "Extension, nice.")],
        question="When is the grant report due?", current="3 March", old=["20 February"]),
    Case(name="favourite-colour", sessions=[
        _s("2023-05-05", "My favourite colour is blue.", "Classic."),
        _s("2024-04-04", "My favourite colour is green these days.", "Green is lovely.")],
        question="What's my favourite colour?", current="green", old=["blue"]),
    Case(name="coffee-tea", sessions=[
        _s("2023-12-20", "I drink coffee every morning.", "Same here."),
        _s("2024-03-30", "I switched from coffee to green tea for my sleep.", "Good idea.")],
        question="What do I drink in the morning?", current="tea", old=[]),
    Case(name="sister-home", sessions=[
        _s("2023-08-08", "My sister Ana lives in Madrid.", "Nice."),
        _s("2024-04-14", "My sister Ana moved to Seville last month.", "Sunny!")],
        question="Where does my sister Ana live?", current="Seville", old=["Madrid"]),
    Case(name="friend-job", sessions=[
        _s("2023-11-30", "My friend Priya works at Microsoft.", "Cool."),
        _s("2024-05-01", "My friend Priya joined OpenAI in April.", "Exciting for her.")],
        question="Where does Priya work?", current="OpenAI", old=["Microsoft"]),
    Case(name="home-neighbour-only", sessions=[
        _s("2024-01-01", "I live in Boston.", "Nice."),
        _s("2024-03-03", "My neighbour Omar moved to Toronto.", "Oh no."),
        _s("2024-05-05", "My friend Lea moved to Chicago.", "Cool.")],
        question="Which city do I live in?", current="Boston", old=[]),
    Case(name="employer-distractor", sessions=[
        _s("2024-01-01", "I work at IKEA in the design team.", "Fun."),
        _s("2024-02-02", "My brother Tom joined Volvo.", "Nice for him."),
        _s("2024-05-05", "I joined Spotify this spring.", "Music!")],
        question="Which company do I work at?", current="Spotify", old=["IKEA"]),
    Case(name="home-reverse-three", reverse=True, sessions=[
        _s("2023-01-10", "I live in Paris.", "Bonjour."),
        _s("2023-09-10", "We moved to Lyon in August.", "Nice city."),
        _s("2024-04-10", "We moved to Marseille last month.", "By the sea!")],
        question="Where do we live now?", current="Marseille", old=["Paris", "Lyon"]),
    Case(name="partner-married", sessions=[
        _s("2023-03-03", "My girlfriend is called Mia.", "Nice."),
        _s("2024-01-01", "I married Mia on New Year's Eve!", "Congratulations!")],
        question="Who am I married to?", current="Mia", old=[]),
    Case(name="dog-ended", sessions=[
        _s("2023-04-04", "I have a dog named Rex.", "Good boy."),
        _s("2024-02-20", "Our dog Rex died last week.", "I'm so sorry.")],
        question="Do I still have my dog Rex?", current="died", old=[]),
    Case(name="vegetarian-ended", sessions=[
        _s("2023-05-05", "I'm vegetarian.", "Got it."),
        _s("2024-04-04", "I'm no longer vegetarian, I eat fish and chicken again.", "OK.")],
        question="Am I vegetarian?", current="no longer", old=[]),
    Case(name="phone-reverse", reverse=True, sessions=[
        _s("2023-06-06", "I use a Samsung Galaxy S21.", "OK."),
        _s("2024-02-02", "I got a Pixel 8 for my birthday.", "Nice gift.")],
        question="Which phone do I have?", current="Pixel", old=["Galaxy"]),
    Case(name="car-twice", sessions=[
        _s("2022-02-02", "I drive a Ford Focus.", "OK."),
        _s("2023-03-03", "We bought a Toyota Prius.", "Hybrid, nice."),
        _s("2024-04-04", "I bought a Volvo XC40 last month.", "Safe car.")],
        question="What car do I have?", current="Volvo", old=["Focus", "Prius"]),
    Case(name="school", sessions=[
        _s("2023-09-01", "I study at Leeds University.", "Nice."),
        _s("2024-02-01", "I transferred and now study at Durham University.", "Good luck.")],
        question="Which university do I study at?", current="Durham", old=[]),
    Case(name="employer-implicit", sessions=[
        _s("2024-01-01", "I work at Acme Corp as an analyst.", "OK."),
        _s("2024-05-15", "First week at Initech went well, much better than Acme.", "Great."),
        _s("2024-05-20", "I got a new job at Initech.", "Congrats!")],
        question="Where do I work these days?", current="Initech", old=[]),
    Case(name="home-we", sessions=[
        _s("2023-12-12", "We live in Dublin, near the river.", "Nice."),
        _s("2024-05-15", "We've moved to Galway, the kids love the beach.", "Lovely.")],
        question="Where do we live?", current="Galway", old=["Dublin"]),
    Case(name="count-bikes", sessions=[
        _s("2023-06-01", "I have 2 bikes in the garage.", "Nice."),
        _s("2024-04-01", "I have 3 bikes now, got a gravel bike.", "Fun.")],
        question="How many bikes do I own?", current="3 bikes", old=["2 bikes"]),
    Case(name="diet-reverse", reverse=True, sessions=[
        _s("2023-02-02", "I'm vegan.", "OK."),
        _s("2024-02-02", "I'm pescatarian now, I eat fish again.", "OK.")],
        question="What's my diet?", current="pescatarian", old=["vegan"]),
    Case(name="home-job-both", sessions=[
        _s("2023-03-03", "I live in Berlin and work at Zalando.", "Cool."),
        _s("2024-03-03", "We moved to Munich in February.", "Nice."),
        _s("2024-04-04", "I joined BMW in March.", "Great.")],
        question="Which city do I live in?", current="Munich", old=["Berlin"]),
    Case(name="home-job-both-employer", sessions=[
        _s("2023-03-03", "I live in Berlin and I work at Zalando.", "Cool."),
        _s("2024-03-03", "We moved to Munich in February.", "Nice."),
        _s("2024-04-04", "I joined BMW in March.", "Great.")],
        question="Where do I work?", current="BMW", old=["Zalando"]),
]

PLANS: list[Plan] = [
    Plan(name="dentist", sessions=[
        _s("2024-05-20", "My dentist appointment is next Tuesday at 3pm.", "Noted.")],
        as_of="2024-05-21T09:00:00+00:00", days=14, expected=["dentist"]),
    Plan(name="moved-deadline", sessions=[
        _s("2024-01-15", "The grant report is due on 20 February.", "OK."),
        _s("2024-02-10", "The grant report is now due on 3 March.", "OK.")],
        as_of="2024-02-11T09:00:00+00:00", days=30, expected=["3 March"],
        not_expected=["20 February"]),
    Plan(name="past-event", sessions=[
        _s("2024-03-01", "I have a job interview on 5 March at 10am.", "Good luck!"),
        _s("2024-03-02", "My flight to Rome is on 20 March.", "Bon voyage.")],
        as_of="2024-03-10T09:00:00+00:00", days=30, expected=["Rome"],
        not_expected=["interview"]),
    Plan(name="cancelled", sessions=[
        _s("2024-04-01", "My haircut is booked for 10 April.", "OK."),
        _s("2024-04-03", "My haircut was cancelled.", "OK."),
        _s("2024-04-03", "The team dinner is on 12 April at 7pm.", "Fun.")],
        as_of="2024-04-05T09:00:00+00:00", days=14, expected=["dinner"],
        not_expected=["haircut"]),
    Plan(name="far-and-near", sessions=[
        _s("2024-06-01", "My sister's wedding is on 15 August.", "Lovely!"),
        _s("2024-06-01", "I have a doctor's appointment tomorrow at 9am.", "OK.")],
        as_of="2024-06-01T20:00:00+00:00", days=7, expected=["doctor"],
        not_expected=["wedding"]),
    Plan(name="rescheduled", sessions=[
        _s("2024-09-02", "My dentist appointment is on 10 September.", "OK."),
        _s("2024-09-05", "My dentist appointment got moved to 17 September at 2pm.", "OK.")],
        as_of="2024-09-06T09:00:00+00:00", days=30, expected=["17 September"],
        not_expected=["10 September"]),
]


# Histories written for the dev set by other hands than the rules' (the JSON files
# beside this one): every kind of change several ways, chains of three values, implied
# changes, plans, changes about other people and things, a second speaker.
HISTORY_FILES = sorted(Path(__file__).resolve().parent.glob("staleness_histories_*.json"))
SPLIT_SEED = 44  # fixed: which half a case falls in never changes between runs


def _case(raw: Any) -> Case:
    return Case(name=raw["name"], question=raw["question"], current=raw["current"],
                sessions=[(day, [(role, text) for role, text in turns])
                          for day, turns in raw["sessions"]],
                old=list(raw["old"]), reverse=bool(raw.get("reverse", False)),
                kind=raw["kind"], never_current=list(raw.get("never_current") or []))


def histories() -> list[Case]:
    """The written histories (every file), in file order."""
    return [_case(raw) for path in HISTORY_FILES for raw in json.loads(path.read_text())]


# the files of the first round were split together with the developers' cases; a file
# added later is split on its own, so no case of an earlier round changes half
FIRST_ROUND = ("staleness_histories_a.json", "staleness_histories_b.json")


def rounds(cases: list[Case]) -> list[list[str]]:
    """The names of each round: the first (the developers' cases and FIRST_ROUND), then
    each later file."""
    later: dict[str, list[str]] = {}
    for path in HISTORY_FILES:
        if path.name not in FIRST_ROUND:
            later[path.name] = [raw["name"] for raw in json.loads(path.read_text())]
    in_later = {n for names in later.values() for n in names}
    given = {c.name for c in cases}
    first = [c.name for c in cases if c.name not in in_later]
    return [first, *([n for n in names if n in given] for names in later.values())]


def split(cases: list[Case]) -> tuple[list[Case], list[Case]]:
    """(tune, measure): a fixed-seed half of each round.  The measure half is only
    measured: its failures are never printed, so no rule is written against its
    phrasings."""
    measured: set[str] = set()
    for names in rounds(cases):
        order = sorted(names)
        random.Random(SPLIT_SEED).shuffle(order)
        measured |= set(order[len(order) // 2:])
    return ([c for c in cases if c.name not in measured],
            [c for c in cases if c.name in measured])
