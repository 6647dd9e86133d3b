"""`strata bench governance`: C1 retrieves like C0, C2/C3 hand an agent nothing unauthorized, and the
bench notices when they would."""

from __future__ import annotations

import json

import pytest

from core.bench import governance as bench
from workbench.cli import main

pytestmark = pytest.mark.bench


def test_the_conditions_meet_the_guardrails(tmp_path):
    report = bench.run_governance_bench(workdir=tmp_path)
    c = report.conditions
    assert report.passed and report.c1_matches_c0, report.failures
    assert c["C0"].retrieved == c["C1"].retrieved
    assert all(c[k].unauthorized_retrievals == 0 and c[k].revoked_references == 0 for k in bench.CONDITIONS)
    # Reviewed memory answers what the conversation could not, without weakening a guardrail.
    assert c["C2"].verified_outcomes > c["C0"].verified_outcomes and c["C2"].human_approvals == 6
    assert c["C3"].tokens_injected < c["C2"].tokens_injected and c["C3"].ledger_rows == len(bench.TASKS)


def test_without_the_filters_the_bench_fails(tmp_path, monkeypatch):
    import core.services.governance as gov

    monkeypatch.setattr(gov, "_reason_code", lambda *args: None)  # every promoted or not record let through
    report = bench.run_governance_bench(workdir=tmp_path)
    assert not report.passed
    assert report.conditions["C2"].unauthorized_retrievals > 0 and report.conditions["C2"].revoked_references > 0
    assert any("unauthorized" in f for f in report.failures) and any("revoked" in f for f in report.failures)


def test_the_command_prints_each_condition_and_writes_json(tmp_path, capsys, cli_without_strata_db):
    out = tmp_path / "gov.json"
    assert main(["bench", "governance", "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert all(name in printed for name in bench.CONDITIONS) and "C1 retrieves like C0: yes" in printed
    data = json.loads(out.read_text())
    assert data["passed"] is True and set(data["conditions"]) == set(bench.CONDITIONS)
