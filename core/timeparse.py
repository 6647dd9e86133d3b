"""Deterministic time expressions: find them in a message and resolve them against its timestamp.

Design §5 separates when something was *mentioned* (the message's ``created_at``, the *anchor*) from when it
*happened*. This module turns the time expressions of one message into :class:`TimeMention` values. It follows the
§5 rules: a happened time is filled only when it follows uniquely from the text and the anchor, precision is never
inflated ("2024" stays ``"2024"``), and anything vague stays unknown.

All calendar arithmetic happens in the anchor's own calendar: the anchor's local date (in its own UTC offset) is
"today", so the same instant seen from two offsets can have different yesterdays. Instants are rendered with the
anchor's offset (or with the offset written in the text, when there is one).

Output formats
    year ``"2023"``, month ``"2023-05"``, day ``"2023-05-07"``, instant ``"2023-05-07T15:00:00+02:00"``. Single
    days, months and years have ``start == end``; ranges (weeks, weekends, seasons, quarters, decades, "a few days
    ago", durations) have ``precision="range"`` and each end written at its own precision.

Ambiguity rules (the documented conventions)
    * Weeks start on Monday. "this week" is the Monday–Sunday week containing the anchor, "last week" the one
      before, "next week" the one after; "N weeks ago" / "in N weeks" is the week containing anchor ∓ 7·N days.
    * Weekdays: "last Friday" is the Friday of the previous Monday-based week (so it always lies inside "last
      week"), "next Friday" the Friday of the next week, "this Friday" and "on Friday" the Friday of the anchor's
      week (past or future), as are "for Friday" (a booking) and "by Friday" (a deadline); "Friday the 13th" is
      the 13th of the anchor's month when that is a Friday, else of the nearest month (two either way) where
      it is. "this past Friday" / "past Friday" is the most recent Friday strictly before the
      anchor's day, "this coming Friday" / "coming Friday" the first one strictly after it. A bare weekday
      ("Friday is my favourite day") is never matched. (The offline event reader then follows the verb of the
      mention's clause: "we went camping on Friday" said on a Tuesday is the Friday before, "I start there on
      Monday" the Monday after.) Chinese 上周五 / 下周五 / 这周五 / 本周五 follow the same
      week rule and a bare 周五 / 星期五 is this week's Friday.
    * Weekends are the Saturday–Sunday of the week chosen by the same rule ("last weekend" = previous week's).
    * A month or day written without a year ("in May", "May 7th", "7th of May", 8月, 8月3日) is the occurrence
      nearest to the anchor, looking at most 6 months away: for months the candidate window runs from 5 months
      before to 6 months after the anchor's month, so a month exactly 6 months away is taken in the future
      (anchor June: "in December" is the coming December; anchor December: "in January" is next January). For
      days the nearest date within 183 days wins (a tie goes to the future). A date with no occurrence in that
      window (Feb 29 far from a leap year) is returned unresolved. Chinese 3号 is day 3 of the month among the
      previous, the anchor's and the next month that is nearest to the anchor.
    * "since May" (no year) is the most recent May at or before the anchor's month ("since" looks back).
    * "last May" is the most recent May strictly before the anchor's month, "next May" the first strictly after,
      "this May" the May of the anchor's year.
    * Seasons are northern-hemisphere meteorological seasons: spring Mar–May, summer Jun–Aug, autumn/fall Sep–Nov,
      winter Dec–Feb; "the winter of 2021" is Dec 2021–Feb 2022. "last summer" is the most recent summer that
      ended before the anchor's month, "next summer" the first one starting after it, "this summer" the one of
      the anchor's year (for winter: the one containing the anchor, else the one starting in December).
    * A bare four-digit year (1900–2100) is taken only with year-like context: a preceding "in", "during",
      "since", "of", "by", "until", "from", "around", "before", "after", "early", "late", "mid", "year", another
      year with "to"/"and"/"-"; or sentence punctuation / the end of the text right after it. "2019 people" and
      "I have 2019 photos" are not years.
    * Durations anchored at the present: "for 3 years now", "seven years now", "for the past two weeks", "since
      2016", "since last year" give a range from anchor − duration (at the unit's precision: year, month, or day
      for days and weeks) to the anchor's day, tense "present". "for three years" without "now" is taken only
      when its clause has a present-perfect cue (have/has/'ve, "he's been"): "I've had them for three years" is
      anchored, "I lived there for three years" is not returned at all.
    * "a few days/weeks/months/years ago" (几天前, 前几天) is the range from 5 to 2 units before the anchor.
    * Numbers: digits, one…twenty, "a"/"an" (1), "a couple (of)" (2); Chinese 一…十, 两, 十五, 二十三.
    * Instants: "now" / "right now" / 现在 is the anchor itself (not when it is discourse: "Now, …", "now that",
      "from now on"); a resolved single day followed by a clock time ("yesterday at 3pm", "today at noon",
      "2023-05-07 at 14:30") becomes an instant in the anchor's offset; an ISO datetime keeps its written offset.

Basis and tense
    ``basis`` is "explicit" when the text alone fixes the time (2023-05-07, May 2023, Q3 2026) and "relative" when
    any part of the answer came from the anchor (yesterday, May 7th, since 2016). A clock time written without a
    zone ("2023-05-07 14:30", "8 May, 2023 at 3pm") is read in the anchor's offset and stays "explicit".
    Unresolved mentions use precision and basis "unknown" with start/end None (the §5 convention), so callers can
    keep ``original_text``.
    ``tense`` says what the expression itself implies relative to the anchor: a period wholly before it is "past",
    wholly after it "future"; present-state words (now, these days, lately, for N years now, since …) are
    "present"; a period that contains the anchor (today, this week, 今年) and absolute dates are "unknown".

Not resolved (returned with precision "unknown"): recently, lately, soon, a while ago, some time ago, a long time
ago, the other day, one day, someday, these days, nowadays, currently, at the moment, just now, days/years ago
without a number, several … ago, for years now / for a while now, in the future / in the past, and the Chinese
最近, 近来, 这些天, 这几天, 目前, 如今, 刚才, 刚刚, 不久前, 很久以前, 将来, 有一天, 某天. Not matched at all: clock
times on their own, hours/minutes ago, numeric dates other than year-first (5/7/2023 is ambiguous), "N days
later" / N天后 (relative to the narrative, not the message), "for three years" with no present-perfect cue, bare
weekdays and bare month names in running text, habitual forms (on Fridays, 每周五, 周一到周五), and Chinese clock
times (下午3点).
"""

from __future__ import annotations

import bisect
import re
import re._constants as c
import re._parser as parser
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from core.text import CaselessPattern

__all__ = ["TimeMention", "find_time_mentions", "has_dated_mention", "resolve_expression"]


@dataclass(frozen=True)
class TimeMention:
    """One time expression found in a text and its resolution against the anchor."""

    original_text: str
    start: str | None
    end: str | None
    precision: str  # instant | day | month | year | range | unknown
    basis: str  # explicit | relative | unknown (unknown only together with precision unknown)
    tense: str  # past | future | present | unknown
    span: tuple[int, int]


# --------------------------------------------------------------------------------------------------------------
# Resolutions and the calendar helpers they are built from
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Res:
    start: str | None
    end: str | None
    precision: str
    basis: str
    tense: str


def _iso_year(year: int) -> str:
    return f"{year:04d}"


def _iso_month(year: int, month: int) -> str:
    return f"{year:04d}-{month:02d}"


