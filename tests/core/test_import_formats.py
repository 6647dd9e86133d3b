"""Import formats: the strict v2 parser, Mem0 exports, text lists, limits and locations."""

from __future__ import annotations

import json

import pytest

from core.imports.formats import (
    MAX_BYTES,
    ImportFormatError,
    parse_import,
    read_import_file,
    strip_fences,
)
from core.imports.prompt import export_prompt
from core.text import fingerprint


def doc(*candidates, **top):
    body = {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "sourceSystem": "OtherAI",
        "candidates": list(candidates),
    }
    body.update(top)
    return json.dumps(body)


def cand(**fields):
    return {"title": "Maya's home", "summary": "Maya lives in Lisbon.", **fields}


def rejected(text, fmt="v2"):
    with pytest.raises(ImportFormatError) as info:
        parse_import(text, fmt, where="export.json")
    return str(info.value)


# ----------------------------------------------------------------------------- v2


def test_valid_v2_is_normalised():
    parsed = parse_import(
        doc(
            cand(
                category="identity",
                memoryKind="fact",
                tags=["home", "home", "city"],
                quotes=["I live in Lisbon"],
                temporal={
                    "mentionedAt": "2024-05-02",
                    "happenedStart": "2019",
                    "precision": "year",
                    "basis": "explicit",
                    "participants": ["Maya"],
                    "eventType": "Release",
                    "originalText": "since 2019",
                },
                scope="user",
                criticality="identity",
                confidence=1.7,
            ),
            exportedAt="2025-01-01",
            coverage="partial",
        )
    )
    assert parsed.format == "v2" and parsed.source_system == "OtherAI" and parsed.exported_at == "2025-01-01"
    c = parsed.candidates[0]
    assert c["tags"] == ["identity", "home", "city"]  # category prepended, duplicates dropped
    assert c["confidence"] == 1.0  # clamped
    t = c["temporal"]
    assert (t["happened_start"], t["precision"], t["basis"], t["event_type"]) == ("2019", "year", "explicit", "release")
    assert t["participants"] == ["Maya"] and t["mentioned_at"] == "2024-05-02"
    assert parsed.coverage == "partial" and not parsed.warnings


def test_code_fences_are_stripped_and_v1_and_legacy_events_accepted():
    fenced = "```json\n" + doc(cand()) + "\n```"
    assert parse_import(fenced).candidates[0]["title"] == "Maya's home"
    assert strip_fences("```\n{}\n```") == "{}"
    legacy = json.dumps(
        {
            "schemaVersion": "stratagate.external-memory.v1",
            "sourceType": "external_ai_memory_export",
            "events": [cand()],
        }
    )
    assert len(parse_import(legacy).candidates) == 1


def test_unknown_precision_drops_happened_dates():
    parsed = parse_import(
        doc(
            cand(temporal={"happenedStart": "2024-03-01", "precision": "unknown"}),
            cand(title="b", temporal={"happenedStart": "2024-03", "precision": "fortnight"}),
        )
    )
    for c in parsed.candidates:
        assert "happened_start" not in c["temporal"] and c["temporal"]["precision"] == "unknown"
    assert any("precision" in w for w in parsed.warnings)


def test_unknown_enum_values_are_dropped_with_a_warning():
    parsed = parse_import(doc(cand(memoryKind="rumour", category="gossip", scope="galaxy", criticality="urgent")))
    c = parsed.candidates[0]
    assert "memory_kind" not in c and "category" not in c and c["scope"] == "user" and c["criticality"] == "routine"
    assert len(parsed.warnings) == 4 and "memoryKind" in parsed.warnings[0]


@pytest.mark.parametrize(
    "text, where",
    [
        ("not json at all", "export.json: not JSON at line 1 column 1"),
        ('{"schemaVersion": "stratagate.external-memory.v2",', "not JSON at line 1"),
        ("[1, 2]", "the top level must be a JSON object"),
    ],
)
def test_not_json_is_rejected_with_its_location(text, where):
    error = rejected(text)
    assert where in error


def test_wrong_schema_version_and_source_type_are_rejected():
    assert "schemaVersion" in rejected(doc(cand(), schemaVersion="v3")) and "'v3'" in rejected(
        doc(cand(), schemaVersion="v3")
    )
    assert "sourceType" in rejected(doc(cand(), sourceType="chat_log"))
    error = rejected(json.dumps({"sourceType": "external_ai_memory_export", "candidates": []}))
    assert "schemaVersion" in error and "None" in error


