"""Deterministic time expressions (design §5): resolution table, mention finding, anchors and false positives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.timeparse import TimeMention, find_time_mentions, resolve_expression

PLUS2 = timezone(timedelta(hours=2))


def at(text: str, tz: timezone = PLUS2) -> datetime:
    """An anchor from 'YYYY-MM-DD HH:MM' in the given offset."""
    return datetime.fromisoformat(text).replace(tzinfo=tz)


# 2023-05-08 is a Monday (the LoCoMo-style "1:56 pm on 8 May, 2023").
MON = at("2023-05-08 13:56")
WED = at("2023-05-10 09:00")
SAT = at("2023-05-13 10:00")
SUN = at("2023-05-14 20:00")
FRI_NEW_YEAR = at("2026-01-02 12:00")  # Friday; its week began on Monday 2025-12-29

UNKNOWN = (None, None, "unknown", "unknown")

# (expression, anchor, start, end, precision, basis)
CASES = [
    # ---- absolute English dates
    ("2023-05-07", MON, "2023-05-07", "2023-05-07", "day", "explicit"),
    ("2024/2/29", MON, "2024-02-29", "2024-02-29", "day", "explicit"),
    ("May 7, 2023", MON, "2023-05-07", "2023-05-07", "day", "explicit"),
    ("7 May 2023", MON, "2023-05-07", "2023-05-07", "day", "explicit"),
    ("8 May, 2023", MON, "2023-05-08", "2023-05-08", "day", "explicit"),
    ("the 7th of May 2023", MON, "2023-05-07", "2023-05-07", "day", "explicit"),
    ("2023-05-07 14:30", MON, "2023-05-07T14:30:00+02:00", "2023-05-07T14:30:00+02:00", "instant", "explicit"),
    ("2023-05-07T10:00Z", MON, "2023-05-07T10:00:00+00:00", "2023-05-07T10:00:00+00:00", "instant", "explicit"),
    ("May 2023", MON, "2023-05", "2023-05", "month", "explicit"),
    ("in March 2019", MON, "2019-03", "2019-03", "month", "explicit"),
    ("2023-05", MON, "2023-05", "2023-05", "month", "explicit"),
    ("in 2022", MON, "2022", "2022", "year", "explicit"),
    ("2019", MON, "2019", "2019", "year", "explicit"),
    ("the summer of 2021", MON, "2021-06", "2021-08", "range", "explicit"),
    ("winter 2021", MON, "2021-12", "2022-02", "range", "explicit"),
    ("Q3 2026", MON, "2026-07", "2026-09", "range", "explicit"),
    ("2026 Q1", MON, "2026-01", "2026-03", "range", "explicit"),
    ("the 1990s", MON, "1990", "1999", "range", "explicit"),
    # ---- partial dates: nearest occurrence (window: 5 months back .. 6 months ahead)
    ("May 7th", MON, "2023-05-07", "2023-05-07", "day", "relative"),
    ("7th of May", MON, "2023-05-07", "2023-05-07", "day", "relative"),
    ("December 25th", at("2023-01-10 12:00"), "2022-12-25", "2022-12-25", "day", "relative"),
    ("January 5", at("2023-12-20 12:00"), "2024-01-05", "2024-01-05", "day", "relative"),
    ("Feb 29", at("2024-01-15 12:00"), "2024-02-29", "2024-02-29", "day", "relative"),
    ("Feb 29", MON, *UNKNOWN),  # no Feb 29 within 6 months of May 2023
    ("in May", MON, "2023-05", "2023-05", "month", "relative"),
    ("in December", at("2023-06-15 12:00"), "2023-12", "2023-12", "month", "relative"),  # exactly +6: ahead
    ("in November", MON, "2023-11", "2023-11", "month", "relative"),  # exactly 6 months ahead
    ("in December", MON, "2022-12", "2022-12", "month", "relative"),  # 7 ahead: take the one 5 back
    ("in January", at("2023-12-10 12:00"), "2024-01", "2024-01", "month", "relative"),
    ("May", MON, "2023-05", "2023-05", "month", "relative"),  # bare month only as a whole expression
    ("last May", MON, "2022-05", "2022-05", "month", "relative"),
    ("next March", MON, "2024-03", "2024-03", "month", "relative"),
    ("last summer", MON, "2022-06", "2022-08", "range", "relative"),
    ("last summer", at("2023-10-01 12:00"), "2023-06", "2023-08", "range", "relative"),
    ("this winter", at("2024-01-20 12:00"), "2023-12", "2024-02", "range", "relative"),
    ("last quarter", at("2024-02-10 12:00"), "2023-10", "2023-12", "range", "relative"),
    # ---- relative days
    ("today", MON, "2023-05-08", "2023-05-08", "day", "relative"),
    ("tonight", MON, "2023-05-08", "2023-05-08", "day", "relative"),
    ("this morning", MON, "2023-05-08", "2023-05-08", "day", "relative"),
    ("this evening", MON, "2023-05-08", "2023-05-08", "day", "relative"),
    ("yesterday", MON, "2023-05-07", "2023-05-07", "day", "relative"),
    ("yesterday afternoon", MON, "2023-05-07", "2023-05-07", "day", "relative"),
    ("last night", MON, "2023-05-07", "2023-05-07", "day", "relative"),
    ("the day before yesterday", MON, "2023-05-06", "2023-05-06", "day", "relative"),
    ("tomorrow", MON, "2023-05-09", "2023-05-09", "day", "relative"),
    ("the day after tomorrow", MON, "2023-05-10", "2023-05-10", "day", "relative"),
    ("3 days ago", MON, "2023-05-05", "2023-05-05", "day", "relative"),
    ("three days ago", MON, "2023-05-05", "2023-05-05", "day", "relative"),
    ("in 3 days", MON, "2023-05-11", "2023-05-11", "day", "relative"),
    ("a couple of days ago", MON, "2023-05-06", "2023-05-06", "day", "relative"),
    ("a few days ago", MON, "2023-05-03", "2023-05-06", "range", "relative"),
    ("30 days ago", at("2024-03-31 12:00"), "2024-03-01", "2024-03-01", "day", "relative"),
    ("yesterday", at("2024-03-01 08:00"), "2024-02-29", "2024-02-29", "day", "relative"),  # leap year
    ("yesterday", at("2023-03-01 08:00"), "2023-02-28", "2023-02-28", "day", "relative"),
    ("yesterday", at("2024-01-01 08:00"), "2023-12-31", "2023-12-31", "day", "relative"),
    ("yesterday at 3pm", MON, "2023-05-07T15:00:00+02:00", "2023-05-07T15:00:00+02:00", "instant", "relative"),
    # ---- weekdays: weeks start on Monday
    ("last Friday", MON, "2023-05-05", "2023-05-05", "day", "relative"),
    ("last Friday", WED, "2023-05-05", "2023-05-05", "day", "relative"),
    ("last Friday", SUN, "2023-05-05", "2023-05-05", "day", "relative"),  # previous week, not 2 days ago
    ("this Friday", WED, "2023-05-12", "2023-05-12", "day", "relative"),
    ("on Friday", WED, "2023-05-12", "2023-05-12", "day", "relative"),
    ("next Friday", WED, "2023-05-19", "2023-05-19", "day", "relative"),
    ("for Friday", WED, "2023-05-12", "2023-05-12", "day", "relative"),  # a booking's day
    ("by Friday", WED, "2023-05-12", "2023-05-12", "day", "relative"),  # a deadline's
    ("for Friday at 19:00", WED, "2023-05-12T19:00:00+02:00", "2023-05-12T19:00:00+02:00", "instant", "relative"),
    ("this past Friday", SUN, "2023-05-12", "2023-05-12", "day", "relative"),
    ("this coming Friday", SAT, "2023-05-19", "2023-05-19", "day", "relative"),
    ("last Friday", at("2023-03-01 12:00"), "2023-02-24", "2023-02-24", "day", "relative"),  # month boundary
    ("last Monday", at("2023-01-03 12:00"), "2022-12-26", "2022-12-26", "day", "relative"),  # year boundary
    ("next Sunday", at("2023-12-28 12:00"), "2024-01-07", "2024-01-07", "day", "relative"),
    # ---- weeks and weekends
    ("last week", MON, "2023-05-01", "2023-05-07", "range", "relative"),
    ("last week", FRI_NEW_YEAR, "2025-12-22", "2025-12-28", "range", "relative"),
    ("this week", FRI_NEW_YEAR, "2025-12-29", "2026-01-04", "range", "relative"),
    ("next week", MON, "2023-05-15", "2023-05-21", "range", "relative"),
    ("2 weeks ago", MON, "2023-04-24", "2023-04-30", "range", "relative"),
    ("a week ago", MON, "2023-05-01", "2023-05-07", "range", "relative"),
    ("in two weeks", MON, "2023-05-22", "2023-05-28", "range", "relative"),
    ("last weekend", MON, "2023-05-06", "2023-05-07", "range", "relative"),
    ("last weekend", SUN, "2023-05-06", "2023-05-07", "range", "relative"),
    ("this weekend", MON, "2023-05-13", "2023-05-14", "range", "relative"),
    ("next weekend", MON, "2023-05-20", "2023-05-21", "range", "relative"),
    ("two weekends ago", MON, "2023-04-29", "2023-04-30", "range", "relative"),
    # ---- months and years
    ("last month", at("2024-01-15 12:00"), "2023-12", "2023-12", "month", "relative"),
    ("this month", MON, "2023-05", "2023-05", "month", "relative"),
    ("next month", at("2023-12-05 12:00"), "2024-01", "2024-01", "month", "relative"),
    ("3 months ago", MON, "2023-02", "2023-02", "month", "relative"),
    ("a month ago", at("2024-03-31 12:00"), "2024-02", "2024-02", "month", "relative"),
    ("in 2 months", at("2023-11-30 12:00"), "2024-01", "2024-01", "month", "relative"),
    ("last year", MON, "2022", "2022", "year", "relative"),
    ("this year", MON, "2023", "2023", "year", "relative"),
    ("next year", MON, "2024", "2024", "year", "relative"),
    ("two years ago", MON, "2021", "2021", "year", "relative"),
    ("a year ago", at("2024-02-29 12:00"), "2023", "2023", "year", "relative"),
    ("in 5 years", MON, "2028", "2028", "year", "relative"),
    ("the year before last", MON, "2021", "2021", "year", "relative"),
    # ---- durations anchored at the present
    ("for 3 years now", MON, "2020", "2023-05-08", "range", "relative"),
    ("seven years now", MON, "2016", "2023-05-08", "range", "relative"),
    ("for about four months now", MON, "2023-01", "2023-05-08", "range", "relative"),
    ("for two weeks now", MON, "2023-04-24", "2023-05-08", "range", "relative"),
    ("for the past 10 days", MON, "2023-04-28", "2023-05-08", "range", "relative"),
    ("since 2016", MON, "2016", "2023-05-08", "range", "relative"),
    ("since last year", MON, "2022", "2023-05-08", "range", "relative"),
    ("since May", at("2023-03-10 12:00"), "2022-05", "2023-03-10", "range", "relative"),
    ("since May", MON, "2023-05", "2023-05-08", "range", "relative"),
    ("since yesterday", MON, "2023-05-07", "2023-05-08", "range", "relative"),
    # ---- vague: kept, unresolved
    ("recently", MON, *UNKNOWN),
    ("lately", MON, *UNKNOWN),
    ("soon", MON, *UNKNOWN),
    ("a while ago", MON, *UNKNOWN),
    ("some time ago", MON, *UNKNOWN),
    ("one day", MON, *UNKNOWN),
    ("these days", MON, *UNKNOWN),
    # ---- Chinese: relative days, weeks, weekdays
    ("今天", MON, "2023-05-08", "2023-05-08", "day", "relative"),
    ("昨天", MON, "2023-05-07", "2023-05-07", "day", "relative"),
    ("前天", MON, "2023-05-06", "2023-05-06", "day", "relative"),
    ("明天", MON, "2023-05-09", "2023-05-09", "day", "relative"),
    ("后天", MON, "2023-05-10", "2023-05-10", "day", "relative"),
    ("昨天", at("2024-03-01 08:00"), "2024-02-29", "2024-02-29", "day", "relative"),
    ("上周", MON, "2023-05-01", "2023-05-07", "range", "relative"),
    ("上星期", MON, "2023-05-01", "2023-05-07", "range", "relative"),
    ("上个星期", FRI_NEW_YEAR, "2025-12-22", "2025-12-28", "range", "relative"),
    ("这周", MON, "2023-05-08", "2023-05-14", "range", "relative"),
    ("本周", MON, "2023-05-08", "2023-05-14", "range", "relative"),
    ("下周", MON, "2023-05-15", "2023-05-21", "range", "relative"),
    ("下个星期", MON, "2023-05-15", "2023-05-21", "range", "relative"),
    ("上周五", MON, "2023-05-05", "2023-05-05", "day", "relative"),
    ("上周五", SUN, "2023-05-05", "2023-05-05", "day", "relative"),
    ("下周一", WED, "2023-05-15", "2023-05-15", "day", "relative"),
    ("这周三", MON, "2023-05-10", "2023-05-10", "day", "relative"),
    ("本周日", MON, "2023-05-14", "2023-05-14", "day", "relative"),
    ("周五", WED, "2023-05-12", "2023-05-12", "day", "relative"),
    ("星期五", WED, "2023-05-12", "2023-05-12", "day", "relative"),
    ("上个星期一", at("2023-01-03 12:00"), "2022-12-26", "2022-12-26", "day", "relative"),
    ("上周末", MON, "2023-05-06", "2023-05-07", "range", "relative"),
    # ---- Chinese: months, years, N ago
    ("上个月", at("2024-01-15 12:00"), "2023-12", "2023-12", "month", "relative"),
    ("这个月", MON, "2023-05", "2023-05", "month", "relative"),
    ("本月", MON, "2023-05", "2023-05", "month", "relative"),
    ("下个月", at("2023-12-05 12:00"), "2024-01", "2024-01", "month", "relative"),
    ("去年", MON, "2022", "2022", "year", "relative"),
    ("今年", MON, "2023", "2023", "year", "relative"),
    ("明年", MON, "2024", "2024", "year", "relative"),
    ("前年", MON, "2021", "2021", "year", "relative"),
    ("3天前", MON, "2023-05-05", "2023-05-05", "day", "relative"),
    ("三天前", MON, "2023-05-05", "2023-05-05", "day", "relative"),
    ("二十天前", MON, "2023-04-18", "2023-04-18", "day", "relative"),
    ("两周前", MON, "2023-04-24", "2023-04-30", "range", "relative"),
    ("两个星期前", MON, "2023-04-24", "2023-04-30", "range", "relative"),
    ("三个月前", at("2024-01-15 12:00"), "2023-10", "2023-10", "month", "relative"),
    ("五年前", MON, "2018", "2018", "year", "relative"),
    ("10年前", MON, "2013", "2013", "year", "relative"),
    ("几天前", MON, "2023-05-03", "2023-05-06", "range", "relative"),
    # ---- Chinese: absolute and partial dates
    ("2024年", MON, "2024", "2024", "year", "explicit"),
    ("2024年8月", MON, "2024-08", "2024-08", "month", "explicit"),
    ("2026 年 8 月", MON, "2026-08", "2026-08", "month", "explicit"),
    ("2024年8月3日", MON, "2024-08-03", "2024-08-03", "day", "explicit"),
    ("2024年8月3号", MON, "2024-08-03", "2024-08-03", "day", "explicit"),
    ("8月3日", MON, "2023-08-03", "2023-08-03", "day", "relative"),
    ("12月25日", at("2024-01-10 12:00"), "2023-12-25", "2023-12-25", "day", "relative"),
    ("十二月", at("2024-01-10 12:00"), "2023-12", "2023-12", "month", "relative"),
    ("March 19-24", at("2026-01-20 21:30"), "2026-03-19", "2026-03-24", "range", "relative"),
    ("March 19 to 24", at("2026-01-20 21:30"), "2026-03-19", "2026-03-24", "range", "relative"),
    ("March 19 to March 24", at("2026-01-20 21:30"), "2026-03-19", "2026-03-24", "range", "relative"),
    ("December 30 - January 2", at("2025-12-01 09:00"), "2025-12-30", "2026-01-02", "range", "relative"),
    ("3号", MON, "2023-05-03", "2023-05-03", "day", "relative"),
    ("30号", at("2023-05-02 12:00"), "2023-04-30", "2023-04-30", "day", "relative"),
    ("去年以来", MON, "2022", "2023-05-08", "range", "relative"),
    ("现在", MON, "2023-05-08T13:56:00+02:00", "2023-05-08T13:56:00+02:00", "instant", "relative"),
]


@pytest.mark.parametrize(
    ("expr", "anchor", "start", "end", "precision", "basis"), CASES, ids=[f"{c[0]}@{c[1].date()}" for c in CASES]
)
def test_resolution_table(expr, anchor, start, end, precision, basis):
    mention = resolve_expression(expr, anchor)
    assert mention is not None, expr
    assert (mention.start, mention.end, mention.precision, mention.basis) == (start, end, precision, basis)
    assert mention.original_text == expr
    assert mention.span == (0, len(expr))


def test_table_is_big_and_bilingual():
    assert len(CASES) >= 60
    assert sum(1 for c in CASES if any("\u4e00" <= ch <= "\u9fff" for ch in c[0])) >= 25


@pytest.mark.parametrize(
    ("expr", "anchor", "tense"),
    [
        ("last week", MON, "past"),
        ("yesterday", MON, "past"),
        ("3 days ago", MON, "past"),
        ("next month", MON, "future"),
        ("tomorrow", MON, "future"),
        ("in 3 days", MON, "future"),
        ("now", MON, "present"),
        ("right now", MON, "present"),
        ("these days", MON, "present"),
        ("for 3 years now", MON, "present"),
        ("since 2016", MON, "present"),
        ("in May", MON, "unknown"),
        ("2023-05-07", MON, "unknown"),
        ("today", MON, "unknown"),  # a period containing the anchor says nothing about before/after
        ("this week", MON, "unknown"),
        ("earlier today", MON, "past"),
        ("later this week", MON, "future"),
        ("this morning", MON, "past"),  # anchor is 13:56: the morning is over
        ("tonight", MON, "future"),
        ("on Friday", WED, "future"),
        ("on Monday", WED, "past"),
        ("this weekend", SAT, "unknown"),
        ("soon", MON, "future"),
        ("recently", MON, "past"),
        ("上周", MON, "past"),
        ("下个月", MON, "future"),
        ("今年", MON, "unknown"),
    ],
)
def test_tense(expr, anchor, tense):
    mention = resolve_expression(expr, anchor)
    assert mention is not None
    assert mention.tense == tense


# ---- find_time_mentions ------------------------------------------------------------------------------------------


def _check_spans(text: str, mentions: list[TimeMention]) -> None:
    previous_end = 0
    for mention in mentions:
        start, end = mention.span
        assert previous_end <= start < end
        assert text[start:end] == mention.original_text
        previous_end = end


def test_several_mentions_in_order_with_spans():
    text = "Yesterday I met Anna; LAST Friday we argued, and next month we travel to Rome for 2 weeks."
    mentions = find_time_mentions(text, MON)
    _check_spans(text, mentions)
    assert [m.original_text for m in mentions] == ["Yesterday", "LAST Friday", "next month"]
    assert [m.span for m in mentions] == [(0, 9), (22, 33), (49, 59)]
    assert [m.start for m in mentions] == ["2023-05-07", "2023-05-05", "2023-06"]
    assert [m.tense for m in mentions] == ["past", "past", "future"]


def test_several_chinese_mentions():
    text = "昨天我们讨论了上周五的问题，下个月再说，2024年8月3日出发。"
    mentions = find_time_mentions(text, MON)
    _check_spans(text, mentions)
    assert [m.original_text for m in mentions] == ["昨天", "上周五", "下个月", "2024年8月3日"]
    assert [m.start for m in mentions] == ["2023-05-07", "2023-05-05", "2023-06", "2024-08-03"]


def test_longest_match_wins():
    cases = {
        "We spoke the day before yesterday.": "the day before yesterday",
        "I've been vegan since last year.": "since last year",
        "I've had them for 3 years now.": "for 3 years now",
        "Let's meet this coming Friday.": "this coming Friday",
        "It was on 8 May, 2023 at 3pm.": "8 May, 2023 at 3pm",
        "He left in March 2019.": "in March 2019",
        "我们上周五见过。": "上周五",
        "他2024年8月3日出发": "2024年8月3日",
    }
    for text, expected in cases.items():
        mentions = find_time_mentions(text, MON)
        assert [m.original_text for m in mentions] == [expected], text


@pytest.mark.parametrize(
    ("text", "original", "start", "end"),
    [
        ("We're targeting a launch on Tuesday, March 3rd.", "on Tuesday, March 3rd", "2026-03-03", "2026-03-03"),
        (
            "The trip is Thursday, April 2 to Tuesday, April 7.",
            "Thursday, April 2 to Tuesday, April 7",
            "2026-04-02",
            "2026-04-07",
        ),
        ("Lisbon, Thursday March 19 to 24.", "Thursday March 19 to 24", "2026-03-19", "2026-03-24"),
        ("On Friday, 13 March we fly.", "On Friday, 13 March", "2026-03-13", "2026-03-13"),
        ("Friday the 13th of March 2026 it is.", "Friday the 13th of March 2026", "2026-03-13", "2026-03-13"),
        ("See you on Tuesday.", "on Tuesday", "2025-12-30", "2025-12-30"),  # alone, the weekday rule reads it
        # A weekday and a day of the month: the anchor's month if it fits, else the nearest month where it does.
        ("Booked the hall for Friday the 30th.", "for Friday the 30th", "2026-01-30", "2026-01-30"),
        ("It was on Tuesday the 30th.", "on Tuesday the 30th", "2025-12-30", "2025-12-30"),
        ("Saturday the 3rd works.", "Saturday the 3rd", "2026-01-03", "2026-01-03"),
    ],
)
def test_a_weekday_beside_a_date_is_read_with_the_date(text, original, start, end):
    """ "on Tuesday, March 3rd" said on January 2 is in March, not next Tuesday."""
    mentions = find_time_mentions(text, FRI_NEW_YEAR)
    assert [(m.original_text, m.start, m.end) for m in mentions] == [(original, start, end)]


def test_a_weekday_and_a_day_that_never_meet_nearby_are_no_date():
    # No 31st from November 2025 to March 2026 is a Monday: the mention stays unresolved rather than
    # falling back to "on Monday" alone.
    mentions = find_time_mentions("See you on Monday the 31st.", FRI_NEW_YEAR)
    assert [(m.original_text, m.start) for m in mentions] == [("on Monday the 31st", None)]
    assert find_time_mentions("Fridays the 2nd are quiet", FRI_NEW_YEAR) == []  # a habit, no day


def test_now_inside_longer_expressions_is_not_a_separate_instant():
    assert [m.original_text for m in find_time_mentions("I moved here 3 years ago now.", MON)] == ["3 years ago now"]
    vague = find_time_mentions("I've been doing this for years now.", MON)
    assert [(m.original_text, m.precision, m.tense) for m in vague] == [("for years now", "unknown", "present")]
    assert find_time_mentions("It took one day.", MON) == []


def test_vague_expressions_are_kept_unresolved():
    text = "I moved recently, and a while ago I tried it; I'll call soon."
    mentions = find_time_mentions(text, MON)
    assert [m.original_text for m in mentions] == ["recently", "a while ago", "soon"]
    assert all((m.start, m.end, m.precision, m.basis) == UNKNOWN for m in mentions)


@pytest.mark.parametrize(
    "text",
    [
        "I have 2019 photos",
        "There were 2019 people there",
        "may I ask something?",
        "This may take a while.",
        "Step 2 may fail.",
        "March forward, soldiers!",
        "I prefer the second one.",
        "Friday is my favourite day.",
        "I go swimming on Fridays.",
        "Now, let's talk about it.",
        "Tell me as soon as possible.",
        "I lived in Paris for three years.",
        "It costs $2019.",
        "version 2019.3 is out",
        "Call 555-2019 for info",
        "他出现在门口",
        "一周一次",
        "每周五去游泳",
        "这个月饼很好吃",
        "这周围很安静",
        "坐3号线",
        "过去年轻的时候",
        "后天性疾病",
    ],
)
def test_non_time_text_yields_nothing(text):
    resolved = [m for m in find_time_mentions(text, MON) if m.precision != "unknown"]
    assert resolved == [], text


def test_year_needs_context():
    assert [m.original_text for m in find_time_mentions("I was born in 1990.", MON)] == ["in 1990"]
    mentions = find_time_mentions("It ran between 2019 and 2021, the class of 2018.", MON)
    assert [m.start for m in mentions] == ["2019", "2021", "2018"]
    assert [m.original_text for m in find_time_mentions("The best year was 2019.", MON)] == ["2019"]


def test_capitalised_may_is_a_month():
    mentions = find_time_mentions("This May we moved; May 7th was the day.", MON)
    assert [(m.original_text, m.start) for m in mentions] == [("This May", "2023-05"), ("May 7th", "2023-05-07")]


def test_for_duration_needs_a_present_perfect_cue():
    anchored = find_time_mentions("I've had them for three years.", MON)
    assert [(m.original_text, m.start, m.end) for m in anchored] == [("for three years", "2020", "2023-05-08")]
    assert find_time_mentions("She has worked there for a couple of months", MON)[0].start == "2023-03"
    assert find_time_mentions("I have to stay for two weeks.", MON) == []
    assert find_time_mentions("I had a dog. I kept it for two years.", MON) == []


def test_clock_time_after_a_day_makes_an_instant():
    mentions = find_time_mentions("See you tomorrow at 9:30, not today at noon.", MON)
    assert [(m.original_text, m.start, m.precision) for m in mentions] == [
        ("tomorrow at 9:30", "2023-05-09T09:30:00+02:00", "instant"),
        ("today at noon", "2023-05-08T12:00:00+02:00", "instant"),
    ]
    assert find_time_mentions("tonight at 8 p.m.", MON)[0].start == "2023-05-08T20:00:00+02:00"
    assert find_time_mentions("yesterday at 12am", MON)[0].start == "2023-05-07T00:00:00+02:00"


def test_mentions_inside_chinese_and_mixed_text():
    # English words need ASCII word boundaries only, so they are found even when glued to Chinese characters.
    mentions = find_time_mentions("我们last week去了北京，8月3日回来", MON)
    assert [m.original_text for m in mentions] == ["last week", "8月3日"]
    assert find_time_mentions("lastweek", MON) == []


def test_chinese_weekday_guards():
    def found(text: str) -> list[tuple[str, str | None]]:
        return [(m.original_text, m.start) for m in find_time_mentions(text, MON)]

    assert found("下周三回来") == [("下周三", "2023-05-17")]
    assert found("周一下午开会") == [("周一", "2023-05-08")]
    assert found("我们这周一起吃饭") == [("这周", "2023-05-08")]  # 一起 = together
    assert found("这周三个人来了") == [("这周", "2023-05-08")]  # 三个 = three of them
    assert found("周一到周五上班，星期一至星期五") == []  # a weekly schedule


# ---- the anchor's own offset -------------------------------------------------------------------------------------


def test_anchor_offset_decides_the_calendar_day():
    instant = datetime(2023, 5, 7, 23, 30, tzinfo=timezone.utc)
    in_utc = resolve_expression("yesterday", instant)
    in_berlin_summer = resolve_expression("yesterday", instant.astimezone(PLUS2))  # 2023-05-08 01:30 local
    in_new_york = resolve_expression("yesterday", instant.astimezone(timezone(timedelta(hours=-4))))
    assert in_utc.start == "2023-05-06"
    assert in_berlin_summer.start == "2023-05-07"
    assert in_new_york.start == "2023-05-06"


def test_anchor_offset_changes_the_week_and_weekday():
    instant = datetime(2023, 5, 7, 22, 30, tzinfo=timezone.utc)  # Sunday in UTC, Monday in +08:00
    utc = find_time_mentions("last week, 上周五", instant)
    shanghai = find_time_mentions("last week, 上周五", instant.astimezone(timezone(timedelta(hours=8))))
    assert [m.start for m in utc] == ["2023-04-24", "2023-04-28"]
    assert [m.start for m in shanghai] == ["2023-05-01", "2023-05-05"]


def test_instants_keep_the_anchor_offset():
    anchor = datetime(2023, 5, 8, 13, 56, 42, 123456, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))
    now = resolve_expression("now", anchor)
    assert now.start == "2023-05-08T13:56:42-05:30"
    assert resolve_expression("today at 3pm", anchor).start == "2023-05-08T15:00:00-05:30"


def test_naive_anchor_is_rejected():
    with pytest.raises(ValueError):
        find_time_mentions("yesterday", datetime(2023, 5, 8, 12, 0))
    with pytest.raises(ValueError):
        resolve_expression("yesterday", datetime(2023, 5, 8, 12, 0))


# ---- resolve_expression ------------------------------------------------------------------------------------------


def test_resolve_expression_requires_one_whole_expression():
    assert resolve_expression("I went there yesterday", MON) is None
    assert resolve_expression("yesterday and today", MON) is None
    assert resolve_expression("hello", MON) is None
    assert resolve_expression("Friday", MON) is None  # bare weekday: too ambiguous
    assert resolve_expression("", MON) is None
    padded = resolve_expression("  last week. ", MON)
    assert padded is not None
    assert (padded.original_text, padded.span) == ("last week", (2, 11))


# ---- properties --------------------------------------------------------------------------------------------------

_OFFSETS = st.integers(min_value=-12 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
_ANCHORS = st.builds(
    lambda moment, tz: moment.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2090, 12, 31)),
    _OFFSETS,
)


@settings(max_examples=200, deadline=None)
@given(_ANCHORS)
def test_relative_days_and_weeks_follow_the_anchor_calendar(anchor):
    today = anchor.date()
    assert resolve_expression("yesterday", anchor).start == (today - timedelta(days=1)).isoformat()
    assert resolve_expression("明天", anchor).start == (today + timedelta(days=1)).isoformat()
    week = resolve_expression("last week", anchor)
    monday = datetime.fromisoformat(week.start).date()
    sunday = datetime.fromisoformat(week.end).date()
    assert monday.weekday() == 0 and (sunday - monday).days == 6
    assert 1 <= (today - sunday).days <= 7
    friday = datetime.fromisoformat(resolve_expression("last Friday", anchor).start).date()
    assert monday <= friday <= sunday and friday.weekday() == 4
    month = resolve_expression("in May", anchor).start
    distance = (int(month[:4]) * 12 + int(month[5:])) - (today.year * 12 + today.month)
    assert month.endswith("-05") and -5 <= distance <= 6


_TOKENS = st.sampled_from(
    [
        "yesterday",
        "last",
        "next",
        "week",
        "Friday",
        "in",
        "May",
        "7th",
        "2019",
        "2023-05-07",
        "ago",
        "3",
        "days",
        "for",
        "years",
        "now",
        "since",
        "the",
        "of",
        "a",
        "few",
        "summer",
        "Q3",
        "at",
        "3pm",
        ",",
        ".",
        "上周五",
        "昨天",
        "3号",
        "8月",
        "2024年",
        "个月前",
        "两",
        "周",
        "十",
        "三",
        "天前",
        "I've",
        "had",
        "them",
        "soon",
        "one",
        "day",
        "this",
        "weekend",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=12), _ANCHORS)
def test_random_text_gives_well_formed_mentions(tokens, anchor):
    text = " ".join(tokens)
    mentions = find_time_mentions(text, anchor)
    _check_spans(text, mentions)
    for mention in mentions:
        assert mention.precision in {"instant", "day", "month", "year", "range", "unknown"}
        assert mention.basis in {"explicit", "relative", "unknown"}
        assert mention.tense in {"past", "future", "present", "unknown"}
        if mention.precision == "unknown":
            assert mention.start is None and mention.end is None and mention.basis == "unknown"
        else:
            assert mention.start is not None and mention.end is not None
            assert mention.start[:10] <= mention.end[:10] or mention.precision == "range"
        if mention.precision != "range":
            assert mention.start == mention.end


def test_prefilter_passes_every_expression_in_the_table():
    from core.timeparse import might_contain_time

    missed = [case[0] for case in CASES if not might_contain_time(case[0])]
    assert missed == []


def _needs_han(items) -> bool:
    """Whether every match of a parsed pattern (re._parser items) consumes a CJK character."""
    import re._constants as c

    def han(ch: int) -> bool:
        return 0x3400 <= ch <= 0x9FFF

    for op, arg in items:
        if op is c.LITERAL and han(arg):
            return True
        if (
            op is c.IN
            and arg
            and arg[0][0] is not c.NEGATE
            and all((kind is c.LITERAL and han(v)) or (kind is c.RANGE and han(v[0]) and han(v[1])) for kind, v in arg)
        ):
            return True
        if op is c.SUBPATTERN and _needs_han(arg[3]):
            return True
        if op is c.BRANCH and all(_needs_han(branch) for branch in arg[1]):
            return True
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) and arg[0] >= 1 and _needs_han(arg[2]):
            return True
    return False


def test_chinese_rules_need_a_cjk_character():
    """Text without a CJK character skips the Chinese rules; that is exact only if each of
    them cannot match without one (checked on the parsed pattern, not on examples)."""
    import re._parser as parser

    from core.timeparse import _RULES

    chinese = [rule for rule in _RULES if rule.chinese]
    assert len(chinese) >= 10
    for rule in chinese:
        assert _needs_han(parser.parse(rule.pattern.pattern)), rule.name
    # the check can fail: an English rule does not need one
    assert not any(_needs_han(parser.parse(rule.pattern.pattern)) for rule in _RULES if not rule.chinese)


def _every_rule_scan(text: str) -> list[tuple[str, tuple[int, int]]]:
    from core.timeparse import _RULES, _rule_matches

    return sorted(
        (rule.name, m.span()) for rule in _RULES if not rule.whole_only for m in _rule_matches(rule, text, None)
    )


def _start_guided_scan(text: str) -> list[tuple[str, tuple[int, int]]]:
    from core.timeparse import _RULES, _english_positions, _rule_matches

    starts = _english_positions(text)
    return sorted(
        (rule.name, m.span())
        for rule in _RULES
        if not rule.whole_only
        for m in _rule_matches(rule, text, None if rule.chinese else starts)
    )


def test_start_guided_scan_equals_every_rule_scanning_the_text():
    import json

    from core.demo import demo_source

    texts = [f"We said {c[0]}, then {c[0]}." for c in CASES]
    texts += [
        json.loads(line).get("content") or ""
        for line in demo_source().read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    texts += [t.upper() for t in texts] + [t.replace("s", "\u017f") for t in texts[:40]]
    texts += [
        "2023-05-07/2023-05-08 and 2024.1.2 then since May 3rd, 2021 about 3 weeks ago",
        "last Friday or next fri; the 3rd of May 2022 vs May 3 2022-05 around 10 days back",
    ]
    hits = 0
    for text in texts:
        expected = _every_rule_scan(text)
        assert _start_guided_scan(text) == expected, text
        hits += len(expected)
    assert hits > len(CASES)  # the corpus does contain time expressions


_TIME_WORDS = st.sampled_from(
    [
        "last",
        "next",
        "this",
        "May",
        "march",
        "3rd",
        "2023",
        "12",
        "weeks",
        "ago",
        "in",
        "ſince",
        "LAST WEEK",
        "Q3 2024",
        "\u212aept",
        "İn",
        "MONDAY",
        "the",
        "of",
        "since",
        "for",
        "about",
        "Friday",
        "weekend",
        "/",
        "-",
        ".",
        ",",
        "now",
        "today",
        "years",
        "spring",
        "Q3",
        "1990s",
        "a",
        "few",
        "days",
        "昨天",
        "3月",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TIME_WORDS, max_size=14), st.sampled_from([" ", "", "  "]))
def test_start_guided_scan_equals_full_scan_on_random_text(words, sep):
    text = sep.join(words)
    assert _start_guided_scan(text) == _every_rule_scan(text)


def test_a_day_range_needs_a_later_last_day():
    """'May 3-2' is a score, not days; 'March 5:30' a time."""
    anchor = at("2026-01-20 21:30")
    assert not find_time_mentions("the score was May 3-2", anchor)
    assert [m.original_text for m in find_time_mentions("March 5-7 then", anchor)] == ["March 5-7"]