def _add_months(year: int, month: int, count: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + count
    return index // 12, index % 12 + 1


def _month_last_day(year: int, month: int) -> date:
    next_year, next_month = _add_months(year, month, 1)
    return date(next_year, next_month, 1) - timedelta(days=1)


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _tense_between(first: date, last: date, today: date) -> str:
    """past/future when the period lies wholly before/after the anchor's day; unknown when it contains it."""
    if last < today:
        return "past"
    if first > today:
        return "future"
    return "unknown"


def _one_day(day: date, tense: str, basis: str = "relative") -> _Res:
    text = day.isoformat()
    return _Res(text, text, "day", basis, tense)


def _day_range(first: date, last: date, tense: str, basis: str = "relative") -> _Res:
    return _Res(first.isoformat(), last.isoformat(), "range", basis, tense)


def _one_month(year: int, month: int, tense: str, basis: str = "relative") -> _Res:
    text = _iso_month(year, month)
    return _Res(text, text, "month", basis, tense)


def _month_range(first: tuple[int, int], last: tuple[int, int], tense: str, basis: str = "relative") -> _Res:
    return _Res(_iso_month(*first), _iso_month(*last), "range", basis, tense)


def _one_year(year: int, tense: str, basis: str = "relative") -> _Res:
    text = _iso_year(year)
    return _Res(text, text, "year", basis, tense)


def _instant(moment: datetime, tense: str, basis: str) -> _Res:
    text = moment.replace(microsecond=0).isoformat()
    return _Res(text, text, "instant", basis, tense)


def _unresolved(tense: str = "unknown") -> _Res:
    return _Res(None, None, "unknown", "unknown", tense)


def _week(day: date) -> tuple[date, date]:
    monday = _monday(day)
    return monday, monday + timedelta(days=6)


def _weekend(day: date) -> tuple[date, date]:
    saturday = _monday(day) + timedelta(days=5)
    return saturday, saturday + timedelta(days=1)


def _shifted(unit: str, count: int, anchor: datetime, tense: str) -> _Res:
    """The day, week, weekend, month or year ``count`` units from the anchor (negative = earlier)."""
    today = anchor.date()
    if unit == "day":
        return _one_day(today + timedelta(days=count), tense)
    if unit == "week":
        return _day_range(*_week(today + timedelta(days=7 * count)), tense)
    if unit == "weekend":
        return _day_range(*_weekend(today + timedelta(days=7 * count)), tense)
    if unit == "month":
        return _one_month(*_add_months(today.year, today.month, count), tense)
    return _one_year(today.year + count, tense)


def _shifted_span(unit: str, near: int, far: int, anchor: datetime, tense: str) -> _Res:
    """A range covering ``near``..``far`` units from the anchor (both signed, same sign)."""
    first_count, last_count = min(near, far), max(near, far)
    first = _shifted(unit, first_count, anchor, tense)
    last = _shifted(unit, last_count, anchor, tense)
    return _Res(first.start, last.end, "range", "relative", tense)


def _nearest_month(month: int, anchor: datetime) -> tuple[int, int]:
    """The occurrence of ``month`` from 5 months before to 6 months after the anchor's month."""
    today = anchor.date()
    step = (month - today.month) % 12
    if step > 6:
        step -= 12
    return _add_months(today.year, today.month, step)


def _latest_month(month: int, anchor: datetime, *, strictly_before: bool = False) -> tuple[int, int]:
    today = anchor.date()
    back = (today.month - month) % 12
    if strictly_before and back == 0:
        back = 12
    return _add_months(today.year, today.month, -back)


def _nearest_day(month: int, day: int, anchor: datetime) -> date | None:
    """The date ``month``/``day`` nearest to the anchor within 183 days (ties go to the future), else None."""
    today = anchor.date()
    best: date | None = None
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        distance = abs((candidate - today).days)
        if distance > 183:
            continue
        if (
            best is None
            or distance < abs((best - today).days)
            or (distance == abs((best - today).days) and candidate > best)
        ):
            best = candidate
    return best


def _nearest_day_of_month(day: int, anchor: datetime) -> date | None:
    """Day ``day`` of the previous, current or next month, whichever is nearest to the anchor."""
    today = anchor.date()
    best: date | None = None
    for step in (-1, 0, 1):
        year, month = _add_months(today.year, today.month, step)
        try:
            candidate = date(year, month, day)
        except ValueError:
            continue
        if (
            best is None
            or abs((candidate - today).days) < abs((best - today).days)
            or (abs((candidate - today).days) == abs((best - today).days) and candidate > best)
        ):
            best = candidate
    return best


def _valid_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _anchor_zone(anchor: datetime) -> timezone:
    offset = anchor.utcoffset()
    assert offset is not None
    return timezone(offset)


# --------------------------------------------------------------------------------------------------------------
# Rules: a compiled pattern plus a resolver; resolvers return None to reject a match
# --------------------------------------------------------------------------------------------------------------

Resolver = Callable[[re.Match[str], datetime], "_Res | None"]


@dataclass(frozen=True)
class _Rule:
    name: str
    pattern: re.Pattern[str]
    resolve: Resolver
    whole_only: bool  # only used by resolve_expression, when the match is the whole expression
    chinese: bool  # every such pattern needs a CJK character, so text without one skips it


_RULES: list[_Rule] = []


def _english(body: str) -> re.Pattern[str]:
    """Case-insensitive, with ASCII-only word boundaries, so English glued to Chinese characters is still found."""
    return re.compile(r"(?<![A-Za-z0-9_])(?:" + body + r")(?![A-Za-z0-9_])", re.IGNORECASE)


def _rule(body: str, *, chinese: bool = False, whole_only: bool = False) -> Callable[[Resolver], Resolver]:
    pattern = re.compile(body) if chinese else _english(body)

    def register(resolver: Resolver) -> Resolver:
        _RULES.append(_Rule(resolver.__name__, pattern, resolver, whole_only, chinese))
        return resolver

    return register


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


# ---- shared English vocabulary -------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
}
_NUM = (
    r"(?P<n>\d{1,3}|a\s+couple\s+of|a\s+couple|couple\s+of|"
    + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
    + r"|an?)"
)


def _number(text: str) -> int:
    words = _norm(text)
    if words.isdigit():
        return int(words)
    if "couple" in words:
        return 2
    if words in ("a", "an"):
        return 1
    return _NUMBER_WORDS[words]


_MONTH_NAMES = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTH_NAMES, key=len, reverse=True)) + r")"
_DAY = r"(?P<d>3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d\d|2100)(?!\d)"
_WEEKDAY_NAMES = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_WEEKDAY = r"(?P<wd>" + "|".join(_WEEKDAY_NAMES) + r")"
# The names the rules read, for readers that must tell a date's words from a statement's subject.
WEEKDAY_WORDS = tuple(_WEEKDAY_NAMES)
MONTH_WORDS = tuple(_MONTH_NAMES)
# "on Tuesday, March 3rd": the weekday names the date beside it, and is read with it (on its own,
# "on Tuesday" would be the coming Tuesday).
_WEEKDAY_LEAD = r"(?:(?:on\s+)?(?:" + "|".join(_WEEKDAY_NAMES) + r"),?\s+)?"
_UNIT = r"(?P<u>day|weekend|week|month|year)s?"
_QUALIFIER = (
    r"(?:(?:about|around|almost|nearly|over|roughly|approximately|more\s+than|less\s+than|close\s+to|"
    r"just\s+over|just\s+under|under|some|at\s+least)\s+)?"
)
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11), "winter": (12, 2)}
_SEASON = r"(?P<season>spring|summer|autumn|fall|winter)"


def _month_of(match: re.Match[str]) -> int:
    return _MONTH_NAMES[match["mon"].lower()]


def _may_is_verb(match: re.Match[str]) -> bool:
    """A lower-case "may" next to a number or after this/last/next is read as the verb ("step 2 may fail")."""
    return match["mon"].lower() == "may" and not match["mon"][0].isupper()


# ---- absolute dates --------------------------------------------------------------------------------------------


