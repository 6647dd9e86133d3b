"""`strata bench window`: case files are checked line by line, each case runs on the real path,
and every ablation is reported."""

from __future__ import annotations

import json

import pytest

from core.bench.window import bundled_cases, load_cases, run_case, run_window_bench
from core.errors import InvalidInputError


def _write(path, *cases):
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    return path


SIBLINGS = {
    "id": "siblings",
    "memories": [
        {"role": "user", "content": "The Cedar service port is 8247.", "created_at": "2026-03-02T09:00:00Z"},
        {"role": "assistant", "content": "Noted.", "created_at": "2026-03-02T09:00:00Z"},
        {"role": "user", "content": "The Maple service port is 6389.", "created_at": "2026-03-03T09:00:00Z"},
        {"role": "assistant", "content": "Ok.", "created_at": "2026-03-03T09:00:00Z"},
    ],
    "query": "What is the current Cedar service port?",
    "expected": ["8247"],
    "unexpected": ["6389"],
}


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "cases.jsonl:2: invalid JSON"),
        ("[1, 2]", "cases.jsonl:2: a case is a JSON object"),
        (json.dumps({**SIBLINGS, "memories": []}), "memories must be a list"),
        (json.dumps({**SIBLINGS, "memories": [{"role": "system", "content": "x"}]}), "memories\\[0\\] needs role"),
        (json.dumps({**SIBLINGS, "query": ""}), "query must be non-empty"),
        (json.dumps({**SIBLINGS, "expected": "8247"}), "expected: expected a list"),
        (json.dumps({**SIBLINGS, "budget": 10}), "budget: expected an integer 64-100000"),
        (json.dumps({**SIBLINGS, "priming": [{"use": ["x"]}]}), "priming\\[0\\] needs a query"),
    ],
)
def test_a_bad_case_line_names_the_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({**SIBLINGS, "id": "first"}) + "\n" + line + "\n")
    with pytest.raises(InvalidInputError, match=message):
        load_cases(path)


def test_repeated_ids_and_empty_files_are_refused(tmp_path):
    with pytest.raises(InvalidInputError, match="repeats an earlier line"):
        load_cases(_write(tmp_path / "twice.jsonl", SIBLINGS, SIBLINGS))
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InvalidInputError, match="no cases"):
        load_cases(tmp_path / "empty.jsonl")


def test_the_bundled_cases_load_and_cover_both_languages():
    cases = [c for path in bundled_cases() for c in load_cases(path)]
    ids = {c.id for c in cases}
    for family in ("single-correction", "history", "multiple-corrections", "similar-entity", "conditional-no-op"):
        assert {f"{family}-en", f"{family}-zh"} <= ids
    assert any(c.priming for c in cases)


def test_a_case_hits_only_when_the_expected_is_handed_over_and_the_stale_is_not(tmp_path):
    [case] = load_cases(_write(tmp_path / "c.jsonl", SIBLINGS))
    full = run_case(case, "full", tmp_path / "full.db")
    assert full.hit and full.selected == 1 and not full.stale
    loose = run_case(case, "no_hygiene", tmp_path / "loose.db")
    assert not loose.hit and loose.stale == ["6389"]


def test_the_report_has_one_run_per_ablation(tmp_path):
    cases = load_cases(_write(tmp_path / "c.jsonl", SIBLINGS))
    seen = []
    report = run_window_bench(cases, ("full", "no_hygiene"), progress=lambda d, t, label: seen.append((d, t)))
    assert [r["ablation"] for r in report["runs"]] == ["full", "no_hygiene"]
    assert report["runs"][0]["hit_rate"] == 1.0 and report["runs"][1]["hit_rate"] == 0.0
    assert report["runs"][1]["misses"] == [{"id": "siblings", "missing": [], "stale": ["6389"]}]
    assert report["full_is_best"] is True
    assert seen[-1] == (2, 2)
    with pytest.raises(InvalidInputError, match="unknown ablation"):
        run_window_bench(cases, ("bm25",))


def test_the_command_prints_each_ablation_and_writes_json(tmp_path, capsys, cli_without_strata_db):
    from workbench.cli import main

    cases = _write(tmp_path / "c.jsonl", SIBLINGS)
    out = tmp_path / "window.json"
    argv = ["bench", "window", "--cases", str(cases), "--ablation", "full", "--ablation", "no_hygiene"]
    assert main([*argv, "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "no_hygiene missed: siblings" in printed and "full is at least as good" in printed
    data = json.loads(out.read_text())
    assert [r["ablation"] for r in data["runs"]] == ["full", "no_hygiene"]
    assert data["case_files"] == [str(cases)]
    (tmp_path / "bad.jsonl").write_text("{oops\n")
    assert main(["bench", "window", "--cases", str(tmp_path / "bad.jsonl")]) != 0
    assert "bad.jsonl:1: invalid JSON" in capsys.readouterr().err
