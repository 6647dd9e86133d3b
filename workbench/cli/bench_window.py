"""`strata bench window`: the context window on scripted cases, under each ablation."""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli.output import check_outputs, console, progress_bar, table, write_report

ABLATION_NAMES = ("full", "no_hygiene", "no_associations", "similarity_only", "no_recency")


def cmd_window(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser, so the benchmark loads when it runs
    from core.bench.window import bundled_cases, load_cases, run_window_bench

    check_outputs(args)
    paths = args.cases or bundled_cases()
    cases = [case for path in paths for case in load_cases(path)]
    ablations = args.ablation or list(ABLATION_NAMES)
    with progress_bar("window cases", enabled=not args.json) as update:
        report = run_window_bench(cases, ablations, progress=update)
    report["case_files"] = [str(p) for p in paths]
    if not args.json:
        table(
            f"Context window: {len(cases)} cases from {', '.join(Path(p).name for p in paths)}",
            [
                "ablation",
                "hit rate",
                "mean candidates",
                "mean selected",
                "mean tokens (est.)",
                "association edges applied",
                "misses",
            ],
            [
                [
                    r["ablation"],
                    f"{r['hit_rate']:.3f}",
                    r["mean_candidates"],
                    r["mean_selected"],
                    r["mean_tokens"],
                    r["mean_association_edges_applied"],
                    len(r["misses"]),
                ]
                for r in report["runs"]
            ],
        )
        for r in report["runs"]:
            if r["misses"]:
                console.print(f"{r['ablation']} missed: {', '.join(m['id'] for m in r['misses'])}", markup=False)
        if "full" in ablations:
            verdict = "yes" if report["full_is_best"] else "NO (see the misses above)"
            console.print(f"full is at least as good as every ablation: {verdict}", markup=False)
    write_report(report, args)
    return 0


def register_window(kinds, common: argparse.ArgumentParser) -> None:
    p = kinds.add_parser(
        "window",
        parents=[common],
        help="the context window on JSONL cases (memories, query, expected content, budget) under the "
        "ablations full, no_hygiene, no_associations, similarity_only, no_recency",
    )
    p.add_argument(
        "--cases",
        type=Path,
        action="append",
        help="a JSONL case file (repeatable; default: the bundled window and current-truth cases)",
    )
    p.add_argument("--ablation", action="append", choices=ABLATION_NAMES, help="run only this ablation (repeatable)")
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_window)