def test_candidate_count_limit():
    ok = [cand(title=f"fact {i}") for i in range(200)]
    assert len(parse_import(doc(*ok)).candidates) == 200
    error = rejected(doc(*ok, cand()))
    assert "201 candidates" in error and "at most 200" in error


def test_file_over_four_megabytes_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.json"
    big.write_text(doc(cand()) + " " * MAX_BYTES, encoding="utf-8")
    with pytest.raises(ImportFormatError, match="at most 4,000,000 bytes"):
        read_import_file(big)
    with pytest.raises(ImportFormatError, match="4 MB"):
        parse_import(doc(cand()) + " " * MAX_BYTES)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("title", None, "candidates[1].title: required"),
        ("title", "   ", "candidates[1].title: required"),
        ("title", 12, "candidates[1].title: expected a string"),
        ("title", "x" * 161, "candidates[1].title: 161 characters, at most 160"),
        ("summary", None, "candidates[1].summary: required"),
        ("narrative", "x" * 8001, "candidates[1].narrative: 8001 characters"),
        ("confidence", "high", "candidates[1].confidence: expected a number between 0 and 1, got 'high'"),
        ("confidence", True, "candidates[1].confidence"),
        ("tags", "a,b", "candidates[1].tags: expected a list of strings"),
        ("tags", [f"t{i}" for i in range(13)], "candidates[1].tags: 13 items, at most 12"),
        ("quotes", ["q", 3], "candidates[1].quotes[1]: expected a string"),
        ("temporal", [], "candidates[1].temporal: expected an object"),
    ],
)
def test_candidate_field_errors_name_the_field(field, value, message):
    bad = cand(title="second")
    bad[field] = value
    if value is None:
        del bad[field]
    assert message in rejected(doc(cand(), bad))


@pytest.mark.parametrize("date", ["2024-13-40", "2024-02-30", "2024-00", "next spring", "24-01-01", "2024-01-01T25:00"])
def test_invalid_dates_are_rejected_not_guessed(date):
    error = rejected(doc(cand(temporal={"happenedStart": date, "precision": "day"})))
    assert "candidates[0].temporal.happenedStart" in error and repr(date) in error
    assert "mentionedAt" in rejected(doc(cand(temporal={"mentionedAt": date})))
    assert "exportedAt" in rejected(doc(cand(), exportedAt=date))


@pytest.mark.parametrize("date", ["2024", "2024-02", "2024-02-29", "2024-02-29T10:00:00Z", "2024-02-29T10:00:00+05:30"])
def test_valid_dates_at_their_own_precision(date):
    parsed = parse_import(doc(cand(temporal={"happenedStart": date, "precision": "day"})))
    assert parsed.candidates[0]["temporal"]["happened_start"] == date


def test_end_before_start_is_rejected():
    error = rejected(doc(cand(temporal={"happenedStart": "2024-05", "happenedEnd": "2023", "precision": "range"})))
    assert "happenedEnd '2023' is before happenedStart '2024-05'" in error


def test_null_fields_count_as_absent_and_snake_case_is_accepted():
    parsed = parse_import(
        doc(cand(narrative=None, tags=None, temporal={"mentioned_at": "2024-01-01", "happenedEnd": None}))
    )
    assert parsed.candidates[0]["temporal"]["mentioned_at"] == "2024-01-01"
    assert "two spellings" not in rejected(doc(cand(temporal={"mentionedAt": "2024", "mentioned_at": "2025"})))
    assert "use one" in rejected(doc(cand(temporal={"mentionedAt": "2024", "mentioned_at": "2025"})))


def test_fingerprint_ignores_case_width_punctuation_and_spacing():
    assert fingerprint("Maya's Home", "Maya lives in Lisbon.") == fingerprint("maya s  home", "MAYA LIVES IN LISBON!!")
    assert fingerprint("Ｍａｙａ", "x") == fingerprint("maya", "x")
    assert fingerprint("Maya", "lives in Lisbon") != fingerprint("Maya", "lives in Porto")


# ----------------------------------------------------------------------------- mem0


