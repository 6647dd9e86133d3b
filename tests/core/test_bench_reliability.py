"""`strata bench reliability` end to end at a tiny size: no failure on the current code, and a
planted one is seen (a bench that cannot fail proves nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.bench import reliability
from core.bench.reliability import Engine, run_fuzz, run_isolation, run_reliability
from tests.stores import TEST_DB, engine_name


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One run of every section at a tiny size (its stores stay in the workdir for the tests below)."""
    workdir = tmp_path_factory.mktemp("reliability")
    report = run_reliability(
        workdir=workdir,
        engine=engine_name(),
        server_url=TEST_DB or None,
        kills=2,
        fuzz=300,
        round_trips=3,
        turns=15,
        seed=11,
    )
    return workdir, report


def test_a_tiny_run_of_every_section_finds_no_failure(tiny):
    _, report = tiny
    assert set(report["sections"]) == set(reliability.SECTIONS)
    problems = {
        name: {f: s["examples"].get(f) for f in s["failures"]}
        for name, s in report["sections"].items()
        if s["failures"]
    }
    assert report["failures"] == 0, problems
    kills = report["sections"]["kills"]["figures"]
    assert kills["kills landed"] + kills["finished before the kill"] == 2
    fuzz = report["sections"]["fuzz"]["figures"]
    assert fuzz["inputs fuzzed"] == 300 and fuzz["MCP requests answered"] > 0
    assert report["sections"]["concurrency"]["figures"]["messages stored"] == 2 * 15 * 2
    assert report["sections"]["round_trips"]["figures"]["round trips"] == 3
    assert report["sections"]["isolation"]["figures"]["probes"] > 100


def _engine(workdir: Path) -> Engine:
    return Engine(engine_name(), workdir, TEST_DB or None)


def _derived(workdir: Path) -> str:
    if engine_name() == "sqlite":
        return f"sqlite:///{sorted(workdir.glob('derived-*.db'))[0]}"
    pytest.skip("the templates of a PostgreSQL run are dropped with it")


def test_a_probe_that_reads_the_other_namespace_is_a_leak(tiny, monkeypatch):
    workdir, _ = tiny
    # Probing "from" the secret namespace itself: everything it returns is the other side's.
    monkeypatch.setattr(reliability, "CHAT", reliability.SECRET)
    engine = _engine(workdir)
    try:
        section = run_isolation(engine, _derived(workdir), None)
    finally:
        engine.close()
    assert section.figures["leaks"] > 0 and section.failures() == ["leaks"]


def test_an_exception_that_is_no_strata_error_is_counted(tiny, monkeypatch):
    workdir, _ = tiny
    from core.agent_tools import MemoryTools

    real = MemoryTools.call

    def sometimes_broken(self, name, arguments=None):
        if name == "search_graph":
            raise RuntimeError("planted")
        return real(self, name, arguments)

    monkeypatch.setattr(MemoryTools, "call", sometimes_broken)
    engine = _engine(workdir)
    try:
        section = run_fuzz(engine, _derived(workdir), 200, 3, workdir, None)
    finally:
        engine.close()
    assert section.figures["uncaught exceptions"] > 0 and "uncaught exceptions" in section.failures()
    assert any("planted" in e for e in section.examples["uncaught exceptions"])


def test_the_cli_takes_sections_by_name_and_refuses_others(capsys):
    from workbench.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["bench", "reliability", "--sections", "fuzz,round-trips", "--kills", "100"])
    assert args.sections == ("fuzz", "round_trips") and args.kills == 100 and args.engine == "sqlite"
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["bench", "reliability", "--sections", "fuzz,speed"])
    assert exited.value.code == 2 and "--sections: choose from kills" in capsys.readouterr().err
