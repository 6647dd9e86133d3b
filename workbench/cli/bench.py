"""`strata bench …`: benchmarks that print a table and write a JSON report."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from core.bench.reliability_options import DEFAULTS, SECTIONS
from core.errors import InvalidInputError
from workbench.cli.argtypes import float_in, integer, positive_int
from workbench.cli.bench_governance import register_governance
from workbench.cli.bench_qa import register_qa
from workbench.cli.bench_rules import register_rules
from workbench.cli.bench_window import register_window
from workbench.cli.imports import register_bench
from workbench.cli.output import (
    check_outputs,
    console,
    err_console,
    output_file,
    progress_bar,
    table,
    write_report,
)


@contextmanager
def bench_workdir(given: str | None, prefix: str) -> Iterator[Path]:
    """Where a bench keeps its databases: ``given`` (checked before any work: a file there is an
    error, not a crash at the end of a build), else a temporary folder removed afterwards."""
    if given is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as temporary:
            yield Path(temporary)
        return
    workdir = Path(given)
    if workdir.exists() and not workdir.is_dir():
        raise InvalidInputError(f"--workdir {workdir}: is not a directory")
    yield workdir


def cmd_coverage(args: argparse.Namespace) -> int:
    # start-up time, here and below: `strata --help` builds this parser, so a benchmark loads when it runs
    from core.bench.coverage import run_coverage

    check_outputs(args)
    with progress_bar("derive", enabled=not args.json) as update:
        report = run_coverage(
            args.data, args.split, db_url=getattr(args, "db", None), provider=args.provider, progress=update
        )
    if not args.json:
        rows = [
            [
                sid,
                c["gold_messages"],
                c["extraction_coverage"],
                c["temporal_resolved"],
                c["blocks"],
                c["events"],
                c["events_per_block"],
                c["graph_nodes"],
                c["graph_facts"],
            ]
            for sid, c in report["per_conversation"].items()
        ]
        rows.append(
            [
                "overall",
                "",
                report["extraction_coverage"]["overall"],
                report["temporal_resolved"]["overall"],
                "",
                "",
                "",
                "",
                "",
            ]
        )
        table(
            f"Derivation coverage, LoCoMo {args.split} ({report['provider']})",
            [
                "conversation",
                "gold msgs",
                "coverage",
                "temporal resolved",
                "blocks",
                "events",
                "events/block",
                "nodes",
                "facts",
            ],
            rows,
        )
        t = report["timing"]
        console.print(
            f"ingest {t['ingest_s']} s, derivation {t['derive_s']} s for {t['messages']} messages", markup=False
        )
    write_report(report, args)
    return 0


def _pair(strata: float | None, bm25: float | None) -> str:
    """A cell like "0.712 / 0.511": the system first, then the baseline of the same run."""

    def fmt(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    return f"{fmt(strata)} / {fmt(bm25)}"


def _metric_table(title: str, results: dict, level: str, metric: str, groups: list[str], ks: list[str]) -> None:
    strata, bm25 = results["strata"][level][metric], results["bm25"][level][metric]
    rows = [[group] + [_pair(strata.get(group, {}).get(k), bm25.get(group, {}).get(k)) for k in ks] for group in groups]
    table(title, [""] + [f"@{k}" for k in ks], rows)


def _timing_line(report: dict) -> str:
    t = report["timing"]
    parts = [
        f"ingest {t['ingest_s']} s",
        f"derivation {t['derive_s']} s",
        f"query p50 {t['query_p50_ms']} ms / p95 {t['query_p95_ms']} ms "
        f"(bm25 p50 {t['bm25_query_p50_ms']} ms / p95 {t['bm25_query_p95_ms']} ms)",
    ]
    if "total_s" in t:
        parts.append(f"total {t['total_s']} s")
    return ", ".join(parts)


def cmd_locomo(args: argparse.Namespace) -> int:
    from core.bench.locomo import KS, run_locomo
    from core.bench.locomo_data import CATEGORIES

    check_outputs(args)
    with progress_bar("locomo", enabled=not args.json) as update:
        report = run_locomo(
            args.data, args.split, db_url=getattr(args, "db", None), provider=args.provider, progress=update
        )
    if not args.json:
        ks = [str(k) for k in KS]
        groups = ["overall", *CATEGORIES.values()]
        head = f"LoCoMo {args.split}, {report['questions']} questions, strata ({report['retriever']}) / bm25"
        for metric in ("recall", "recall_all"):
            _metric_table(f"{head}: turn {metric}", report["results"], "turn", metric, groups, ks)
        results = report["results"]
        rows = [
            [metric]
            + [
                _pair(
                    results["strata"]["session"][metric]["overall"][k], results["bm25"]["session"][metric]["overall"][k]
                )
                for k in ks
            ]
            for metric in ("recall", "recall_all")
        ]
        table(f"{head}: session level, overall", ["session"] + [f"@{k}" for k in ks], rows)
        tokens = report["context_tokens"]
        console.print(
            "context tokens, strata / bm25: "
            + ", ".join(f"@{k} {tokens['strata'][k]} / {tokens['bm25'][k]}" for k in ks),
            markup=False,
        )
        console.print(_timing_line(report) + f", {report['ingest']['messages']} messages", markup=False)
    write_report(report, args)
    return 0


def cmd_longmemeval(args: argparse.Namespace) -> int:
    from core.bench.longmemeval import KS, QUESTION_TYPES, run_longmemeval

    check_outputs(args)
    db_url = getattr(args, "db", None)
    # Parallel workers each build a temporary database, so one named store means one process.
    workers = args.workers or (1 if db_url else default_workers())
    with progress_bar("longmemeval", enabled=not args.json) as update:
        report = run_longmemeval(
            args.data,
            args.split,
            limit=args.limit,
            db_url=db_url,
            provider=args.provider,
            progress=update,
            workers=workers,
            derive=args.derive,
        )
    if not args.json:
        ks = [str(k) for k in KS]
        groups = ["overall", *QUESTION_TYPES]
        extra = sorted(set(report["results"]["strata"]["session"]["recall_any"]) - set(groups))
        head = f"LongMemEval_S {args.split}, {report['questions']} questions, strata ({report['retriever']}) / bm25"
        for metric in ("recall_any", "recall_all", "ndcg_any"):
            _metric_table(f"{head}: session {metric}", report["results"], "session", metric, groups + extra, ks)
        console.print(_timing_line(report) + f", {report['ingest']['messages']} messages", markup=False)
    write_report(report, args)
    return 0


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--messages: expected sizes like 10000,100000, got {text!r}") from None
    if not sizes or any(n < 100 for n in sizes):
        raise argparse.ArgumentTypeError("--messages: every size must be at least 100")
    return sizes


def _mb(value: int | None) -> str:
    return "–" if value is None else f"{value / 1e6:,.0f} MB"


def _p50_p95(latency: dict | None) -> str:
    return f"{latency['p50']} / {latency['p95']}" if latency else "–"


def _after_capture(ms: dict | None) -> str:
    if not ms:
        return "–"
    first = f" ({ms['first']})" if "first" in ms else ""  # reports before the first was kept apart
    return f"{ms['p50']} / {ms['p95']}{first}"


def cmd_scale(args: argparse.Namespace) -> int:
    from core.bench.scale import CHANNELS, run_scale

    check_outputs(args)
    with (
        bench_workdir(args.workdir, "strata-scale-") as workdir,
        progress_bar("scale", enabled=not args.json) as update,
    ):
        report = run_scale(
            args.messages,
            args.queries,
            workdir=workdir,
            seed=args.seed,
            derive_limit=args.derive_limit,
            reuse=args.reuse,
            skip_baseline=args.no_baseline,
            skip_ui=args.no_ui,
            progress=update,
        )
    if not args.json:
        sizes = [str(n) for n in args.messages]
        rows = []
        for key, label in (
            ("ingest_msgs_per_s", "ingest + derive msg/s"),
            ("ingest_only_msgs_per_s", "ingest msg/s"),
            ("derive_only_msgs_per_s", "derive msg/s"),
        ):
            rows.append([label] + [report["results"][n][key] for n in sizes])
        rows.append(["DB size"] + [_mb(report["results"][n]["db_bytes"]) for n in sizes])
        rows.append(["peak RSS"] + [_mb(report["results"][n]["peak_rss_bytes"]) for n in sizes])
        for channel in CHANNELS:
            rows.append(
                [f"{channel} p50 / p95 ms"] + [_p50_p95(report["results"][n]["latency_ms"][channel]) for n in sizes]
            )
        rows.append(
            ["retrieval after a capture p50 / p95 (first) ms"]
            + [_after_capture(report["results"][n].get("after_capture_ms")) for n in sizes]
        )
        rows.append(["rank-bm25 p50 / p95 ms"] + [_p50_p95(report["results"][n]["baseline_latency_ms"]) for n in sizes])
        rows.append(["workbench first paint ms"] + [report["results"][n]["ui_first_paint_ms"] for n in sizes])
        rows.append(["workbench slowest switch ms"] + [report["results"][n]["ui_switch_ms"] for n in sizes])
        for channel in CHANNELS:
            rows.append(
                [f"{channel} p95 growth"]
                + [
                    (report["results"][n].get("growth_from_previous") or {}).get("latency_p95", {}).get(channel, "–")
                    for n in sizes
                ]
            )
        table(f"Scale ({report['queries']} queries, offline provider)", ["messages"] + sizes, rows)
        if any(report["results"][n]["derivation_subset"] for n in sizes):
            console.print(
                "note: derivation ran on a subset of messages (--derive-limit); see derived_messages", markup=False
            )
        console.print(f"workbench: {report['ui_note']}", markup=False)
    if args.svg:
        from core.bench.plot import scale_svg

        with output_file(args.svg, "--svg") as out:
            out.write(scale_svg(report))
        err_console.print(f"latency plot written to {args.svg}", markup=False)
    write_report(report, args)
    return 0


def cmd_derive_floor(args: argparse.Namespace) -> int:
    from core.bench.derive_floor import run_floor

    check_outputs(args)
    with (
        bench_workdir(args.workdir, "strata-floor-") as workdir,
        progress_bar("derive-floor", enabled=not args.json) as update,
    ):
        report = run_floor(args.messages, workdir, seed=args.seed, progress=update)
    if not args.json:
        ruled, floor = report["with_rules"], report["rules_replayed"]
        rows = [
            [label, ruled[key], floor[key]]
            for key, label in (
                ("ingest_only_msgs_per_s", "ingest msg/s"),
                ("derive_only_msgs_per_s", "derive msg/s"),
                ("ingest_msgs_per_s", "ingest + derive msg/s"),
                ("derive_s", "derive s"),
            )
        ]
        rows.append(["offline rules s", report["rules_s"], 0])
        table(
            f"Derivation with the offline rules and with their answers replayed ({report['messages']:,} messages)",
            ["measure", "rules run", "rules replayed"],
            rows,
        )
        console.print(
            f"the rules are {report['rules_share_of_derivation']:.0%} of derivation; the Scale target "
            f"for ingest + derive is {report['target_msgs_per_s']:,} msg/s",
            markup=False,
        )
    write_report(report, args)
    return 0


def cmd_workers(args: argparse.Namespace) -> int:
    from core.bench.workers import run as run_workers_bench

    with (
        bench_workdir(args.workdir, "strata-workers-") as workdir,
        progress_bar("workers", enabled=not args.json) as update,
    ):
        report = run_workers_bench(args.data, workdir, workers=args.workers, limit=args.limit, progress=update)
    if not args.json:
        table(
            f"strata derive on {report['conversations']} LoCoMo conversations ({report['messages']:,} messages)",
            ["workers", "seconds"],
            [[1, report["one_worker_s"]], [report["workers"], report["workers_s"]]],
        )
        same = (
            "the same memory"
            if report["same_memory"]
            else f"DIFFERENT memory in {', '.join(report['differing_namespaces'])}"
        )
        console.print(f"speed-up {report['speedup']}x; both derived {same}", markup=False)
    write_report(report, args)
    return 0 if report["same_memory"] else 1


def _sections(text: str) -> tuple[str, ...]:

    chosen = tuple(dict.fromkeys(part.strip().replace("-", "_") for part in text.split(",") if part.strip()))
    unknown = [name for name in chosen if name not in SECTIONS]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"--sections: choose from {', '.join(SECTIONS)}, got {text!r}")
    return chosen


def _figure(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, list):
        return " / ".join(map(str, value))
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def cmd_reliability(args: argparse.Namespace) -> int:
    # start-up time: the bench drives every service (numpy included), and `strata --help` builds this parser
    from core.bench.reliability import run_reliability

    check_outputs(args)
    server = None
    if args.engine == "postgresql":
        server = getattr(args, "db", None) or os.environ.get("STRATA_TEST_DB") or None
    with (
        bench_workdir(args.workdir, "strata-reliability-") as workdir,
        progress_bar("reliability", enabled=not args.json) as update,
    ):
        report = run_reliability(
            workdir=workdir,
            engine=args.engine,
            server_url=server,
            kills=args.kills,
            fuzz=args.fuzz,
            round_trips=args.round_trips,
            turns=args.turns,
            seed=args.seed,
            data=args.data,
            sections=args.sections,
            progress=update,
        )
    if not args.json:
        rows = []
        for name, section in report["sections"].items():
            for figure, value in section["figures"].items():
                verdict = ("FAIL" if value else "ok") if figure in section["must_be_zero"] else ""
                rows.append([name.replace("_", " "), figure, _figure(value), verdict])
            rows.append([name.replace("_", " "), "seconds", section["seconds"], ""])
        table(
            f"Reliability on {report['engine']} (seed {report['seed']}): every figure marked ok must be 0",
            ["section", "figure", "value", ""],
            rows,
        )
        for name, section in report["sections"].items():
            for figure in section["failures"]:
                for example in section["examples"].get(figure, []):
                    console.print(f"{name}: {figure}: {example}", markup=False, highlight=False)
        console.print(f"{report['failures']} failing figure(s) in {report['seconds']} s", markup=False)
    write_report(report, args)
    return 1 if report["failures"] else 0


def cmd_ui(args: argparse.Namespace) -> int:
    # only the UI bench imports Textual
    from workbench.bench_ui import TARGET_FIRST_PAINT_MS, TARGET_SWITCH_MS, run

    check_outputs(args)
    with progress_bar("ui", enabled=not args.json) as update:
        report = run(
            getattr(args, "db", None),
            args.events,
            reuse=args.reuse,
            seed=args.seed,
            prebuild=not args.no_prebuild,
            in_process=not args.launch_only,
            launch_runs=args.runs,
            demo_url=args.demo,
            quit_delay=args.quit_delay,
            progress=update,
        )
    if not args.json:
        if "first_paint_ms" in report:
            _in_process_table(report, TARGET_FIRST_PAINT_MS, TARGET_SWITCH_MS)
        if "launch" in report:
            _launch_table(report)
    write_report(report, args)
    return 0


def _in_process_table(report: dict, first_paint_target: int, switch_target: int) -> None:
    rows = [
        ["first paint", report["first_paint_ms"], first_paint_target],
        ["first data (blocks)", report["first_data_ms"], ""],
    ]
    if "views_built_ms" in report:
        rows.append(["other views built (background)", report["views_built_ms"], ""])
    for mode, entry in report["switch"].items():
        for key, value in entry.items():
            rows.append([f"switch {mode} ({key.removesuffix('_ms').replace('_', ' ')})", value, switch_target])
    for label, value in report["filters"].items():
        rows.append([f"filter {label}", value, switch_target])
    table(
        f"Workbench on {report['store']['events']:,} events, in the process from the app's start (ms; load "
        f"{report['machine']['load_avg_1m']} on {report['machine']['cpus']} CPUs)",
        ["measure", "ms", "target"],
        rows,
    )
    met = report["targets"]
    console.print(
        f"first paint target met: {met['first_paint_met']}, switches: {met['switch_met']}, "
        f"filters: {met['filter_met']}",
        markup=False,
    )


def _launch_table(report: dict) -> None:
    launch = report["launch"]
    demo, large = launch["demo"], launch["large"]

    def target(value: float | None) -> str:
        return "" if value is None else f"≤ {value:g}"

    rows = []
    for key, label in (
        ("first_frame_ms", "first frame (before its data)"),
        ("first_paint_ms", "first paint (the first view's data)"),
        ("first_paint_cpu_ms", "CPU time at the first paint"),
        ("quit_ms", "quit (q to the process's exit)"),
    ):
        rows.append(
            [
                label,
                demo["median"][key],
                target(demo["targets"].get(key)),
                large["median"][key],
                target(large["targets"].get(key)),
            ]
        )
    table(
        f"strata ui launched in a terminal, median of {demo['runs']} runs (ms; load {demo['median']['load_avg_1m']} / "
        f"{large['median']['load_avg_1m']} on {demo['machine']['cpus']} CPUs)",
        ["measure", "demo", "target", f"{report['store']['events']:,} events", "target"],
        rows,
    )
    console.print(
        f"targets met: demo first paint {demo['targets']['first_paint_met']}, quit {demo['targets']['quit_met']}; "
        f"large store first paint {large['targets']['first_paint_met']}",
        markup=False,
    )


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def register(sub, common: argparse.ArgumentParser) -> None:
    bench = sub.add_parser(
        "bench",
        help="benchmarks (locomo, longmemeval, coverage, scale, derive-floor, workers, "
        "reliability, ui, rules, governance, window, qa)",
    )
    kinds = bench.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    p = kinds.add_parser("coverage", parents=[common], help="LoCoMo derivation coverage of gold evidence")
    p.add_argument("--data", required=True, type=Path, help="path to locomo10.json")
    p.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    p.add_argument("--provider", default="offline")
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_coverage)

    p = kinds.add_parser("locomo", parents=[common], help="LoCoMo evidence retrieval against a BM25 baseline")
    p.add_argument("--data", required=True, type=Path, help="path to locomo10.json")
    p.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    p.add_argument("--provider", default="offline")
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_locomo)

    register_bench(kinds, common)

    register_rules(kinds, common)

    register_governance(kinds, common)

    register_window(kinds, common)

    register_qa(kinds, common)

    p = kinds.add_parser(
        "longmemeval", parents=[common], help="LongMemEval_S session retrieval against a BM25 baseline"
    )
    p.add_argument("--data", required=True, type=Path, help="path to longmemeval_s_cleaned….json(.gz)")
    p.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    p.add_argument(
        "--limit", type=positive_int, default=None, metavar="N", help="only the first N questions of the split"
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help=f"processes, each with its own temporary database (default: the cores, at most 4, here "
        f"{default_workers()}; 1 with --db, which cannot be shared by several)",
    )
    p.add_argument("--provider", default="offline")
    p.add_argument(
        "--derive",
        choices=["retrieval", "all"],
        default="retrieval",
        help="derivation stages per question: what default retrieval reads (summaries and event "
        "cards; default) or all, graph projection included",
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_longmemeval)

    p = kinds.add_parser(
        "scale",
        parents=[common],
        help="ingest, derivation, storage and search latency on synthetic corpora of growing size",
    )
    p.add_argument(
        "--messages",
        type=_sizes,
        default=[10_000, 100_000],
        metavar="N[,N…]",
        help="corpus sizes (default 10000,100000)",
    )
    p.add_argument(
        "--queries", type=positive_int, default=50, metavar="Q", help="questions timed per channel (default 50)"
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--derive-limit",
        type=positive_int,
        default=None,
        metavar="M",
        help="derive only the first M messages of a larger corpus (flagged in the report)",
    )
    p.add_argument("--workdir", default=None, help="keep the built databases here (default: a temporary folder)")
    p.add_argument("--reuse", action="store_true", help="reuse databases already built in --workdir")
    p.add_argument("--no-baseline", action="store_true", help="skip the rank-bm25 baseline (not for reported runs)")
    p.add_argument("--no-ui", action="store_true", help="skip the workbench first-paint and switch measurement")
    p.add_argument("--svg", help="write a plot of p95 latency against corpus size (SVG) to this file")
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_scale)

    p = kinds.add_parser(
        "derive-floor",
        parents=[common],
        help="derivation with the offline rules, then with their answers replayed: what the rest costs",
    )
    p.add_argument(
        "--messages", type=positive_int, default=10_000, metavar="N", help="synthetic messages (default 10000)"
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--workdir", default=None, help="keep the two built databases here (default: a temporary folder)")
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_derive_floor)

    p = kinds.add_parser(
        "workers",
        parents=[common],
        help="strata derive with one worker and with N on copies of one LoCoMo store: time and memory",
    )
    p.add_argument("--data", required=True, help="path to locomo10.json")
    p.add_argument("--workers", type=positive_int, default=2, metavar="N", help="workers of the second run (default 2)")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N", help="only the first N conversations")
    p.add_argument("--workdir", default=None, help="keep the three databases here (default: a temporary folder)")
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_workers)

    p = kinds.add_parser(
        "reliability",
        parents=[common],
        help="kill -9 at random moments, concurrent writers, fuzzed input, import round trips and "
        "namespace isolation; exits 1 when any failure is seen",
    )
    p.add_argument(
        "--engine",
        choices=["sqlite", "postgresql"],
        default="sqlite",
        help="the engine of the scratch stores (postgresql: --db or $STRATA_TEST_DB names a server "
        "URL whose role may create databases; each store is a database made and dropped here)",
    )
    p.add_argument(
        "--kills",
        type=integer(0, 100_000),
        default=DEFAULTS["kills"],
        metavar="N",
        help=f"kill -9 moments, spread over six commands (default {DEFAULTS['kills']})",
    )
    p.add_argument(
        "--fuzz",
        type=integer(0, 10_000_000),
        default=DEFAULTS["fuzz"],
        metavar="N",
        help=f"fuzzed inputs (default {DEFAULTS['fuzz']:,})",
    )
    p.add_argument(
        "--round-trips",
        type=integer(0, 1_000_000),
        default=DEFAULTS["round_trips"],
        metavar="N",
        help=f"import commit/undo round trips (default {DEFAULTS['round_trips']})",
    )
    p.add_argument(
        "--turns",
        type=positive_int,
        default=DEFAULTS["turns"],
        metavar="N",
        help=f"turns each of the two concurrent writers appends (default {DEFAULTS['turns']})",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a LoCoMo file to ingest in the kill section instead of the generated one (its first conversation)",
    )
    p.add_argument(
        "--sections",
        type=_sections,
        default=SECTIONS,
        metavar="NAME[,NAME…]",
        help=f"run only these sections ({', '.join(SECTIONS)})",
    )
    p.add_argument(
        "--workdir", default=None, help="keep the scratch stores and inputs here (default: a temporary folder)"
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_reliability)

    p = kinds.add_parser(
        "ui", parents=[common], help="workbench first paint, screen switches and filters on a generated large store"
    )
    p.add_argument(
        "--events",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="events in the generated store (default 100000)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--reuse", action="store_true", help="measure the store at --db as it is (no regeneration)")
    p.add_argument(
        "--no-prebuild",
        action="store_true",
        help="do not build views in the background: first visits then build their view",
    )
    p.add_argument(
        "--runs",
        type=integer(0, 1000),
        default=5,
        metavar="N",
        help="launch `strata ui` N times in a terminal on the demo and on the store, and report the "
        "medians of first paint and quit as a user sees them (default 5; 0: none)",
    )
    p.add_argument(
        "--demo",
        default=None,
        metavar="URL",
        help="the demo database to launch on (default: one built in a temporary folder)",
    )
    p.add_argument(
        "--quit-delay",
        type=float_in(0, 60),
        default=None,
        metavar="S",
        help="press q S seconds after the first paint (default: once the views built in the "
        "background are done; 0: while they are being built)",
    )
    p.add_argument(
        "--launch-only",
        action="store_true",
        help="only the launches of `strata ui` (no switches or filters measured in the process)",
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_ui)
