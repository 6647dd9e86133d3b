"""`strata bench workers`: one worker against N on copies of one store, timed, memory compared."""

from __future__ import annotations

import json

import pytest

from tests.core.test_ingest import two_conversations, write_json
from workbench.cli import main


@pytest.mark.sqlite_only(reason="the bench builds SQLite files in its workdir")
def test_the_bench_times_both_runs_and_finds_the_same_memory(tmp_path, capsys):
    data = write_json(tmp_path / "locomo.json", two_conversations())
    assert main(["bench", "workers", "--data", str(data), "--workdir", str(tmp_path / "work"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["same_memory"] and report["differing_namespaces"] == []
    assert report["conversations"] == 2 and report["one_worker_s"] > 0 and report["workers_s"] > 0
    assert report["speedup"] == pytest.approx(report["one_worker_s"] / report["workers_s"], abs=0.05)


@pytest.mark.sqlite_only(reason="the bench builds SQLite files in its workdir")
def test_other_memory_from_the_second_run_fails_the_bench(tmp_path, capsys, monkeypatch):
    import core.bench.workers as bench

    calls = []
    real = bench._memory

    def second_differs(url):
        memory = real(url)
        calls.append(url)
        if len(calls) == 2:
            memory["conv-b"] = {"events": ["something else"]}
        return memory

    monkeypatch.setattr(bench, "_memory", second_differs)
    data = write_json(tmp_path / "locomo.json", two_conversations())
    assert main(["bench", "workers", "--data", str(data), "--workdir", str(tmp_path / "work")]) == 1
    assert "DIFFERENT memory in conv-b" in capsys.readouterr().out
