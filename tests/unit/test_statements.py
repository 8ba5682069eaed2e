"""The rule extractor: what people state about themselves becomes a third-person fact;
questions, hypotheticals, quotes, reported speech and other people's words never do."""

from __future__ import annotations

import pytest

from nous_memory.episodes.chunks import TranscriptMessage
from nous_memory.episodes.statements import conjugate, extract_statements


def _facts(*texts: str, role: str = "user", name: str | None = "Ana") -> list[str]:
    messages = [TranscriptMessage(seq=i, role=role, content=t, name=name)
                for i, t in enumerate(texts)]
    return [s.content for s in extract_statements(messages)]


@pytest.mark.parametrize(("said", "fact", "category"), [
    # changes
    ("I moved to Lisbon last spring.", "Ana moved to Lisbon last spring.", "change"),
    ("Honestly, I quit my job at the bank.", "Ana quit Ana's job at the bank.", "change"),
    ("I started a pottery class in March!", "Ana started a pottery class in March.",
     "change"),
    ("I don't eat meat any more.", "Ana doesn't eat meat any more.", "change"),
    ("I adopted a rescue dog last week.", "Ana adopted a rescue dog last week.", "change"),
    # preferences
    ("I really love hiking in the mountains.", "Ana really loves hiking in the mountains.",
     "preference"),
    ("I hate crowded trains.", "Ana hates crowded trains.", "preference"),
    ("I'm vegetarian.", "Ana is vegetarian.", "preference"),
    ("I'm a big fan of Murakami's novels.", "Ana is a big fan of Murakami's novels.",
     "preference"),
    ("I prefer tea to coffee.", "Ana prefers tea to coffee.", "preference"),
    # plans
    ("I'm planning to run a marathon in May.", "Ana is planning to run a marathon in May.",
     "plan"),
    ("I'll be in Paris next week.", "Ana will be in Paris next week.", "plan"),
    ("I want to learn the cello.", "Ana wants to learn the cello.", "plan"),
    # relationships
    ("My sister Maria is a nurse in Porto.", "Ana's sister Maria is a nurse in Porto.",
     "relationship"),
    ("My husband works at the harbour.", "Ana's husband works at the harbour.",
     "relationship"),
    ("My dog is called Biscuit.", "Ana's dog is called Biscuit.", "relationship"),
    # plain first-person statements
    ("I work as a nurse at the city hospital.", "Ana works as a nurse at the city hospital.",
     "statement"),
    ("I have two kids and a cat.", "Ana has two kids and a cat.", "statement"),
    ("I've been learning Portuguese for two years.",
     "Ana has been learning Portuguese for two years.", "statement"),
    ("I teach math at a high school.", "Ana teaches math at a high school.", "statement"),
])
def test_first_person_statements_become_facts(said: str, fact: str, category: str) -> None:
    found = extract_statements([TranscriptMessage(seq=7, role="user", content=said,
                                                  name="Ana")])
    assert [(s.content, s.category, s.subject, s.seq) for s in found] == [
        (fact, category, "Ana", 7)]
    assert found[0].confidence < 0.7  # below an LLM's


def test_clauses_split_at_a_new_first_person_subject() -> None:
    assert _facts("Well, I moved to Oslo in June and I love the fjords, but my brother "
                  "lives in Bergen.") == [
        "Ana moved to Oslo in June.", "Ana loves the fjords.",
        "Ana's brother lives in Bergen."]


def test_a_leading_time_phrase_moves_to_the_end() -> None:
    assert _facts("Last month I got hurt and had to stop climbing.",
                  "Yesterday, I adopted a kitten.") == [
        "Ana got hurt and had to stop climbing last month.",
        "Ana adopted a kitten yesterday."]


def test_a_subordinate_clause_is_a_fact_unless_its_main_clause_is_doubtful() -> None:
    assert _facts("It has been hard since I lost my job.") == ["Ana lost Ana's job."]
    assert _facts("She said that I moved to Rome.", "I wish that my sister lived here.",
                  "If I get the job, I move to Rome.") == []


def test_a_fact_must_carry_its_object() -> None:
    assert _facts("I drew it.", "My kids love them.", "I made one too, take a look!",
                  "I painted a lake last week, take a look!") == [
        "Ana painted a lake last week."]


