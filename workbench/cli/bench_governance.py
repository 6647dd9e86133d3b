"""`strata bench governance`: the C0–C3 governance evaluation on its scripted scenario set."""

from __future__ import annotations

import argparse

from workbench.cli.output import check_outputs, console, progress_bar, table, write_report


def cmd_governance(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser, so the benchmark loads when it runs
    from core.bench.governance import run_governance_bench

    check_outputs(args)
    with progress_bar("governance conditions", enabled=not args.json) as update:
        report = run_governance_bench(progress=update)
    if not args.json:
        rows = [
            [
                r.condition,
                f"{r.verified_outcomes}/{r.tasks}",
                r.unauthorized_retrievals,
                r.revoked_references,
                r.tokens_injected,
                r.human_approvals,
                r.ledger_rows,
            ]
            for r in report.conditions.values()
        ]
        table(
            "Governance evaluation (C0 conversation only, C1 quarantine only, C2 reviewed + filters, "
            "C3 C2 + tight context budget)",
            [
                "condition",
                "verified outcomes",
                "unauthorized retrievals",
                "revoked references",
                "tokens injected (est.)",
                "human approvals",
                "ledger rows",
            ],
            rows,
        )
        console.print(f"C1 retrieves like C0: {'yes' if report.c1_matches_c0 else 'NO'}", markup=False)
        for failure in report.failures:
            console.print(f"FAILED: {failure}", markup=False)
    write_report(report.as_dict(), args)
    return 0 if report.passed else 1


def register_governance(kinds, common: argparse.ArgumentParser) -> None:
    p = kinds.add_parser(
        "governance",
        parents=[common],
        help="C0–C3 governance evaluation on a scripted scenario set; exits 1 when C1 differs "
        "from C0 or C2/C3 hand an agent anything unauthorized or revoked",
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_governance)