@_rule(
    r"(?<![-/.:\d])(?P<y>(?:19|20)\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[T ](?P<h>[01]\d|2[0-3]):(?P<mi>[0-5]\d)"
    r"(?::(?P<s>[0-5]\d)(?:\.\d+)?)?(?P<tz>Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?"
)
def _iso_datetime(m: re.Match[str], anchor: datetime) -> _Res | None:
    zone = _anchor_zone(anchor)  # a written clock time without a zone is read in the anchor's offset
    if m["tz"]:
        if m["tz"].upper() == "Z":
            zone = timezone.utc
        else:
            digits = m["tz"][1:].replace(":", "")
            offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
            zone = timezone(-offset if m["tz"][0] == "-" else offset)
    try:
        moment = datetime(
            int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["s"] or 0), tzinfo=zone
        )
    except ValueError:
        return None
    return _instant(moment, "unknown", "explicit")


@_rule(r"(?<![-/.:\d])(?P<y>(?:19|20)\d\d)(?P<sep>[-/.])(?P<mo>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?![-/.:]?\d)")
def _iso_date(m: re.Match[str], anchor: datetime) -> _Res | None:
    day = _valid_date(int(m["y"]), int(m["mo"]), int(m["d"]))
    return _one_day(day, "unknown", "explicit") if day else None


