"""The vocabulary of fact slots (``slots.py``): the core attributes a personal assistant
is asked about, the words that announce each, and the words a query asks them with."""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Attributes with one value at a time: a new value supersedes the old.  An attribute
# outside this core is open ("favourite colour", "gym class"): normalised words, also
# one value at a time.
HOME, EMPLOYER, JOB_TITLE, PARTNER, DIET, PHONE, CAR = (
    "home", "employer", "job title", "partner", "diet", "phone", "car")
COMMUTE, NAME, SCHOOL, DEADLINE = "commute", "name", "school", "deadline"
PET_PREFIX, COUNT_PREFIX, EVENT_PREFIX, SCHEDULE_PREFIX = "pet:", "count:", "event:", "schedule:"
PREFERENCE_PREFIX, HABIT_PREFIX = "favourite:", "habit:"

# attributes shown in "about the user now" whatever the query (within a small budget)
CORE_ATTRIBUTES = (NAME, HOME, EMPLOYER, JOB_TITLE, PARTNER)

PET_SPECIES = {"dog": "dog", "dogs": "dog", "puppy": "dog", "pup": "dog", "doggo": "dog",
               "cat": "cat", "cats": "cat", "kitten": "cat", "kitty": "cat",
               "rabbit": "rabbit", "bunny": "rabbit", "hamster": "hamster",
               "parrot": "bird", "bird": "bird", "budgie": "bird", "fish": "fish",
               "goldfish": "fish", "turtle": "turtle", "tortoise": "turtle",
               "horse": "horse", "pony": "horse", "guinea": "guinea pig", "lizard": "lizard",
               "gecko": "lizard", "snake": "snake", "ferret": "ferret"}
PEOPLE = _words(
    "mother mom mum dad father sister brother wife husband partner girlfriend boyfriend "
    "fiance fiancee fiancé fiancée son daughter kid child baby grandma grandmother grandpa "
    "grandfather aunt uncle cousin niece nephew friend boss manager colleague coworker "
    "roommate flatmate neighbor neighbour teacher mentor doctor therapist landlord "
    "stepmom stepdad stepson stepdaughter godson goddaughter bestie")
PARTNER_WORDS = _words("partner wife husband girlfriend boyfriend fiance fiancee fiancé "
                       "fiancée spouse")
# "the user's <words> is ...": the owner's attribute, by its usual synonyms
ATTRIBUTE_SYNONYMS = {
    "address": HOME, "home": HOME, "home address": HOME, "city": HOME, "hometown": HOME,
    "place": HOME, "apartment": HOME, "flat": HOME, "house": HOME,
    "employer": EMPLOYER, "company": EMPLOYER, "workplace": EMPLOYER,
    "job": JOB_TITLE, "job title": JOB_TITLE, "title": JOB_TITLE, "role": JOB_TITLE,
    "position": JOB_TITLE, "occupation": JOB_TITLE, "profession": JOB_TITLE,
    "phone": PHONE, "mobile": PHONE, "cell phone": PHONE, "cellphone": PHONE,
    "smartphone": PHONE, "car": CAR, "vehicle": CAR, "ride": CAR, "diet": DIET,
    "commute": COMMUTE, "name": NAME, "full name": NAME, "school": SCHOOL,
    "university": SCHOOL, "college": SCHOOL,
}
JOB_NOUNS = _words(
    "engineer developer programmer designer manager director nurse doctor teacher "
    "professor lawyer accountant analyst scientist researcher consultant architect "
    "writer editor journalist chef cook baker barista waiter waitress pharmacist dentist "
    "therapist counselor counsellor electrician plumber carpenter mechanic pilot driver "
    "lead head vp cto ceo cfo founder cofounder co-founder intern student artist "
    "musician photographer librarian officer firefighter paramedic veterinarian vet "
    "surgeon technician administrator coordinator specialist assistant associate "
    "supervisor principal lecturer tutor coach trainer agent broker clerk cashier "
    "salesperson marketer recruiter owner partner")
DIETS = _words("vegan vegetarian pescatarian pescetarian keto paleo carnivore "
               "gluten-free dairy-free lactose-free halal kosher omnivore flexitarian "
               "low-carb whole30 raw")
PHONE_BRANDS = _words("iphone pixel galaxy samsung oneplus xiaomi motorola nokia huawei "
                      "android blackberry fairphone")
CAR_BRANDS = _words(
    "tesla toyota honda ford bmw audi volkswagen vw subaru mazda nissan hyundai kia "
    "volvo jeep chevy chevrolet mercedes porsche lexus prius civic corolla mini fiat "
    "renault peugeot skoda polestar rivian lucid jaguar")
COMMUTE_MEANS = {"bike": "bike", "bicycle": "bike", "cycle": "bike", "cycling": "bike",
                 "biking": "bike", "bus": "bus", "train": "train", "subway": "subway",
                 "metro": "subway", "tube": "subway", "car": "car", "drive": "car",
                 "driving": "car", "walk": "walk", "walking": "walk", "foot": "walk",
                 "scooter": "scooter", "tram": "tram", "ferry": "ferry",
                 "carpool": "carpool", "motorbike": "motorbike", "motorcycle": "motorbike"}
EVENT_NOUNS = _words(
    "appointment meeting interview flight trip party wedding visit exam test surgery "
    "dinner lunch concert call checkup check-up session class recital game match "
    "presentation review deadline reservation booking date ceremony graduation "
    "vacation holiday conference demo launch move operation procedure hearing "
    "ultrasound vaccination haircut cleaning consultation")
# verbs after which "<thing> ... <day>" is a plan moved or set
RESCHEDULE = re.compile(r"\b(?:moved|pushed|postponed|rescheduled|brought forward|"
                        r"changed|shifted|bumped|delayed)\b(?: (?:back|up|out))?(?: to)?",
                        re.I)
ENDING_VERBS = _words("died passed cancelled canceled called-off ended finished over "
                      "rehomed lost")

# words that stop a value: what follows is when, why or with whom, not the value
VALUE_STOPS = _words(
    "last this next in on at with because since after before for about ago now recently "
    "and but so when while until as from though although which who where to by "
    "yesterday today tonight earlier lately again instead anymore any full-time "
    "part-time permanently temporarily already soon finally currently these those days "
    "nowadays anyway though")

# the words a query asks each attribute with
QUERY_WORDS = {
    HOME: _words("live lives living city town country address move moved moving home "
                 "based reside located where relocate relocated neighborhood "
                 "neighbourhood"),
    EMPLOYER: _words("work works working company employer job employed office firm"),
    JOB_TITLE: _words("job role title position profession occupation living promoted "
                      "promotion"),
    PARTNER: _words("partner wife husband girlfriend boyfriend dating married spouse "
                    "fiance fiancee engaged relationship"),
    DIET: _words("eat eating diet vegetarian vegan meat food meal meals"),
    PHONE: _words("phone mobile smartphone iphone android cell"),
    CAR: _words("car drive drives driving vehicle"),
    COMMUTE: _words("commute commuting office get"),
    NAME: _words("name called"),
    SCHOOL: _words("school university college study studying"),
    DEADLINE: _words("due deadline submit"),
    PET_PREFIX: _words("pet pets dog dogs cat cats puppy kitten animal"),
    COUNT_PREFIX: _words("many number"),
    EVENT_PREFIX: _words("appointment meeting when scheduled upcoming plans plan "
                         "interview flight trip"),
    SCHEDULE_PREFIX: _words("day days schedule when class weekly"),
    PREFERENCE_PREFIX: _words("favourite favorite prefer like best"),
    HABIT_PREFIX: _words("habit habits still"),
}
