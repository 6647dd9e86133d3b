"""`strata bench rules`: the offline rules against the labelled corpus, precision and recall per family."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.errors import InvalidInputError
from workbench.cli.output import check_outputs, console, err_console, table, write_report


def _families(text: str) -> tuple[str, ...]:
    # start-up time, here and below: `strata --help` builds this parser, so the benchmark loads when it runs
    from core.bench.rules import FAMILIES

    chosen = tuple(dict.fromkeys(part.strip().replace("-", "_") for part in text.split(",") if part.strip()))
    unknown = [name for name in chosen if name not in FAMILIES]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"choose from {', '.join(FAMILIES)}, got {text!r}")
    return chosen


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _pair(score) -> str:
    return "–" if score is None else f"{_ratio(score.precision)} / {_ratio(score.recall)}"


def cmd_rules(args: argparse.Namespace) -> int:
    from core.bench.rules import BASELINE, CORPUS, below_baseline, load_baseline, run_rules, write_baseline

    check_outputs(args)
    corpus = Path(args.corpus) if args.corpus else CORPUS
    default = corpus.resolve() == CORPUS.resolve()
    if args.update_baseline and (not default or args.family):
        raise InvalidInputError("--update-baseline: only for the whole default corpus (no --corpus, no --family)")
    report = run_rules(corpus, args.family)
    baseline = load_baseline() if default and BASELINE.is_file() else {}
    fallen = below_baseline(report, {k: v for k, v in baseline.items() if k in report.families})
    if not args.json:
        rows = [
            [
                name,
                fam.cases,
                fam.correct,
                baseline.get(name, "–"),
                _ratio(fam.score.precision),
                _ratio(fam.score.recall),
                _pair(fam.langs.get("en")),
                _pair(fam.langs.get("zh")),
            ]
            for name, fam in report.families.items()
        ]
        table(
            f"Offline rules on {report.cases} labelled cases ({report.chinese} Chinese), {report.seconds} s",
            ["family", "cases", "correct", "baseline", "P", "R", "en P / R", "zh P / R"],
            rows,
        )
        if args.failures:
            for name, fam in report.families.items():
                for failure in fam.failures:
                    console.print(
                        f"{name}: {failure['id']}: {'; '.join(failure['problems'])}", markup=False, highlight=False
                    )
        for name, (now, floor) in fallen.items():
            console.print(f"{name}: {now} correct, below the baseline of {floor}", markup=False)
    if args.update_baseline:
        if fallen:
            raise InvalidInputError(
                "--update-baseline: the baseline only goes up; "
                + ", ".join(f"{k} fell to {now} from {was}" for k, (now, was) in fallen.items())
            )
        write_baseline(report)
        err_console.print(f"baseline written to {BASELINE}", markup=False)
    write_report(report.as_dict(), args)
    return 1 if fallen else 0


def register_rules(kinds, common: argparse.ArgumentParser) -> None:
    p = kinds.add_parser(
        "rules",
        parents=[common],
        help="the offline rules on the labelled corpus: precision and recall per family; exits 1 "
        "when a family has fewer correct cases than its baseline",
    )
    p.add_argument(
        "--corpus", default=None, metavar="DIR", help="a folder of *.jsonl cases (default: core/bench/rules_corpus)"
    )
    p.add_argument(
        "--family",
        type=_families,
        default=None,
        metavar="NAME[,NAME…]",
        help="score only these families (type, time, status, participants, non_persons, facts, supersessions)",
    )
    p.add_argument("--failures", action="store_true", help="list every failing case id and what went wrong")
    p.add_argument(
        "--update-baseline",
        action="store_true",
        help="record this run's correct counts in rules_corpus/baseline.json (never lower)",
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_rules)
