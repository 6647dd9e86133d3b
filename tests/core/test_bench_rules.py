"""The rules corpus and `strata bench rules`: the corpus is well formed, the scoring counts what it
says it counts, the command prints every family, and no family falls below its baseline."""

from __future__ import annotations

import json

import pytest

from core.bench.rules import (
    BASELINE,
    CORPUS,
    FAMILIES,
    CaseResult,
    CorpusError,
    Derived,
    aggregate,
    below_baseline,
    load_baseline,
    load_corpus,
    parse_case,
    run_rules,
    score_case,
)
from workbench.cli import main


@pytest.fixture(scope="module")
def report():
    return run_rules()


# ----------------------------------------------------------------------------- the corpus


def test_the_corpus_parses_and_covers_every_family_in_both_languages():
    cases = load_corpus()
    assert len(cases) >= 150
    assert sum(c.lang == "zh" for c in cases) >= 0.2 * len(cases)
    for family in FAMILIES:
        carrying = [c for c in cases if family in c.families()]
        assert len(carrying) >= 15, family
    for family in ("type", "time", "participants", "non_persons", "facts", "supersessions"):
        assert any(c.lang == "zh" for c in cases if family in c.families()), family
    assert len({c.id for c in cases}) == len(cases)
    assert (CORPUS / "README.md").is_file()


def _corpus(tmp_path, *lines: str):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


GOOD = json.dumps(
    {
        "id": "type-en-001",
        "lang": "en",
        "date": "2023-05-08T14:00:00",
        "turns": [{"speaker": "Ann", "text": "We decided to move."}],
        "expect": {"type": "decision"},
    }
)


@pytest.mark.parametrize(
    "line, said",
    [
        ("{not json", "not valid JSON"),
        (GOOD.replace('"decision"', '"decided"'), "type must be one of"),
        (GOOD.replace('"speaker": "Ann", ', ""), "turn 1 needs a speaker and a text"),
        (GOOD.replace('"lang": "en"', '"lang": "fr"'), "lang must be one of"),
        (GOOD.replace('"date": "2023-05-08T14:00:00"', '"date": "May 8"'), "is not an ISO date"),
        (GOOD.replace('{"type": "decision"}', "{}"), "expect must name at least one expectation"),
        (
            GOOD.replace('{"type": "decision"}', '{"facts": [["Ann", "lives_in"]]}'),
            "a fact is [subject, relation, value]",
        ),
        (GOOD.replace('{"type": "decision"}', '{"supersedes": [[1, 2]]}'), "[later turn, earlier turn]"),
        (GOOD.replace('{"type": "decision"}', '{"time": {"start": "soon", "precision": "day"}}'), "time start"),
        (GOOD.replace('{"type": "decision"}', '{"not_people": {"planet": ["Mars"]}}'), "not_people maps a kind"),
        (GOOD.replace('"expect"', '"expected"'), "unknown field(s) expected"),
    ],
)
def test_a_malformed_line_is_an_error_naming_its_file_and_line(tmp_path, line, said):
    folder = _corpus(tmp_path, GOOD.replace("001", "000"), "// a comment", line)
    with pytest.raises(CorpusError) as caught:
        load_corpus(folder)
    assert "bad.jsonl:3" in str(caught.value) and said in str(caught.value)


def test_an_id_used_twice_is_an_error_naming_both_lines(tmp_path):
    with pytest.raises(CorpusError, match=r"bad.jsonl:2: id type-en-001 already used at bad.jsonl:1"):
        load_corpus(_corpus(tmp_path, GOOD, GOOD))


# ----------------------------------------------------------------------------- the arithmetic


def test_precision_and_recall_are_summed_over_cases_then_divided():
    one = CaseResult("a", "facts", "en")
    one.count("lives_in", tp=2, fp=1)  # said 3, two right
    one.count("uses", fn=1)  # expected one more
    two = CaseResult("b", "facts", "zh")
    two.count("lives_in", tp=1)
    three = CaseResult("c", "type", "en")
    three.count("plan", fn=1)  # no card
    families = aggregate([one, two, three])
    facts = families["facts"]
    assert (facts.cases, facts.correct) == (2, 1)
    assert (facts.score.tp, facts.score.fp, facts.score.fn) == (3, 1, 1)
    assert facts.score.precision == 0.75 and facts.score.recall == 0.75
    assert facts.kinds["lives_in"].precision == 0.75 and facts.kinds["lives_in"].recall == 1.0
    assert facts.kinds["uses"].precision is None and facts.kinds["uses"].recall == 0.0
    assert facts.langs["zh"].precision == 1.0 and facts.langs["en"].recall == round(2 / 3, 3)
    assert [f["id"] for f in facts.failures] == ["a"]
    assert families["type"].score.precision is None and families["type"].score.recall == 0.0
    assert families["time"].cases == 0


