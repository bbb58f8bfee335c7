"""Time windows named in a prompt: "yesterday", "last week", "in March", "2026-03-14", in English
and French. The temporal retriever keeps the memories inside the window."""

import re
from datetime import UTC, date, datetime, time, timedelta

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
