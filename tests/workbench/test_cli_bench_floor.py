"""`strata bench derive-floor` prints both builds side by side and writes its report."""

from __future__ import annotations

import json

import pytest

from core.db import db
from workbench.cli import main


@pytest.mark.sqlite_only(reason="the benchmark builds and measures SQLite files in its workdir")
def test_derive_floor_prints_both_builds_and_writes_the_report(tmp_path, capsys):
    out = tmp_path / "floor.json"
    try:
        code = main(
            ["bench", "derive-floor", "--messages", "200", "--workdir", str(tmp_path / "work"), "--json-out", str(out)]
        )
    finally:
        if db.obj is not None and not db.is_closed():
            db.close()
    printed = capsys.readouterr()
    assert code == 0, printed.err
    table = " ".join(printed.out.split())
    assert "rules run" in table and "rules replayed" in table and "offline rules s" in table
    report = json.loads(out.read_text())
    assert report["benchmark"] == "derive-floor" and report["messages"] == 200
    assert report["with_rules"]["derive_s"] >= report["rules_s"] > 0
    assert (tmp_path / "work" / "floor-200-replay.db").exists()


def test_a_workdir_that_is_a_file_is_refused_before_any_build(tmp_path, capsys):
    taken = tmp_path / "notes.txt"
    taken.write_text("keep me")
    for argv in (["bench", "derive-floor", "--messages", "200"], ["bench", "scale", "--messages", "100"]):
        assert main([*argv, "--workdir", str(taken)]) == 2
        assert "is not a directory" in capsys.readouterr().err
    assert taken.read_text() == "keep me" and list(tmp_path.iterdir()) == [taken]