def test_without_a_name_the_subject_is_the_user() -> None:
    assert _facts("I moved to Lisbon.", name=None) == ["The user moved to Lisbon."]
    assert _facts("By the way, I just got my highest score in Ticket to Ride, 132 points!",
                  name=None) == [
        "The user just got the user's highest score in Ticket to Ride, 132 points."]


def test_a_statement_before_a_question_in_one_sentence_is_kept() -> None:
    assert _facts("By the way, I've been using my Fitbit for 6 months now, and it's "
                  "helping me - speaking of which, do you have any tips for lazy days?") == [
        "Ana has been using Ana's Fitbit for 6 months now, and it's helping Ana."]
    assert _facts("I'm planning a trip to Paris next month, can you recommend hotels?") == [
        "Ana is planning a trip to Paris next month."]
    # the part before the break asks too: nothing is stated
    assert _facts("Do you think I should move to Lisbon, or stay in Porto?") == []
    assert _facts("Is it true that I am allergic to nuts, or not?") == []
    assert _facts("If I move to Berlin, should I learn German?") == []


def test_a_closing_reaction_to_the_fact_is_cut_not_the_fact() -> None:
    assert _facts("I've been using my Fitbit Charge 3 for 6 months now and love it.") == [
        "Ana has been using Ana's Fitbit Charge 3 for 6 months now."]
    assert _facts("I love it.") == [] and _facts("I saw it and liked it") == []


def test_what_the_speaker_realised_is_a_fact_and_a_dash_aside_is_not() -> None:
    assert _facts("I just realized I've been using my Fitbit Charge 3 for 9 months now - "
                  "it's crazy how time flies!") == [
        "Ana has been using Ana's Fitbit Charge 3 for 9 months now."]


@pytest.mark.parametrize("said", [
    # questions
    "Do you like jazz?", "Did I tell you that I moved to Rome?", "Have I mentioned my job?",
    # hypotheticals and wishes
    "If I had the money I would buy a boat.", "I would love to live in Japan.",
    "Maybe I'll move to Berlin.", "I wish I lived by the sea.", "I could quit my job.",
    "I'd rather stay home.", "Perhaps I should learn Rust.",
    # quoted and reported speech
    'She told me "I moved to Paris".', "My boss said I am getting promoted.",
    "“I love opera,” my aunt says.", "According to my doctor I am allergic to nuts.",
    # about someone else, or about the listener
    "She moved to Rome last year.", "You moved to Berlin.", "You love hiking.",
    "I think your sister is a nurse.", "I love your painting!",
    # passing states and reactions
    "I'm so tired today.", "I'm sorry to hear that.", "I love that!", "I'm sure.",
    "I agree.", "I'm off to bed.", "I can't wait!",
])
def test_nothing_is_invented(said: str) -> None:
    assert _facts(said) == []


def test_the_assistant_and_tools_are_never_the_source() -> None:
    for role in ("assistant", "system", "tool"):
        assert _facts("I moved to Lisbon and I love hiking.", role=role) == []


def test_each_speaker_gets_their_own_facts() -> None:
    messages = [
        TranscriptMessage(seq=0, role="user", name="Caroline",
                          content="I went to a support group yesterday."),
        TranscriptMessage(seq=1, role="user", name="Melanie",
                          content="My kids love the beach. Did you enjoy it?"),
    ]
    assert [(s.subject, s.content, s.seq) for s in extract_statements(messages)] == [
        ("Caroline", "Caroline went to a support group yesterday.", 0),
        ("Melanie", "Melanie's kids love the beach.", 1)]


def test_injected_memory_blocks_and_repeats_are_ignored() -> None:
    from nous_memory.blocks import wrap

    assert _facts("I'm vegetarian. " + wrap("I love sushi", "context"),
                  "I'm vegetarian.") == ["Ana is vegetarian."]


@pytest.mark.parametrize(("verb", "third"), [
    ("eat", "eats"), ("go", "goes"), ("study", "studies"), ("watch", "watches"),
    ("play", "plays"), ("have", "has"), ("fix", "fixes")])
def test_conjugate(verb: str, third: str) -> None:
    assert conjugate(verb) == third