def _case(expect, turns=(("Ann", "text"),)):
    return parse_case(
        {
            "id": "x",
            "lang": "en",
            "date": "2023-05-08T14:00:00",
            "turns": [{"speaker": s, "text": t} for s, t in turns],
            "expect": expect,
        },
        "t.jsonl",
        1,
    )


def test_participants_are_sets_of_people_and_a_name_may_have_spellings():
    case = _case({"participants": ["Ann", ["Dr. Patel", "Patel"], "Tom"]})
    derived = Derived(
        cards=[
            {"id": 1, "turn": 1, "sources": [1], "participants": ["Ann", "Patel", "Lisbon", "Bo"], "supersedes": []}
        ],
        persons={"patel", "bo"},
    )
    [result] = score_case(case, derived)
    score = result.score
    # Ann (a speaker) and Patel right; Bo is a person nobody expected; Tom is missing; Lisbon is no person
    assert (score.tp, score.fp, score.fn) == (2, 1, 1)
    assert "participants: also Bo" in result.problems and "participants: missing Tom" in result.problems


def test_facts_match_normalised_values_symmetric_relations_and_ended_slots():
    case = _case(
        {"facts": [["Ann", "lives_in", "Lisbon"], ["Bo", "sibling_of", "Ann"]], "ends": [["Ann", "lives_in", "Berlin"]]}
    )
    derived = Derived(
        records=[
            ("Ann", "lives_in", "the Lisbon", "active", 2),
            ("Ann", "sibling_of", "Bo", "active", 1),  # read either way
            ("Ann", "lives_in", "Berlin", "active", 1),  # older value of a one-at-a-time slot: ended by Lisbon
            ("Ann", "knows", "Bo", "active", 1),  # not scored
            ("Ann", "likes", "tea", "active", 1),  # not expected
        ]
    )
    facts, ends = score_case(case, derived)
    assert (facts.score.tp, facts.score.fp, facts.score.fn) == (2, 2, 0)  # Berlin is no current fact here
    assert (ends.score.tp, ends.score.fp, ends.score.fn) == (1, 0, 0)


def test_a_case_expecting_no_time_counts_a_dated_card_against_precision():
    case = _case({"time": None})
    dated = Derived(
        cards=[
            {
                "id": 1,
                "turn": 1,
                "sources": [1],
                "start": "2023-05-01",
                "precision": "range",
                "participants": [],
                "supersedes": [],
            }
        ]
    )
    [result] = score_case(case, dated)
    assert (result.score.tp, result.score.fp, result.score.fn) == (0, 1, 0)
    [result] = score_case(case, Derived(cards=[{**dated.cards[0], "start": None, "precision": "unknown"}]))
    assert result.correct


# ----------------------------------------------------------------------------- the run and the command


def test_the_run_is_fast_deterministic_and_scores_every_family(report):
    assert report.seconds < 20
    assert set(report.families) == set(FAMILIES)
    assert all(fam.cases > 0 for fam in report.families.values())
    again = run_rules()
    assert again.correct_counts() == report.correct_counts()
    assert {n: f.failures for n, f in again.families.items()} == {n: f.failures for n, f in report.families.items()}


def test_no_family_falls_below_its_baseline(report):
    baseline = load_baseline()
    assert set(baseline) == set(FAMILIES)
    fallen = below_baseline(report, baseline)
    failing = {name: [f["id"] for f in report.families[name].failures] for name in fallen}
    assert not fallen, (
        f"fewer correct cases than {BASELINE.name} records: "
        + "; ".join(
            f"{name} {now} < {floor} (failing now: {', '.join(failing[name])})" for name, (now, floor) in fallen.items()
        )
        + ". Run `strata bench rules --failures` to see what broke. When a change improves a family instead, "
        "record it with `strata bench rules --update-baseline`."
    )


def test_strata_bench_rules_prints_every_family_and_the_failures(tmp_path, capsys):
    out = tmp_path / "rules.json"
    assert main(["bench", "rules", "--failures", "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    for family in FAMILIES:
        assert family in printed
    report = json.loads(out.read_text())
    assert report["benchmark"] == "rules" and set(report["families"]) == set(FAMILIES)
    failing = [f["id"] for fam in report["families"].values() for f in fam["failures"]]
    assert failing and all(case_id in printed for case_id in failing)


def test_strata_bench_rules_json_and_one_family(capsys):
    assert main(["bench", "rules", "--json", "--family", "type,facts"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["families"]) == {"type", "facts"}
    assert {"precision", "recall", "cases", "correct", "kinds", "failures"} <= set(report["families"]["type"])
    with pytest.raises(SystemExit):
        main(["bench", "rules", "--family", "colour"])
    assert "--family: choose from" in capsys.readouterr().err


def test_update_baseline_refuses_a_partial_run(capsys):
    assert main(["bench", "rules", "--update-baseline", "--family", "type"]) == 2
    assert "only for the whole default corpus" in capsys.readouterr().err
