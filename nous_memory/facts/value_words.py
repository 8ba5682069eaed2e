"""The vocabulary of value slots (``values.py``): number words, calendar names, units,
currencies, positions, frequencies and antonym-like qualifiers, each mapped to its
normalised value."""

from __future__ import annotations

from ..words import (
    CLAUSE_NEGATIONS,
    MONTH_ABBREVIATIONS,
    MONTH_NAMES,
    TENS_WORDS,
    UNIT_WORDS,
    WEEKDAY_ABBREVIATIONS,
    WEEKDAY_NAMES,
)

NUMBER_WORDS = {w: i for i, w in enumerate(UNIT_WORDS)} | {
    w: 10 * (i + 2) for i, w in enumerate(TENS_WORDS)} | {
    "dozen": 12, "hundred": 100, "thousand": 1000, "once": 1, "twice": 2, "thrice": 3}
SCALE = {"k": 1e3, "thousand": 1e3, "thousands": 1e3, "million": 1e6, "millions": 1e6,
          "mn": 1e6, "bn": 1e9, "billion": 1e9, "billions": 1e9}
MONEY_SCALE = SCALE | {"m": 1e6, "b": 1e9}  # "$965m", "US$38b": only after a currency

MONTHS = {name: n for n, full in enumerate(MONTH_NAMES, start=1)
          for name in (full, *MONTH_ABBREVIATIONS[full])}
WEEKDAYS = {name: WEEKDAY_ABBREVIATIONS[full][0] for full in WEEKDAY_NAMES
            for name in (full, *WEEKDAY_ABBREVIATIONS[full])}
# words that are also ordinary English: a month or weekday only when capitalised
AMBIGUOUS_CALENDAR = frozenset("may march mar jan sat sun wed mon".split())
SEASONS = {"spring": "spring", "summer": "summer", "autumn": "autumn", "fall": "autumn",
           "winter": "winter"}
ORDINALS = {w: str(i) for i, w in enumerate(
    "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
    "twelfth".split())} | {"last": "last", "final": "last", "penultimate": "-2",
                           "next": "next", "previous": "previous", "prior": "previous",
                           "following": "next", "latest": "last", "initial": "1"}
DAYPARTS = {"morning": "morning", "mornings": "morning", "dawn": "morning",
            "sunrise": "morning", "breakfast": "morning", "afternoon": "afternoon",
            "afternoons": "afternoon", "lunchtime": "afternoon", "evening": "evening",
            "evenings": "evening", "dusk": "evening", "sunset": "evening",
            "dinnertime": "evening", "night": "night", "nights": "night",
            "tonight": "night", "overnight": "night", "midnight": "night",
            "noon": "afternoon", "midday": "afternoon"}
TIME_UNITS = {u: u for u in "second minute hour day week month year decade weekend".split()} | {
    "sec": "second", "secs": "second", "min": "minute", "mins": "minute", "hr": "hour",
    "hrs": "hour", "yr": "year", "yrs": "year", "fortnight": "fortnight"}
FREQUENCY_ADVERBS = {"always": "always", "constantly": "always", "usually": "usually",
                     "normally": "usually", "generally": "usually", "often": "often",
                     "frequently": "often", "regularly": "often", "sometimes": "sometimes",
                     "occasionally": "sometimes", "rarely": "rarely", "seldom": "rarely",
                     "never": "never"}
PERIODIC = {"hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week",
            "fortnightly": "fortnight", "monthly": "month", "quarterly": "quarter",
            "yearly": "year", "annually": "year", "biweekly": "fortnight"}
UNITS = {alias: unit for unit, aliases in {
    "km": "km kms kilometer kilometers kilometre kilometres",
    "mi": "mi mile miles", "m": "meter meters metre metres", "cm": "cm centimeter "
    "centimeters centimetre centimetres", "mm": "mm millimeter millimeters", "ft": "ft foot "
    "feet", "inch": "inch inches", "kg": "kg kgs kilo kilos kilogram kilograms",
    "g": "gram grams", "lb": "lb lbs", "pound": "pound pounds", "oz": "oz ounce ounces",
    "l": "liter liters litre litres", "ml": "ml milliliter milliliters", "gal": "gallon "
    "gallons", "cup": "cup cups", "percent": "percent % pct", "degree": "degree degrees °",
    "kcal": "kcal calorie calories", "step": "step steps", "page": "page pages",
    "mph": "mph", "kmh": "kmh kph", "gb": "gb", "mb": "mb", "tb": "tb"}.items()
    for alias in aliases.split()}
CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}
CURRENCY_WORDS = {alias: code for code, aliases in {
    "USD": "usd dollar dollars buck bucks", "EUR": "eur euro euros", "GBP": "gbp quid sterling",
    "JPY": "jpy yen", "INR": "inr rupee rupees", "CHF": "chf franc francs",
    "CAD": "cad", "AUD": "aud", "CNY": "cny yuan rmb", "SEK": "sek krona kronor",
    "cent": "cent cents", "penny": "pence penny"}.items() for alias in aliases.split()}
ORDER_WORDS = {"before": "before", "after": "after", "prior": "before",
               "afterwards": "after", "beforehand": "before"}
NEGATIONS = CLAUSE_NEGATIONS | {"nowhere"}
# antonym-like qualifiers a rule can see: each word names an axis and a side
AXES = {
    "stance": ("like love enjoy adore prefer fond favourite favorite fan keen",
               "dislike hate loathe detest despise avoid"),
    "activity": ("start started begin began join joined", "stop stopped quit finish"),
    "open": ("open opened", "closed close shut"),
    "amount": ("more increase increased raise raised higher rise", "less fewer decrease "
               "decreased reduce reduced lower cut drop"),
    "result": ("win won pass passed succeed succeeded accept accepted approve approved",
               "lose lost fail failed reject rejected decline declined deny denied"),
    "trade": ("buy bought", "sell sold"),
    "timing": ("early earlier", "late later"),
    "temperature": ("hot warm", "cold cool"),
    "permission": ("allow allowed permit permitted", "forbid forbidden ban banned prohibit"),
    "membership": ("include included", "exclude excluded"),
    "memory": ("remember remembered", "forget forgot forgotten"),
    "size": ("big bigger large larger", "small smaller"),
    "direction": ("arrive arrived arrives", "depart departed departs"),
    "age": ("older oldest elder eldest", "younger youngest"),
    "height": ("taller tallest", "shorter shortest"),
    "speed": ("faster fastest quicker", "slower slowest"),
    "quality": ("better best", "worse worst"),
    "north-south": ("north northern", "south southern"),
    "east-west": ("east eastern", "west western"),
}
AXIS_OF = {word: (axis, side) for axis, (plus, minus) in AXES.items()
            for side, words in (("+", plus), ("-", minus)) for word in words.split()}
NEGATING_PREFIXES = ("un", "dis", "in", "im", "il", "ir", "non")
TIME_NOUNS = frozenset(TIME_UNITS) | frozenset(WEEKDAYS) | frozenset(SEASONS) | {
    "morning", "afternoon", "evening", "night", "quarter", "semester", "term", "season"}
TIME_NOUNS = TIME_NOUNS | {u + "s" for u in TIME_UNITS} | {m for m in MONTHS if len(m) > 3}
SPLIT_COMPOUNDS = (frozenset(MONTHS) | frozenset(WEEKDAYS) | frozenset(SEASONS)
                    | frozenset(NUMBER_WORDS) | frozenset(DAYPARTS) | frozenset(TIME_UNITS))
PASSIVE = frozenset("be been being is are was were get gets got".split())  # "is used to"
CESSATION = frozenset("quit stop cease discontinue".split())


def _inflections(base: str) -> set[str]:
    """The regular forms of a verb or adjective: love -> loves, loved, loving, lover..."""
    stem = base[:-1] if base.endswith("e") else base
    doubled = base + base[-1] if base[-1] not in "aeiouwy" and base[-2:-1] in "aeiou" else base
    forms = {base, base + "s", base + "es", base + "d", base + "ed", stem + "ed",
             stem + "ing", doubled + "ed", doubled + "ing"}
    if base.endswith("y") and base[-2:-1] not in "aeiou":
        forms |= {base[:-1] + "ies", base[:-1] + "ied"}  # deny -> denies, denied
    return forms


# every regular form of an axis or cessation word, to its base ("quitting" -> "quit")
INFLECTED = {form: base for base in (*AXIS_OF, *CESSATION) for form in _inflections(base)
             if form not in AXIS_OF or form == base}
# the words at which some value pattern can start: any other word is skipped at once
TRIGGERS = frozenset(
    [*NUMBER_WORDS, *MONTHS, *WEEKDAYS, *(w + "s" for w in WEEKDAYS), *SEASONS, *ORDINALS,
     *DAYPARTS, *TIME_UNITS, *(u + "s" for u in TIME_UNITS), *FREQUENCY_ADVERBS, *PERIODIC,
     *UNITS, *CURRENCY_WORDS, *(c.lower() for c in CURRENCY_WORDS.values()), *ORDER_WORDS,
     *NEGATIONS, *INFLECTED, *SPLIT_COMPOUNDS,
     *"""a an in within every each per once twice thrice half quarter noon midday midnight
     day next last this past coming following previous used formerly no any anymore gave
     give given giving gives today tonight tomorrow yesterday""".split()])
