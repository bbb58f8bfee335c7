"""Time in text, in English and French: the window a prompt names ("yesterday", "last week", "in
March", "2026-03-14"), which the temporal retriever keeps the memories of; whether a prompt asks
for a time ("when did ...?", "how long ...?"); and whether a memory tells one ("last Friday",
"3 years ago", "on the 15th"), which such a prompt's answer mostly does."""

import re
from datetime import UTC, date, datetime, time, timedelta

from projections.recall.words import tokens
from schemas.recall import Window

_MONTH_NAMES = (
    "january february march april may june july august september october november december",
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "jan feb mar apr may jun jul aug sep oct nov dec",
    "jan fevrier mar avr mai juin juil aout sept oct nov decembre",
)
_MONTHS = {name: i + 1 for names in _MONTH_NAMES for i, name in enumerate(names.split())}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th|er)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,\s*|\s+)(\d{{4}})\b", re.I)
# A day said without its year takes a month's full name or an ordinal: "3 may" and "the last
# 3 dec builds" are not dates, "May 3rd" and "15 August" are.
_FULL = "|".join(sorted((n for n in _MONTHS if len(n) > 3), key=len, reverse=True))
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:(?:st|nd|rd|th|er)\s+(?:of\s+)?({_MONTH})|\s+(?:of\s+)?({_FULL}))\b", re.I
)
_MONTH_DAY = re.compile(rf"\b(?:({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)|({_FULL})\s+(\d{{1,2}}))\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b", re.I)
_IN_MONTH = re.compile(rf"\b(?:in|en|during|pendant)\s+({_MONTH})\b", re.I)
_IN_YEAR = re.compile(r"\b(?:in|en|during|pendant)\s+((?:19|20)\d{2})\b", re.I)
_RELATIVE: dict[str, tuple[int, int]] = {  # (days back to the start, days in the window)
    "today": (0, 1), "aujourd'hui": (0, 1), "yesterday": (1, 1), "hier": (1, 1),
    "avant-hier": (2, 1), "day before yesterday": (2, 1),
    "last week": (7, 7), "past week": (7, 7), "la semaine dernière": (7, 7), "la semaine derniere": (7, 7),
    "this week": (6, 7), "cette semaine": (6, 7),
    "last month": (30, 30), "past month": (30, 30), "le mois dernier": (30, 30), "ce mois-ci": (29, 30),
    "recently": (14, 15), "récemment": (14, 15), "recemment": (14, 15),
    "last year": (365, 365), "l'année dernière": (365, 365), "l'an dernier": (365, 365),
}  # fmt: skip


# Every repetition is bounded, so that each pattern reads a text in linear time.
_ASKED = (
    r"(?:for )?how long\b|since when\b|depuis (?:quand|combien)\b|combien de temps\b"
    r"|(?:(?:at|on|in|for|by|until|since) )?(?:what|which) (?:year|month|date|day|week|time)\b"
    r"|(?:en |à |a )?quel(?:le)? (?:année|mois|jour|date|heure)\b"
    r"|how many (?:years|months|weeks|days|hours)\b|combien d(?:e |')(?:années|ans|mois|semaines|jours)\b"
)
_WHEN = re.compile(  # "when" opens the question, not a clause before it ("When X fails, what ...?")
    r"(?:^|[.!?;\n]\s{0,9})(?:(?:when|quand)\b"
    rf"(?![^?]{{0,300}},[^?]{{0,300}}\b(?:what|which|who|where|how|why)\b)|{_ASKED})",
    re.I,
)
# The words that tell a time alone, then those that do after a count ("last week", "3 years",
# "a couple of days") or before a French one ("la semaine dernière"), as `words.tokens` reads
# them; "may" and "mars" only as "May" and "3 mars".
_ALONE = """
    yesterday today tonight tomorrow ago recently lately hier aujourd demain récemment dernièrement
    monday tuesday wednesday thursday friday saturday sunday
    lundi mardi mercredi jeudi vendredi samedi dimanche
    january february march april june july august september october november december
    janvier février avril juin juillet août septembre octobre novembre décembre"""
_UNIT = """
    day days week weeks weekend weekends month months year years summer winter spring fall autumn
    night morning evening afternoon jour jours semaine semaines mois an ans année années été hiver
    printemps automne soir matin"""