@_rule(r"(?<![-/.:\d])(?P<y>(?:19|20)\d\d)-(?P<mo>0[1-9]|1[0-2])(?![-/.:]?\d)")
def _iso_month_rule(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _one_month(int(m["y"]), int(m["mo"]), "unknown", "explicit")


@_rule(_WEEKDAY_LEAD + _MONTH + r"\.?\s+" + _DAY + r"(?:\s*,\s*|\s+)" + _YEAR)
def _month_day_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    day = _valid_date(int(m["y"]), _month_of(m), int(m["d"]))
    return _one_day(day, "unknown", "explicit") if day else None


@_rule(_WEEKDAY_LEAD + r"(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"\.?,?\s+" + _YEAR)
def _day_month_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    day = _valid_date(int(m["y"]), _month_of(m), int(m["d"]))
    return _one_day(day, "unknown", "explicit") if day else None


def _nearest_day_res(month: int, day: int, anchor: datetime) -> _Res | None:
    if _valid_date(2000, month, day) is None:  # 2000 is a leap year: rejects Feb 30, Apr 31, ...
        return None
    found = _nearest_day(month, day, anchor)
    return _one_day(found, "unknown") if found else _unresolved()


def _days_from(month: int, first: int, anchor: datetime, last_of: Callable[[date], date | None]) -> _Res | None:
    """A day range from ``month``/``first`` (the nearest such day) to ``last_of(start)``, when that
    comes after it."""
    start = _nearest_day(month, first, anchor)
    if start is None:
        return _unresolved() if _valid_date(2000, month, first) else None
    end = last_of(start)
    return _day_range(start, end, "unknown") if end and end > start else None


_RANGE_TO = r"\s*(?:[-–]|to|until|through|till)\s*"
_LAST_DAY = r"(?P<d2>3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?(?![-–:/.]?\d)"


@_rule(
    _WEEKDAY_LEAD
    + _MONTH
    + r"\.?\s+"
    + _DAY
    + _RANGE_TO
    + _WEEKDAY_LEAD.replace("on\\s+", "")
    + r"(?P<mon2>"
    + "|".join(sorted(_MONTH_NAMES, key=len, reverse=True))
    + r")\.?\s+"
    + _LAST_DAY
)
def _month_day_to_month_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    """ "March 19 to March 24", "March 30 - April 2": days across months (the end after the start)."""
    if _may_is_verb(m) or (m["mon2"].lower() == "may" and not m["mon2"][0].isupper()):
        return None
    month2, last = _MONTH_NAMES[m["mon2"].lower()], int(m["d2"])

    def last_of(start: date) -> date | None:
        end = _valid_date(start.year, month2, last)
        if end is not None and end < start:
            end = _valid_date(start.year + 1, month2, last)  # "December 30 to January 2"
        return end

    return _days_from(_month_of(m), int(m["d"]), anchor, last_of)


@_rule(_WEEKDAY_LEAD + _MONTH + r"\.?\s+" + _DAY + _RANGE_TO + _LAST_DAY)
def _month_day_range(m: re.Match[str], anchor: datetime) -> _Res | None:
    """ "March 19-24", "March 19 to 24": days of one month (with a year only when it is near)."""
    last = int(m["d2"])
    if _may_is_verb(m) or last <= int(m["d"]):
        return None
    return _days_from(_month_of(m), int(m["d"]), anchor, lambda start: _valid_date(start.year, start.month, last))


@_rule(_WEEKDAY_LEAD + _MONTH + r"\.?\s+" + _DAY + r"(?!\s*[-–:/]\s*\d)")
def _month_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    if _may_is_verb(m):
        return None
    return _nearest_day_res(_month_of(m), int(m["d"]), anchor)


@_rule(_WEEKDAY_LEAD + r"(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH)
def _day_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    if _may_is_verb(m):
        return None
    return _nearest_day_res(_month_of(m), int(m["d"]), anchor)


@_rule(r"(?:in\s+)?" + _MONTH + r"\.?,?\s+(?:of\s+)?" + _YEAR)
def _month_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _one_month(int(m["y"]), _month_of(m), "unknown", "explicit")


@_rule(r"(?:in|during)\s+(?:(?:early|late|mid)-?\s*)?" + _MONTH + r"(?!\.?\s*\d)")
def _in_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _one_month(*_nearest_month(_month_of(m), anchor), "unknown")


@_rule(r"(?P<w>last|this|next)\s+" + _MONTH + r"(?!\.?\s*\d)")
def _relative_month_name(m: re.Match[str], anchor: datetime) -> _Res | None:
    if _may_is_verb(m):
        return None  # "this may take a while"
    month = _month_of(m)
    word = m["w"].lower()
    today = anchor.date()
    if word == "last":
        return _one_month(*_latest_month(month, anchor, strictly_before=True), "past")
    if word == "next":
        back = _latest_month(month, anchor)
        ahead = _add_months(back[0], back[1], 12)
        return _one_month(*ahead, "future")
    first = date(today.year, month, 1)
    return _one_month(today.year, month, _tense_between(first, _month_last_day(today.year, month), today))


@_rule(_MONTH, whole_only=True)
def _bare_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _one_month(*_nearest_month(_month_of(m), anchor), "unknown")


@_rule(r"since\s+(?:(?:early|late|mid)-?\s*)?" + _MONTH + r"(?!\.?\s*\d)")
def _since_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    year, month = _latest_month(_month_of(m), anchor)
    return _Res(_iso_month(year, month), anchor.date().isoformat(), "range", "relative", "present")


_YEAR_BEFORE = re.compile(
    r"(?:(?<![A-Za-z])(?:since|of|by|until|till|from|around|circa|early|late|before|after|through|throughout"
    r"|year|between|in|during)\s+|(?<![A-Za-z])mid-?\s*|(?:19|20)\d\d\s*(?:-|–|to|and|or|through|until)\s*)$",
    re.IGNORECASE,
)
_YEAR_AFTER = re.compile(
    r"\s*(?:[.!?;)]+(?:\s|$)|$|(?:-|–|to|and|or|through|until)\s*(?:19|20)\d\d(?!\d))", re.IGNORECASE
)


@_rule(r"(?:(?P<pre>in|during)\s+)?(?<![$€£#.:/\d])(?P<y>(?:19|20)\d\d|2100)(?![%\d]|[/.:]\d)")
def _year(m: re.Match[str], anchor: datetime) -> _Res | None:
    text, start = m.string, m.start("y")
    context = m["pre"] or _YEAR_BEFORE.search(text, max(0, start - 40), start) or _YEAR_AFTER.match(text, m.end())
    return _one_year(int(m["y"]), "unknown", "explicit") if context else None


@_rule(r"(?:the\s+)?(?P<y>(?:19|20)\d0)s")
def _decade(m: re.Match[str], anchor: datetime) -> _Res | None:
    first = int(m["y"])
    return _Res(_iso_year(first), _iso_year(first + 9), "range", "explicit", "unknown")


def _season_span(season: str, year: int) -> tuple[tuple[int, int], tuple[int, int]]:
    first_month, last_month = _SEASONS[season]
    last_year = year + 1 if last_month < first_month else year
    return (year, first_month), (last_year, last_month)


@_rule(r"(?:in\s+)?(?:the\s+)?" + _SEASON + r"\s+(?:of\s+)?" + _YEAR)
def _season_of_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    first, last = _season_span(m["season"].lower(), int(m["y"]))
    return _month_range(first, last, "unknown", "explicit")


@_rule(r"(?P<w>this\s+past|this\s+coming|last|this|next|past|coming)\s+" + _SEASON)
def _relative_season(m: re.Match[str], anchor: datetime) -> _Res | None:
    season, word = m["season"].lower(), _norm(m["w"])
    today = anchor.date()
    now = (today.year, today.month)
    spans = [_season_span(season, year) for year in range(today.year - 2, today.year + 2)]
    if word in ("last", "past", "this past"):
        first, last = max(span for span in spans if span[1] < now)
        tense = "past"
    elif word in ("next", "coming", "this coming"):
        first, last = min(span for span in spans if span[0] > now)
        tense = "future"
    else:
        containing = [span for span in spans if span[0] <= now <= span[1]]
        first, last = containing[0] if containing else _season_span(season, today.year)
        tense = "past" if last < now else "future" if first > now else "unknown"
    return _month_range(first, last, tense)


def _quarter(quarter: int, year: int, tense: str, basis: str) -> _Res:
    first = 3 * (quarter - 1) + 1
    return _month_range((year, first), (year, first + 2), tense, basis)


@_rule(r"Q(?P<q>[1-4])\s*(?:of\s+)?" + _YEAR)
def _quarter_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _quarter(int(m["q"]), int(m["y"]), "unknown", "explicit")


@_rule(_YEAR + r"\s*Q(?P<q>[1-4])")
def _year_quarter(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _quarter(int(m["q"]), int(m["y"]), "unknown", "explicit")


_ORDINAL_QUARTERS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}


@_rule(r"(?:the\s+)?(?P<q>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\s+(?:of\s+)?" + _YEAR)
def _ordinal_quarter_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _quarter(_ORDINAL_QUARTERS[m["q"].lower()], int(m["y"]), "unknown", "explicit")


@_rule(r"(?P<w>last|this|next)\s+quarter")
def _relative_quarter(m: re.Match[str], anchor: datetime) -> _Res | None:
    today = anchor.date()
    step = {"last": -1, "this": 0, "next": 1}[m["w"].lower()]
    year, month = _add_months(today.year, 3 * ((today.month - 1) // 3) + 1, 3 * step)
    tense = {"last": "past", "this": "unknown", "next": "future"}[m["w"].lower()]
    return _quarter((month - 1) // 3 + 1, year, tense, "relative")


# ---- now and days ----------------------------------------------------------------------------------------------

_SENTENCE_START = re.compile(r"(?:^|[.!?\n])[\s\"'“‘(]*$")


@_rule(r"(?:right\s+)?now")
def _now(m: re.Match[str], anchor: datetime) -> _Res | None:
    text = m.string
    after = text[m.end() : m.end() + 20].lower()
    if re.match(r"\s+(?:that|on|and\s+(?:then|again))\b", after):
        return None  # "now that ...", "from now on", "every now and then"
    if after.startswith(",") and _SENTENCE_START.search(text, max(0, m.start() - 5), m.start()):
        return None  # discourse "Now, ..."
    return _instant(anchor, "present", "relative")


_PART_OF_DAY = r"(?:\s+(?P<part>morning|afternoon|evening|night))?"


def _part_of_day_tense(part: str, anchor: datetime) -> str:
    hour = anchor.hour
    if part == "morning":
        return "past" if hour >= 12 else "unknown"
    if part == "afternoon":
        return "past" if hour >= 18 else "future" if hour < 12 else "unknown"
    return "future" if hour < 17 else "unknown"  # evening, night, tonight


@_rule(r"(?:(?P<mod>earlier|later)\s+)?(?P<w>yesterday|today|tonight|tomorrow)" + _PART_OF_DAY)
def _relative_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    word = m["w"].lower()
    step = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[word]
    if step:
        tense = "past" if step < 0 else "future"
    elif m["mod"]:
        tense = "past" if m["mod"].lower() == "earlier" else "future"
    elif word == "tonight":
        tense = _part_of_day_tense("night", anchor)
    elif m["part"]:
        tense = _part_of_day_tense(m["part"].lower(), anchor)
    else:
        tense = "unknown"
    return _one_day(anchor.date() + timedelta(days=step), tense)


@_rule(r"(?P<w>this|last)\s+(?P<part>morning|afternoon|evening|night)")
def _this_part_of_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    part = m["part"].lower()
    if m["w"].lower() == "last":
        if part not in ("night", "evening"):
            return None
        return _one_day(anchor.date() - timedelta(days=1), "past")
    if part == "night":
        return None  # "this night" is not idiomatic enough to trust
    return _one_day(anchor.date(), _part_of_day_tense(part, anchor))


@_rule(r"(?:the\s+)?day\s+(?P<w>before\s+yesterday|after\s+tomorrow)")
def _two_days(m: re.Match[str], anchor: datetime) -> _Res | None:
    if m["w"].lower().startswith("before"):
        return _one_day(anchor.date() - timedelta(days=2), "past")
    return _one_day(anchor.date() + timedelta(days=2), "future")


# ---- N units ago / in N units ----------------------------------------------------------------------------------


@_rule(_NUM + r"\s+" + _UNIT + r"\s+(?:ago|back)(?:\s+now)?")
def _units_ago(m: re.Match[str], anchor: datetime) -> _Res | None:
    count = _number(m["n"])
    return _shifted(m["u"].lower(), -count, anchor, "past") if count else None


@_rule(r"in\s+" + _NUM + r"\s+" + _UNIT)
def _in_units(m: re.Match[str], anchor: datetime) -> _Res | None:
    count = _number(m["n"])
    return _shifted(m["u"].lower(), count, anchor, "future") if count else None


@_rule(_NUM + r"\s+" + _UNIT + r"\s+from\s+(?:now|today)")
def _units_from_now(m: re.Match[str], anchor: datetime) -> _Res | None:
    count = _number(m["n"])
    return _shifted(m["u"].lower(), count, anchor, "future") if count else None


@_rule(r"(?:a\s+)?few\s+" + _UNIT + r"\s+(?:ago|back)")
def _few_units_ago(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _shifted_span(m["u"].lower(), -2, -5, anchor, "past")


@_rule(r"in\s+(?:a\s+)?few\s+" + _UNIT)
def _in_few_units(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _shifted_span(m["u"].lower(), 2, 5, anchor, "future")


# ---- weeks, weekdays, weekends, months, years ------------------------------------------------------------------

_RELATIVE_STEP = {"last": -1, "past": -1, "this past": -1, "this": 0, "next": 1, "coming": 1, "this coming": 1}


@_rule(
    r"(?:(?P<mod>earlier|later)\s+)?(?P<w>this\s+coming|last|this|next|coming)\s+(?P<u>week|month|year)"
    r"(?!\s+of\b)"
)
def _relative_period(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _RELATIVE_STEP[_norm(m["w"])]
    tense = "past" if step < 0 else "future" if step > 0 else "unknown"
    if step == 0 and m["mod"]:
        tense = "past" if m["mod"].lower() == "earlier" else "future"
    elif m["mod"]:
        return None  # "earlier next week" mixes two references
    return _shifted(m["u"].lower(), step, anchor, tense)


@_rule(r"the\s+(?P<u>week|month|year)\s+(?P<w>before\s+last|after\s+next)")
def _period_before_last(m: re.Match[str], anchor: datetime) -> _Res | None:
    before = m["w"].lower().startswith("before")
    return _shifted(m["u"].lower(), -2 if before else 2, anchor, "past" if before else "future")


# "Saturday the 21st": the 21st of the anchor's month if that is a Saturday, else of the nearest month (two
# either way) where it is; none such, an unresolved mention (not "on Saturday" alone).
@_rule(r"(?:(?:on|for|by)\s+)?" + _WEEKDAY + r",?\s+the\s+" + _DAY + r"(?!\d|\s*(?:of\s+)?" + _MONTH + ")")
def _weekday_the_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    today, weekday = anchor.date(), _WEEKDAY_NAMES[m["wd"].lower()]
    found = []
    for step in (0, 1, -1, 2, -2):
        year, month = _add_months(today.year, today.month, step)
        try:
            day = date(year, month, int(m["d"]))
        except ValueError:
            continue
        if day.weekday() == weekday:
            found.append((step != 0, abs((day - today).days), day < today, day))
    if not found:
        return _unresolved()
    best = min(found)[-1]
    return _one_day(best, _tense_between(best, best, today))


# "for Thursday", "by Friday": a booking or a deadline names the day as "on" does.
@_rule(r"(?P<w>this\s+coming|this\s+past|coming|past|last|this|next|on|for|by)\s+" + _WEEKDAY)
def _relative_weekday(m: re.Match[str], anchor: datetime) -> _Res | None:
    today = anchor.date()
    weekday = _WEEKDAY_NAMES[m["wd"].lower()]
    word = _norm(m["w"])
    if word in ("past", "this past"):
        back = (today.weekday() - weekday) % 7 or 7
        return _one_day(today - timedelta(days=back), "past")
    if word in ("coming", "this coming"):
        ahead = (weekday - today.weekday()) % 7 or 7
        return _one_day(today + timedelta(days=ahead), "future")
    step = {"last": -1, "this": 0, "on": 0, "for": 0, "by": 0, "next": 1}[word]
    day = _monday(today) + timedelta(days=7 * step + weekday)
    return _one_day(day, _tense_between(day, day, today))


@_rule(r"(?P<w>this\s+coming|this\s+past|coming|past|last|this|next)\s+weekend")
def _relative_weekend(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _RELATIVE_STEP[_norm(m["w"])]
    first, last = _weekend(anchor.date() + timedelta(days=7 * step))
    return _day_range(first, last, _tense_between(first, last, anchor.date()))


# ---- durations anchored at the present ---------------------------------------------------------------------------


def _duration(unit: str, count: int, anchor: datetime) -> _Res | None:
    if count <= 0:
        return None
    today = anchor.date()
    if unit == "year":
        start = _iso_year(today.year - count)
    elif unit == "month":
        start = _iso_month(*_add_months(today.year, today.month, -count))
    elif unit == "week":
        start = (today - timedelta(days=7 * count)).isoformat()
    elif unit == "day":
        start = (today - timedelta(days=count)).isoformat()
    else:
        return None  # "for two weekends now" is not a duration
    return _Res(start, today.isoformat(), "range", "relative", "present")


@_rule(r"(?:for\s+)?" + _QUALIFIER + _NUM + r"\s+" + _UNIT + r"\s+now")
def _duration_now(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _duration(m["u"].lower(), _number(m["n"]), anchor)


_PERFECT_CUE = re.compile(
    r"\b(?:have|has)\b(?!\s+to\b)|['’]ve\b|\b(?:he|she|it|that|there|who)['’]s\s+(?:been|had|\w+ed)\b",
    re.IGNORECASE,
)
_CLAUSE_START = re.compile(r"[.!?;\n。！？；][^.!?;\n。！？；]*$")


@_rule(r"for\s+" + _QUALIFIER + _NUM + r"\s+" + _UNIT)
def _duration_for(m: re.Match[str], anchor: datetime) -> _Res | None:
    text = m.string
    window_start = max(0, m.start() - 200)
    boundary = _CLAUSE_START.search(text, window_start, m.start())
    clause_start = boundary.start() + 1 if boundary else window_start
    if not _PERFECT_CUE.search(text, clause_start, m.start()):
        return None  # "I lived there for three years": a closed period, not anchored at the message
    return _duration(m["u"].lower(), _number(m["n"]), anchor)


@_rule(r"(?:(?:for|over|in|during|within)\s+)?the\s+(?:past|last)\s+(?:" + _NUM + r"\s+)?" + _UNIT + r"(?!\s+of\b)")
def _duration_past(m: re.Match[str], anchor: datetime) -> _Res | None:
    unit = m["u"].lower()
    if m["n"] is None and unit == "day":
        return None  # "the last day" is the final day, not a duration
    return _duration(unit, _number(m["n"]) if m["n"] else 1, anchor)


# ---- vague expressions: kept, never resolved ----------------------------------------------------------------------

_VAGUE_TENSE = {
    "recently": "past",
    "lately": "present",
    "soon": "future",
    "a while ago": "past",
    "a while back": "past",
    "some time ago": "past",
    "sometime ago": "past",
    "a long time ago": "past",
    "long ago": "past",
    "ages ago": "past",
    "the other day": "past",
    "just now": "past",
    "one day": "unknown",
    "someday": "future",
    "some day": "future",
    "these days": "present",
    "nowadays": "present",
    "currently": "present",
    "at the moment": "present",
    "in the future": "future",
    "in the past": "past",
}


@_rule("|".join(p.replace(" ", r"\s+") for p in sorted(_VAGUE_TENSE, key=len, reverse=True)))
def _vague(m: re.Match[str], anchor: datetime) -> _Res | None:
    phrase = _norm(m[0])
    text = m.string
    if phrase == "soon":
        if re.search(r"\bas\s+$", text[max(0, m.start() - 4) : m.start()], re.IGNORECASE) or re.match(
            r"\s+after\b", text[m.end() :], re.IGNORECASE
        ):
            return None  # "as soon as", "soon after" (relative to the story, not the message)
    if phrase == "one day":
        before = text[max(0, m.start() - 12) : m.start()]
        if re.search(
            r"\b(?:for|in|per|each|every|a|the|that|within|only|just|than|about|over|after|by|took|take"
            r"|takes|spent|spend|lasted|last|lasts)\s+$",
            before,
            re.IGNORECASE,
        ) or re.match(r"\s+(?:ago|later|before|after|off|trip)\b", text[m.end() :], re.IGNORECASE):
            return None
    return _unresolved(_VAGUE_TENSE[phrase])


@_rule(r"(?:(?:many|several|some)\s+)?(?:days|weeks|months|years)\s+(?:ago|back)")
def _vague_ago(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _unresolved("past")


@_rule(r"for\s+(?:(?:many|several|some)\s+)?(?:days|weeks|months|years|ages|a\s+while|a\s+long\s+time)\s+now")
def _vague_duration_now(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _unresolved("present")  # "for years now": ongoing, but from when is unknown


# ---- Chinese ---------------------------------------------------------------------------------------------------

_CN_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_CN_NUM = r"(?:[一二两三四五六七八九]?十[一二三四五六七八九]?|[一二两三四五六七八九])"  # 1..99
_CN_MONTH = r"(?P<mo>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
_CN_DAY = r"(?P<d>3[01]|[12]\d|0?[1-9]|三十一?|二十[一二三四五六七八九]?|十[一二三四五六七八九]?|[一二三四五六七八九])"
_CN_NUMERALS = "一二两三四五六七八九十百千万几"


def _cn_int(text: str) -> int:
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_CN_DIGITS[tens] if tens else 1) * 10 + (_CN_DIGITS[ones] if ones else 0)
    return _CN_DIGITS[text]


def _valid_year(year: int) -> bool:
    return 1900 <= year <= 2100


@_rule(r"(?<!\d)(?P<y>\d{4})\s*年\s*" + _CN_MONTH + r"\s*月\s*" + _CN_DAY + r"\s*[日号]", chinese=True)
def _cn_full_date(m: re.Match[str], anchor: datetime) -> _Res | None:
    year = int(m["y"])
    day = _valid_date(year, _cn_int(m["mo"]), _cn_int(m["d"])) if _valid_year(year) else None
    return _one_day(day, "unknown", "explicit") if day else None


@_rule(r"(?<!\d)(?P<y>\d{4})\s*年\s*" + _CN_MONTH + r"\s*月份?", chinese=True)
def _cn_year_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    year = int(m["y"])
    return _one_month(year, _cn_int(m["mo"]), "unknown", "explicit") if _valid_year(year) else None


@_rule(r"(?<!\d)(?P<y>\d{4})\s*年(?P<decade>代)?", chinese=True)
def _cn_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    year = int(m["y"])
    if not _valid_year(year):
        return None
    if m["decade"]:
        return _Res(_iso_year(year), _iso_year(year + 9), "range", "explicit", "unknown") if year % 10 == 0 else None
    return _one_year(year, "unknown", "explicit")


@_rule(r"(?<![\d" + _CN_NUMERALS + r"])" + _CN_MONTH + r"\s*月\s*" + _CN_DAY + r"\s*[日号]", chinese=True)
def _cn_month_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _nearest_day_res(_cn_int(m["mo"]), _cn_int(m["d"]), anchor)


@_rule(r"(?<![\d" + _CN_NUMERALS + r"每个上下本这第])" + _CN_MONTH + r"\s*月份?(?![饼亮光球])", chinese=True)
def _cn_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _one_month(*_nearest_month(_cn_int(m["mo"]), anchor), "unknown")


@_rule(
    r"(?<![\d" + _CN_NUMERALS + r"月第])" + _CN_DAY + r"\s*号(?![楼线房门位床桌机口车厅馆院店柜窗屋室码球选字台])",
    chinese=True,
)
def _cn_day_of_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    day = _nearest_day_of_month(_cn_int(m["d"]), anchor)
    return _one_day(day, "unknown") if day else None


_CN_DAY_WORDS = {
    "大前天": -3,
    "前天": -2,
    "昨天": -1,
    "昨日": -1,
    "昨晚": -1,
    "今天": 0,
    "今日": 0,
    "今晚": 0,
    "今早": 0,
    "明天": 1,
    "明日": 1,
    "明晚": 1,
    "后天": 2,
    "大后天": 3,
}


@_rule(
    r"大前天|大后天|(?<![之然以最随过背先提眼目面跟])(?:前天|后天)(?!性)|"
    + "|".join(w for w in _CN_DAY_WORDS if len(w) == 2 and w not in ("前天", "后天")),
    chinese=True,
)
def _cn_relative_day(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _CN_DAY_WORDS[m[0]]
    tense = "past" if step < 0 else "future" if step > 0 else "unknown"
    if m[0] == "今晚":
        tense = _part_of_day_tense("night", anchor)
    elif m[0] == "今早":
        tense = _part_of_day_tense("morning", anchor)
    return _one_day(anchor.date() + timedelta(days=step), tense)


_CN_PREFIX = r"(?P<p>上上|下下|上|下|这|本)个?"
_CN_PREFIX_STEP = {"上上": -2, "上": -1, "这": 0, "本": 0, "下": 1, "下下": 2}
_CN_WEEK = r"(?:周|星期|礼拜)"
_CN_WEEKDAY_RANGE_AFTER = re.compile(r"\s*[到至~～—-]\s*(?:周|星期|礼拜)")
_CN_WEEKDAY_RANGE_BEFORE = re.compile(r"(?:周|星期|礼拜)[一二三四五六日天]\s*[到至~～—-]\s*$")
_CN_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


def _cn_step_tense(step: int) -> str:
    return "past" if step < 0 else "future" if step > 0 else "unknown"


@_rule(_CN_PREFIX + _CN_WEEK + r"(?![末围边到全期年岁])", chinese=True)
def _cn_relative_week(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _CN_PREFIX_STEP[m["p"]]
    return _shifted("week", step, anchor, _cn_step_tense(step))


# 周一 must not be the start of 一起/一直/一点/一下 ("这周一起吃饭" is "this week, together"), and no weekday may
# be a count ("这周三个人", "下周三天").
@_rule(
    r"(?<![\d"
    + _CN_NUMERALS
    + r"每个])(?:"
    + _CN_PREFIX
    + r")?"
    + _CN_WEEK
    + r"(?P<wd>[二三四五六日天]|一(?![起直样切共定般边点]|下(?!午)|会))(?![个天次年遍趟位名种件些])",
    chinese=True,
)
def _cn_weekday(m: re.Match[str], anchor: datetime) -> _Res | None:
    if not m["p"] and (
        _CN_WEEKDAY_RANGE_AFTER.match(m.string, m.end())
        or _CN_WEEKDAY_RANGE_BEFORE.search(m.string, max(0, m.start() - 6), m.start())
    ):
        return None  # "周一到周五上班": a weekly schedule, not particular days
    today = anchor.date()
    step = _CN_PREFIX_STEP[m["p"]] if m["p"] else 0
    day = _monday(today) + timedelta(days=7 * step + _CN_WEEKDAYS[m["wd"]])
    return _one_day(day, _tense_between(day, day, today))


@_rule(_CN_PREFIX + r"周末", chinese=True)
def _cn_weekend(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _CN_PREFIX_STEP[m["p"]]
    first, last = _weekend(anchor.date() + timedelta(days=7 * step))
    return _day_range(first, last, _tense_between(first, last, anchor.date()))


@_rule(_CN_PREFIX + r"月份?(?![饼亮光球])", chinese=True)
def _cn_relative_month(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _CN_PREFIX_STEP[m["p"]]
    return _shifted("month", step, anchor, _cn_step_tense(step))


_CN_YEAR_WORDS = {"大前年": -3, "前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2, "大后年": 3}


@_rule(r"大前年|大后年|(?<![之然以最随提])(?:前年|后年)|(?<!过)去年|今年|明年", chinese=True)
def _cn_relative_year(m: re.Match[str], anchor: datetime) -> _Res | None:
    step = _CN_YEAR_WORDS[m[0]]
    return _shifted("year", step, anchor, _cn_step_tense(step))


_CN_UNITS = {"天": "day", "周": "week", "星期": "week", "礼拜": "week", "月": "month", "年": "year"}


@_rule(
    r"(?<![\d" + _CN_NUMERALS + r"])(?P<n>\d{1,2}|" + _CN_NUM + r")\s*个?\s*(?P<u>天|周|星期|礼拜|(?<=个)月|年)"
    r"\s*(?:以前|之前|前)",
    chinese=True,
)
def _cn_units_ago(m: re.Match[str], anchor: datetime) -> _Res | None:
    count = _cn_int(m["n"])
    if not count or (m["u"] == "天" and "个" in m[0]):
        return None
    return _shifted(_CN_UNITS[m["u"]], -count, anchor, "past")


@_rule(
    r"(?<![\d" + _CN_NUMERALS + r"])几\s*个?\s*(?P<u>天|周|星期|礼拜|(?<=个)月|年)\s*(?:以前|之前|前)|前几(?P<u2>天)",
    chinese=True,
)
def _cn_few_ago(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _shifted_span(_CN_UNITS[m["u"] or m["u2"]], -2, -5, anchor, "past")


@_rule(r"(?<![出体表呈展实发再涌浮显])现在", chinese=True)
def _cn_now(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _instant(anchor, "present", "relative")


_CN_VAGUE_TENSE = {
    "最近": "past",
    "近来": "present",
    "这些天": "present",
    "这几天": "present",
    "目前": "present",
    "如今": "present",
    "刚才": "past",
    "刚刚": "past",
    "不久前": "past",
    "很久以前": "past",
    "很久之前": "past",
    "将来": "future",
    "有一天": "unknown",
    "某天": "unknown",
}


@_rule("|".join(sorted(_CN_VAGUE_TENSE, key=len, reverse=True)), chinese=True)
def _cn_vague(m: re.Match[str], anchor: datetime) -> _Res | None:
    return _unresolved(_CN_VAGUE_TENSE[m[0]])


# --------------------------------------------------------------------------------------------------------------
# Combinators applied to the rule hits: "since X" and a clock time after a day
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hit:
    start: int
    end: int
    order: int  # rule order, the last tie-breaker
    res: _Res


_SINCE_EN = re.compile(r"(?<![A-Za-z0-9_])(?:ever\s+)?since\s+$", re.IGNORECASE)
_SINCE_CN_PREFIX = re.compile(r"(?:自从|自打)\s*$")
_SINCE_CN_SUFFIX = re.compile(r"\s*(?:以来|至今)")


def _since_hits(text: str, hits: list[_Hit], anchor: datetime) -> list[_Hit]:
    """'since last year', 'since 2016', 自从去年, 去年以来: a range from the base start to the anchor's day."""
    today = anchor.date().isoformat()
    combined: list[_Hit] = []
    for hit in hits:
        base = hit.res
        if base.start is None or base.precision in ("unknown", "instant") or base.tense in ("future", "present"):
            continue
        if base.start > today:  # ISO prefixes compare correctly: "2023-06" > "2023-05-08"
            continue
        start, end = hit.start, hit.end
        english = _SINCE_EN.search(text, max(0, start - 20), start)
        chinese_before = _SINCE_CN_PREFIX.search(text, max(0, start - 5), start)
        chinese_after = _SINCE_CN_SUFFIX.match(text, end)
        if english:
            start = english.start()
        elif chinese_before or chinese_after:
            if chinese_before:
                start = chinese_before.start()
            if chinese_after:
                end = chinese_after.end()
        else:
            continue
        res = _Res(base.start, today, "range", "relative", "present")
        combined.append(_Hit(start, end, hit.order, res))
    return combined


_CLOCK = re.compile(
    r"\s*,?\s*(?:at|@)\s*(?:(?P<h>1[0-2]|0?[1-9])(?::(?P<mi>[0-5]\d))?\s*(?P<ap>[ap](?:\.m\.|m))(?![A-Za-z])"
    r"|(?P<h24>[01]?\d|2[0-3]):(?P<mi24>[0-5]\d)(?!\d)|(?P<noon>noon)(?![A-Za-z]))",
    re.IGNORECASE,
)


def _with_clock_time(text: str, hit: _Hit, limit: int, anchor: datetime) -> _Hit:
    """'yesterday at 3pm', '2023-05-07 at 14:30': a single resolved day followed by a clock time is an instant."""
    res = hit.res
    if res.precision != "day" or res.start is None:
        return hit
    clock = _CLOCK.match(text, hit.end)
    if not clock or clock.end() > limit:
        return hit
    if clock["noon"]:
        hour, minute = 12, 0
    elif clock["h24"]:
        hour, minute = int(clock["h24"]), int(clock["mi24"])
    else:
        hour, minute = int(clock["h"]) % 12, int(clock["mi"] or 0)
        if clock["ap"].lower().startswith("p"):
            hour += 12
    day = date.fromisoformat(res.start)
    moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=_anchor_zone(anchor))
    return _Hit(hit.start, clock.end(), hit.order, _instant(moment, res.tense, res.basis))


# --------------------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------------------


def _check_anchor(anchor: datetime) -> None:
    if not isinstance(anchor, datetime) or anchor.utcoffset() is None:
        raise ValueError("anchor must be a timezone-aware datetime (the message's created_at)")


_HAN = re.compile(r"[\u3400-\u9fff]")
_WORD_START = r"(?<![A-Za-z0-9_])"
_starts: tuple[re.Pattern[str], "_EnglishStarts"] | None = None
# Under IGNORECASE these four non-ASCII letters also match ASCII ones (ſ s, K k, İ ı i); text
# holding one is scanned case-insensitively, any other text lowercased (ASCII only, so every
# position stays where it was) by a pattern without the flag, more than twice as fast.
_FOLDS_TO_ASCII = re.compile("[\u0130\u0131\u017f\u212a]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _lowercase_pattern(source: str) -> str:
    """``source`` with its ASCII letters lowercased, escapes (\\S, \\d …) and ``(?P`` kept."""
    out, i = [], 0
    while i < len(source):
        if source[i] == "\\":
            out.append(source[i : i + 2])
            i += 2
        elif source.startswith("(?P", i):
            out.append("(?P")
            i += 3
        else:
            out.append(source[i].lower() if source[i].isascii() else source[i])
            i += 1
    return "".join(out)


_ANY = None  # _first_chars: a match may start with any character


def _first_chars(items) -> tuple[frozenset[str] | None, bool]:
    """(what a match of the parsed sequence can start with: ASCII characters, plus "" when it
    may also be a non-ASCII one, or None for anything; whether it can match the empty string).
    Zero-width items (lookarounds, anchors) are passed over, which can only make the set
    larger than needed, never smaller."""

    categories = {
        c.CATEGORY_DIGIT: "0123456789",
        c.CATEGORY_SPACE: " \t\n\r\f\v",
        c.CATEGORY_WORD: "0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    }
    chars: set[str] = set()
    for op, arg in items:
        if op in (c.ASSERT, c.ASSERT_NOT, c.AT):
            continue
        if op is c.LITERAL:
            return frozenset(chars | {chr(arg) if arg < 128 else ""}), False
        if op is c.IN:
            part: set[str] = set()
            for kind, value in arg:
                if kind is c.LITERAL:
                    part.add(chr(value) if value < 128 else "")
                elif kind is c.RANGE:
                    part.update(chr(v) for v in range(value[0], min(value[1], 127) + 1))
                    if value[1] >= 128:
                        part.add("")
                elif kind is c.CATEGORY and value in categories:
                    part.update(categories[value])
                    part.add("")  # \d, \s and \w match non-ASCII characters too
                else:  # a negation or a negated category
                    return _ANY, False
            return frozenset(chars | part), False
        if op is c.SUBPATTERN:
            first, empty = _first_chars(arg[3])
        elif op is c.BRANCH:
            first, empty = frozenset(), False
            for branch in arg[1]:
                sub, sub_empty = _first_chars(branch)
                if sub is _ANY:
                    return _ANY, False
                first, empty = first | sub, empty or sub_empty
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)):
            first, empty = _first_chars(arg[2])
            empty = empty or arg[0] == 0
        else:  # any character, a back reference …
            return _ANY, False
        if first is _ANY:
            return _ANY, False
        chars |= first
        if not empty:
            return frozenset(chars), False
    return frozenset(chars), True


def _english_bodies() -> Iterator[str]:
    """The English running-text rules' patterns without their leading word-start test, group
    names made unique per rule (so they can stand side by side in one pattern)."""
    for order, rule in enumerate(_RULES):
        if rule.chinese or rule.whole_only:
            continue
        body = rule.pattern.pattern
        assert body.startswith(_WORD_START), rule.name  # every English rule is built by _english
        body = re.sub(r"\(\?P<(\w+)>", lambda m: f"(?P<r{order}_{m.group(1)}>", body[len(_WORD_START) :])
        yield re.sub(r"\(\?P=(\w+)\)", lambda m: f"(?P=r{order}_{m.group(1)})", body)


class _EnglishStarts:
    """Finds every position where some English running-text rule matches lowercased text: its
    word starts, each tried against the rules that can begin with its first character ("" for
    a non-ASCII one)."""

    def __init__(self) -> None:

        by_char: dict[str, list[str]] = {}
        anywhere: list[str] = []  # bodies that may start with any character (or none)
        for body in map(_lowercase_pattern, _english_bodies()):
            first, empty = _first_chars(parser.parse(body))
            if first is _ANY or empty:
                anywhere.append(body)
            else:
                for ch in first:
                    by_char.setdefault(ch, []).append(body)
        self.by_char = {ch: re.compile("|".join(bodies + anywhere)) for ch, bodies in by_char.items()}
        self.anywhere = re.compile("|".join(anywhere)) if anywhere else None
        ascii_heads = "[" + re.escape("".join(sorted(ch for ch in by_char if ch))) + "]"
        heads = "." if anywhere else ascii_heads + ("|[^\\x00-\\x7f]" if "" in by_char else "")
        self.heads = re.compile(r"(?<![a-z0-9_])(?:" + heads + ")", re.DOTALL)

    def positions(self, lowered: str) -> list[int]:
        out = []
        for head in self.heads.finditer(lowered):
            at = head.start()
            ch = lowered[at]
            pattern = self.by_char.get(ch if ch.isascii() else "", self.anywhere)
            if pattern is not None and pattern.match(lowered, at):
                out.append(at)
        return out


def _english_starts() -> tuple[re.Pattern[str], "_EnglishStarts"]:
    """Every English running-text rule's body in one case-insensitive zero-width pattern (for
    text holding one of the four letters that fold to ASCII), and the per-character dispatch
    used for any other text. Trying each rule only at the positions they give yields exactly
    each rule's own ``finditer`` matches at a fraction of the cost of 40 full scans."""
    global _starts
    if _starts is None:
        union = _WORD_START + "(?=" + "|".join(_english_bodies()) + ")"
        _starts = re.compile(union, re.IGNORECASE), _EnglishStarts()
    return _starts


def _english_positions(text: str) -> list[int]:
    """Every position where some English running-text rule matches ``text``."""
    folded, dispatch = _english_starts()
    if _FOLDS_TO_ASCII.search(text):
        return [m.start() for m in folded.finditer(text)]
    return dispatch.positions(text.translate(_ASCII_LOWER))


def _rule_matches(rule: _Rule, text: str, starts: list[int] | None) -> Iterator[re.Match[str]]:
    """``rule.pattern.finditer(text)``; with ``starts`` (every position where an English rule
    can match) only those positions are tried, skipping what the previous match covered, as
    finditer does. ``match(text, pos)`` sees the characters before ``pos`` (lookbehinds hold)."""
    if starts is None:
        yield from rule.pattern.finditer(text)
        return
    after = 0
    for pos in starts:
        if pos < after:
            continue
        match = rule.pattern.match(text, pos)
        if match is not None:
            after = max(match.end(), pos + 1)
            yield match


def _collect(text: str, anchor: datetime, *, whole_only: bool) -> list[_Hit]:
    hits: list[_Hit] = []
    han = bool(_HAN.search(text))
    starts = None if whole_only else _english_positions(text)
    for order, rule in enumerate(_RULES):
        if (rule.whole_only and not whole_only) or (rule.chinese and not han):
            continue
        for match in _rule_matches(rule, text, None if rule.chinese else starts):
            if rule.whole_only and (match.start(), match.end()) != (0, len(text)):
                continue
            try:
                res = rule.resolve(match, anchor)
            except (ValueError, OverflowError):  # arithmetic past year 1 or 9999
                continue
            if res is not None:
                hits.append(_Hit(match.start(), match.end(), order, res))
    return hits + _since_hits(text, hits, anchor)


def _select(hits: list[_Hit]) -> list[_Hit]:
    """Non-overlapping hits, longest first (then leftmost, then rule order), returned in text order."""
    starts: list[int] = []  # chosen spans, kept sorted by start; they never overlap each other
    ends: list[int] = []
    chosen: dict[int, _Hit] = {}
    for hit in sorted(hits, key=lambda h: (h.start - h.end, h.start, h.order)):
        index = bisect.bisect_right(starts, hit.start)
        if index and ends[index - 1] > hit.start:
            continue  # overlaps the chosen span that starts at or before it
        if index < len(starts) and starts[index] < hit.end:
            continue  # overlaps the next chosen span
        starts.insert(index, hit.start)
        ends.insert(index, hit.end)
        chosen[hit.start] = hit
    return [chosen[start] for start in starts]


def _mentions(text: str, anchor: datetime, *, whole_only: bool, offset: int = 0) -> list[TimeMention]:
    chosen = _select(_collect(text, anchor, whole_only=whole_only))
    result: list[TimeMention] = []
    for index, hit in enumerate(chosen):
        limit = chosen[index + 1].start if index + 1 < len(chosen) else len(text)
        hit = _with_clock_time(text, hit, limit, anchor)
        res = hit.res
        result.append(
            TimeMention(
                original_text=text[hit.start : hit.end],
                start=res.start,
                end=res.end,
                precision=res.precision,
                basis=res.basis,
                tense=res.tense,
                span=(hit.start + offset, hit.end + offset),
            )
        )
    return result


# Every rule needs a digit, a CJK character or one of these words; text without any of
# them cannot hold a time expression, so the ~55 rules are skipped for it (most sentences).
_MAYBE_TIME = CaselessPattern(
    r"\d|[\u3400-\u9fff]|\b(?:today|tonight|yesterday|tomorrow|ago|last|next|this|past|coming|week\w*|month\w*|"
    r"year\w*|day\w*|since|now|nowadays|recent\w*|late\w*|soon|while|time|moment|current\w*|earlier|"
    r"morning|afternoon|evening|night|noon|midnight|summer|winter|spring|fall|autumn|season|q[1-4]|quarter|"
    r"half|decade|century|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*|"
    r"mon\w*|tue\w*|wed\w*|thu\w*|fri\w*|sat\w*|sun\w*|weekend\w*|fortnight|someday|once)\b"
)


def might_contain_time(text: str) -> bool:
    return _MAYBE_TIME.found_in(text)


def find_time_mentions(text: str, anchor: datetime) -> list[TimeMention]:
    """All time expressions in ``text`` in text order, non-overlapping (the longest match wins).

    ``anchor`` is the aware datetime the message was written at; relative expressions are resolved in its own
    calendar (its UTC offset). Vague expressions come back with precision "unknown" and no start/end.
    """
    _check_anchor(anchor)
    if not text or not might_contain_time(text):
        return []
    return _mentions(text, anchor, whole_only=False)


def has_dated_mention(text: str, anchor: datetime) -> bool:
    """Whether ``text`` holds a time expression that resolves to a start (vague ones do not count)."""
    return any(m.start for m in find_time_mentions(text, anchor))


def resolve_expression(expr: str, anchor: datetime) -> TimeMention | None:
    """Resolve one whole time expression ("last Friday", "2023年8月", "May"), or None if it is not one.

    Surrounding whitespace and trailing punctuation are ignored; a bare month name is accepted here (nearest
    occurrence) though never matched inside running text. Spans refer to ``expr``.
    """
    _check_anchor(anchor)
    stripped = expr.strip().rstrip(".,;:!?。，；：！？").rstrip()
    if not stripped:
        return None
    offset = expr.index(stripped)
    found = _mentions(stripped, anchor, whole_only=True, offset=offset)
    if len(found) == 1 and found[0].span == (offset, offset + len(stripped)):
        return found[0]
    return None
