"""The vocabulary of the rule extractor (``statements.py``): which words make a clause a
hypothetical, reported speech or a passing state, and which verbs mark a preference, a
plan or a change."""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# conversation fillers before the subject: "well, I ...", "oh yeah, my ..."
DISCOURSE = _words("well oh yeah yes yep no nope ok okay so actually honestly anyway btw "
                   "also and but plus hey hi wow haha lol um uh hmm right sure totally "
                   "thanks thank yup cool great awesome nice aww ah ooh sadly "
                   "unfortunately luckily fortunately guess what news")
# hypotheticals, wishes, guesses: nothing is asserted
HEDGES = _words("if would could might maybe perhaps wish hope hoping hopefully suppose "
                "imagine unless whether probably possibly should i'd would've could've "
                "might've should've someday dream dreaming dreamed wonder wondering")
# reported or quoted speech: the words are someone else's
REPORTING = _words("said says say told tells tell asked asks claims claimed claim heard "
                   "mentioned reckons thinks")
ADVERBS = _words("really also still usually always never just actually now currently "
                 "mostly often sometimes recently finally already even totally "
                 "definitely absolutely truly so very kinda basically generally normally "
                 "rarely seldom literally especially absolutely officially")
# verbs whose clause is about thinking, talking or reacting, not a durable fact
NON_FACT_VERBS = _words("think thought guess mean meant know knew see saw hear heard hope "
                        "wish wonder wondered suppose believe bet agree agreed understand "
                        "understood feel felt remember forgot forget say said tell told "
                        "ask asked wait appreciate appreciated mean guessed bet gotta "
                        "gonna realize realized realise realised admit need needed "
                        "try tried totally can't must")
# "I'm <state>": a passing state, not a fact about the person
TRANSIENT_STATES = _words("sure sorry glad happy sad tired excited thrilled nervous "
                          "worried afraid scared curious busy swamped stoked bored "
                          "okay ok fine good great well thankful grateful proud amazed "
                          "impressed so really very just off here back there done "
                          "doing feeling thinking looking trying wondering going "
                          "not all about kinda pretty super glad relieved confused "
                          "overwhelmed pumped psyched down up in on out lucky blessed "
                          "honored touched moved inspired sure")
PREFERENCE_VERBS = _words("love like enjoy adore prefer hate dislike loathe detest "
                          "despise keen fond favor favour crave")
PLAN_MARKERS = _words("plan plans planning intend intending want wants aim aiming "
                      "scheduled booked")
CHANGE_VERBS = _words("move start quit join leave switch finish graduate adopt buy sell "
                      "marry divorce begin stop retire lose get sign take give become "
                      "change transfer relocate enroll enrol launch open close rescue "
                      "return")
IRREGULAR_PAST = {"began": "begin", "bought": "buy", "sold": "sell", "took": "take",
                  "gave": "give", "became": "become", "left": "leave", "lost": "lose",
                  "got": "get", "went": "go", "made": "make", "met": "meet", "ran": "run",
                  "won": "win", "wrote": "write", "grew": "grow", "flew": "fly",
                  "drove": "drive", "ate": "eat", "drank": "drink", "swam": "swim",
                  "sang": "sing", "broke": "break", "chose": "choose", "spent": "spend",
                  "built": "build", "taught": "teach", "found": "find", "kept": "keep",
                  "came": "come", "brought": "bring", "fell": "fall", "did": "do",
                  "had": "have", "was": "be", "saw": "see", "read": "read",
                  "quit": "quit", "paid": "pay", "sent": "send", "won't": "will",
                  "drew": "draw", "wore": "wear", "woke": "wake", "rode": "ride",
                  "threw": "throw", "caught": "catch", "sat": "sit", "stood": "stand",
                  "held": "hold", "led": "lead", "fed": "feed", "slept": "sleep",
                  "shot": "shoot", "hid": "hide", "hung": "hang", "dug": "dig",
                  "spoke": "speak", "stole": "steal", "tore": "tear", "froze": "freeze",
                  "forgave": "forgive", "fought": "fight", "dealt": "deal",
                  "shook": "shake", "rang": "ring", "rose": "rise", "lent": "lend",
                  "burnt": "burn", "lit": "light", "laid": "lay", "understood": "understand",
                  "hurt": "hurt", "put": "put", "let": "let", "set": "set", "cut": "cut",
                  "hit": "hit", "shut": "shut", "cost": "cost", "spread": "spread",
                  "knew": "know", "told": "tell", "said": "say", "thought": "think",
                  "felt": "feel", "meant": "mean", "heard": "hear", "wept": "weep"}
# kin and other relations: "my sister ...", "my boss ..."
RELATIONS = _words("mother mom mum dad father parents sister sisters brother brothers "
                   "wife husband partner girlfriend boyfriend fiance fiancee son sons "
                   "daughter daughters kid kids children child baby grandma grandmother "
                   "grandpa grandfather grandparents aunt uncle cousin cousins niece "
                   "nephew friend friends best boss manager colleague coworker coworkers "
                   "roommate neighbor neighbour neighbors neighbours family dog dogs cat "
                   "cats pet pets teacher mentor doctor therapist name")
# words that carry no content after a verb: "I love that", "I'll check it out"
EMPTY = _words("it that this those these them him her it's there here out up so too "
               "lot lots one ones thing things stuff way much more all some any the a an "
               "to of for with and or but")
# a "my ..." clause states something only with a verb
MY_CLAUSE_VERBS = _words("is are was were has have had will lives live works work loves "
                         "love likes like hates moved started left got turned passed "
                         "just recently")