def test_mem0_list_and_results_object():
    memories = [
        {
            "id": "m1",
            "memory": "Likes pizza. Especially margherita.",
            "created_at": "2024-07-26T10:29:36.630547-07:00",
            "updated_at": "2024-08-01T09:00:00-07:00",
            "categories": ["food"],
            "metadata": {"categories": ["prefs"]},
        },
        {"text": "Lives in Berlin", "metadata": None},
    ]
    for text in (json.dumps(memories), json.dumps({"results": memories}), "```json\n" + json.dumps(memories) + "\n```"):
        parsed = parse_import(text, "mem0")
        first = parsed.candidates[0]
        assert parsed.format == "mem0" and first["title"] == "Likes pizza" and first["summary"].endswith("margherita.")
        assert first["tags"] == ["food", "prefs"] and first["external_id"] == "m1"
        assert first["temporal"]["mentioned_at"] == "2024-08-01T09:00:00-07:00"
        assert parsed.candidates[1]["summary"] == "Lives in Berlin" and parsed.candidates[1]["temporal"] == {}


def test_mem0_errors_name_the_memory():
    assert "[1].memory: required" in rejected(json.dumps([{"memory": "a"}, {"memory": ""}]), "mem0")
    assert "[0].created_at" in rejected(json.dumps([{"memory": "a", "created_at": "2024-13-40"}]), "mem0")
    assert "[0].metadata: expected an object" in rejected(json.dumps([{"memory": "a", "metadata": [1]}]), "mem0")
    assert "results" in rejected(json.dumps({"items": []}), "mem0")
    assert "201 candidates" in rejected(json.dumps([{"memory": f"m{i}"} for i in range(201)]), "mem0")
    assert "not JSON" in rejected("Likes pizza", "mem0")


def test_long_memory_keeps_its_full_text_as_narrative():
    long = "Maya " + "really " * 400 + "likes tea."
    c = parse_import(json.dumps([{"memory": long}]), "mem0").candidates[0]
    assert len(c["title"]) <= 160 and len(c["summary"]) <= 2000 and c["narrative"] == " ".join(long.split())


# ----------------------------------------------------------------------------- text


def test_text_bullets_with_continuations_and_prose_around():
    text = """# What I know about you

Here is a summary:
- Lives in Lisbon
  with a partner called Jo.
* Works at Acme
1. Plays the cello
2) [x] Prefers tea
```
"""
    parsed = parse_import(text, "text")
    assert [c["summary"] for c in parsed.candidates] == [
        "Lives in Lisbon with a partner called Jo.",
        "Works at Acme",
        "Plays the cello",
        "Prefers tea",
    ]
    assert parsed.warnings and "skipped" in parsed.warnings[0]


def test_text_without_bullets_is_one_fact_per_line():
    parsed = parse_import("Lives in Lisbon\n\nWorks at Acme\n", "text")
    assert [c["title"] for c in parsed.candidates] == ["Lives in Lisbon", "Works at Acme"]


def test_text_limits():
    assert "no facts found" in rejected("\n\n# heading only\n", "text")
    assert "201 candidates" in rejected("\n".join(f"- fact {i}" for i in range(201)), "text")
    assert "line 2: 8001 characters" in rejected("- ok\n- " + "x" * 8001, "text")


def test_unknown_format_is_an_error():
    with pytest.raises(Exception, match="unknown import format 'csv'"):
        parse_import("x", "csv")


def test_export_prompt_asks_for_the_v2_shape_in_our_words():
    prompt = export_prompt()
    for needle in (
        "stratagate.external-memory.v2",
        "external_ai_memory_export",
        "candidates",
        "precision",
        "At most 200",
        "secrets",
    ):
        assert needle in prompt


@pytest.mark.parametrize("fmt", ["v2", "mem0", "text"])
def test_text_that_is_not_utf8_is_refused_in_every_format(fmt):
    """Bytes that were not UTF-8 reach a caller as lone surrogates (surrogateescape): refused as
    input, never a UnicodeEncodeError from measuring or hashing it."""
    text = {
        "v2": '{"schemaVersion": "stratagate.external-memory.v2", "candidates": []}\udcff',
        "mem0": '[{"memory": "Maya likes tea\udce9"}]',
        "text": "- Maya likes tea \udcff",
    }[fmt]
    with pytest.raises(ImportFormatError, match="not UTF-8 text"):
        parse_import(text, fmt)