_COUNT = (
    "last next this past coming previous few several a an one two three four five six seven eight nine ten"
)
_FRENCH_COUNT = "dernier dernière prochain prochaine passé passée"
_TIME_WORDS, _UNITS = frozenset(_ALONE.split()), frozenset(_UNIT.split())
_COUNTS, _FRENCH_COUNTS = frozenset(_COUNT.split()), frozenset(_FRENCH_COUNT.split())
_ORDINAL = ("st", "nd", "rd", "th", "er")


def asks_when(prompt: str) -> bool:
    """Whether a sentence of `prompt` asks for a time: "When did we move to DuckDB?", "how long
    has the cache been on?", "quand ...?"; not "When the tests fail, what do we do?"."""
    return _WHEN.search(prompt) is not None


def tells_time(text: str) -> bool:
    """Whether `text` says when something happened or will: "yesterday", "last Friday", "3 years
    ago", "in May", "on the 15th", "2023". On LoCoMo's development split, 82% of the turns that
    answer a "when" question do, and 12% of all turns."""
    said = tokens(text)
    if not _TIME_WORDS.isdisjoint(said):
        return True
    for i, word in enumerate(said):
        if _year_or_ordinal(word) or (word in _UNITS and _counted(said, i)):
            return True
        if (word == "may" and "May" in text) or (word in ("mars", "mai") and i and said[i - 1].isdigit()):
            return True
    return False


def _counted(said: list[str], i: int) -> bool:
    """Whether the unit `said[i]` is counted: "last week", "3 years", "a couple of days", "la
    semaine dernière"."""
    before = said[i - 1] if i else ""
    if before in _COUNTS or before.isdigit() or (before == "of" and said[i - 2 : i - 1] == ["couple"]):
        return True
    return i + 1 < len(said) and said[i + 1] in _FRENCH_COUNTS


def _year_or_ordinal(word: str) -> bool:
    """A year ("2023", "1999") or an ordinal ("15th", "1er")."""
    if word.isdigit():
        return len(word) == 4 and word[:2] in ("19", "20")
    return len(word) <= 4 and word[-2:] in _ORDINAL and word[:-2].isdigit()


def window(prompt: str, now: datetime | None = None) -> Window | None:
    """The first time span `prompt` names, read against `now`; None when it names none."""
    now = now or datetime.now(UTC)
    text = prompt.lower()
    if day := _named_day(text):
        return _days(day, 1)
    if (m := _MONTH_YEAR.search(text)) and (first := _date(int(m[2]), _MONTHS[m[1]], 1)):
        return _month(first.year, first.month)
    if (m := _DAY_MONTH.search(text)) and (day := _last(now.date(), _MONTHS[m[2] or m[3]], int(m[1]))):
        return _days(day, 1)
    if (m := _MONTH_DAY.search(text)) and (
        day := _last(now.date(), _MONTHS[m[1] or m[3]], int(m[2] or m[4]))
    ):
        return _days(day, 1)
    for phrase, (back, span) in sorted(_RELATIVE.items(), key=lambda p: -len(p[0])):
        if re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", text):
            found = _days(now.date() - timedelta(days=back), span)
            return Window(found.start, found.end, vague=span > 7)
    if m := _IN_MONTH.search(text):
        month = _MONTHS[m[1].lower()]
        return _month(now.year if month <= now.month else now.year - 1, month)
    if m := _IN_YEAR.search(text):
        year = int(m[1])
        return Window(_midnight(date(year, 1, 1)), _midnight(date(year + 1, 1, 1)))
    return None


def _named_day(text: str) -> date | None:
    """A day said with its year: ISO, "8 May, 2023", "May 8, 2023" (None for "31 Feb 2024")."""
    if m := _ISO.search(text):
        return _date(int(m[1]), int(m[2]), int(m[3]))
    if m := _DAY_MONTH_YEAR.search(text):
        return _date(int(m[3]), _MONTHS[m[2]], int(m[1]))
    if m := _MONTH_DAY_YEAR.search(text):
        return _date(int(m[3]), _MONTHS[m[1]], int(m[2]))
    return None


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:  # no such day: no window
        return None


def _last(today: date, month: int, day: int) -> date | None:
    """The latest `month`/`day` on or before `today` (a date said without its year)."""
    for year in range(today.year, today.year - 5, -1):  # February 29th: up to a leap year back
        if (found := _date(year, month, day)) and found <= today:
            return found
    return None


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), UTC)


def _days(first: date, count: int) -> Window:
    return Window(_midnight(first), _midnight(first + timedelta(days=count)))


def _month(year: int, month: int) -> Window:
    following = date(year + month // 12, month % 12 + 1, 1)
    return Window(_midnight(date(year, month, 1)), _midnight(following))
