"""`strata bench qa`: question answering end to end through the harness adapter, judged by a model."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from core.providers.usage import add, describe
from workbench.cli.argtypes import positive_int
from workbench.cli.output import check_outputs, console, cut, progress_bar, table, write_report


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _tokens(usage: dict) -> str:
    return f"{usage['prompt_tokens']}+{usage['completion_tokens']}"


def _question_table(report: dict) -> None:
    """One row a question; the short columns never wrap, the texts share what is left."""
    out = Table(
        title=f"Questions, {report['dataset']} {report['split']} (answer {report['answer_model']}, "
        f"judge {report['judge_model']})",
        header_style="bold",
    )
    for name in ("id", "category"):
        out.add_column(name, no_wrap=True)
    for name, ratio in (("question", 3), ("gold", 2), ("answer", 3)):
        out.add_column(name, ratio=ratio, overflow="fold")
    out.add_column("label", no_wrap=True)
    for name in ("tools", "ctx tok", "model tok"):
        out.add_column(name, justify="right", no_wrap=True)
    for r in report["per_question"]:
        out.add_row(
            r["id"],
            r["category"],
            cut(r["question"], 120),
            cut(r["gold"], 80),
            cut(r["answer"], 120),
            r["label"],
            str(len(r["tool_calls"])),
            str(r.get("context_tokens", "")),
            _tokens(add(r["usage"]["answer"], r["usage"]["judge"])),
        )
    console.print(out)


def cmd_qa(args: argparse.Namespace) -> int:
    # start-up time: `strata --help` builds this parser, so the benchmark and the HTTP client load when it runs
    from core.bench.qa import run_qa_bench
    from core.providers.openai_compat import OpenAICompatProvider

    # Both models first: without a key this is an error naming the variables, before any work.
    answer_model = OpenAICompatProvider(model=args.model)
    judge_model = OpenAICompatProvider(model=args.judge_model or answer_model.model)
    check_outputs(args)
    with progress_bar(f"qa {args.dataset}", enabled=not args.json) as update:
        report = run_qa_bench(
            args.data,
            args.split,
            dataset=args.dataset,
            limit=args.limit,
            answer_model=answer_model,
            judge_model=judge_model,
            db_url=getattr(args, "db", None),
            context_budget=args.context_budget,
            max_tool_rounds=args.max_tool_rounds,
            progress=update,
        )
    if not args.json:
        _question_table(report)
        table(
            "Accuracy (judged CORRECT / questions; unparsed and errors count as not correct)",
            ["category", "questions", "correct", "wrong", "unparsed", "error", "accuracy"],
            [
                [group, t["questions"], t["correct"], t["wrong"], t["unparsed"], t["error"], _rate(t["accuracy"])]
                for group, t in report["accuracy"].items()
            ],
        )
        for role in ("answer", "judge"):
            spent = report["usage"][role]
            console.print(
                f"{role} model {report[f'{role}_model']}: {describe(spent, spent['cost'])}",
                markup=False,
                highlight=False,
            )
        t = report["timing"]
        total = report["usage"]["total"]["cost"]
        console.print(
            f"total estimated cost {total['estimated_cost']:.4f} {total['currency']}; {report['tool_calls']} tool "
            f"call(s); mean context {report['context_tokens_mean']} tokens; ingest {t['ingest_s']} s, derivation "
            f"{t['derive_s']} s, per question p50 {t['question_p50_s']} s / p95 {t['question_p95_s']} s, total "
            f"{t['total_s']} s",
            markup=False,
            highlight=False,
        )
    write_report(report, args)
    return 0


def register_qa(kinds, common: argparse.ArgumentParser) -> None:
    p = kinds.add_parser(
        "qa",
        parents=[common],
        help="question answering through the harness adapter: an answer model with the memory tools, "
        "a judge model labelling each answer against the gold one",
    )
    p.add_argument("--data", required=True, type=Path, help="path to locomo10.json or longmemeval_s….json(.gz)")
    p.add_argument("--split", default="dev", choices=["dev", "test"])
    p.add_argument("--dataset", default="locomo", choices=["locomo", "longmemeval"])
    p.add_argument("--limit", type=positive_int, default=None, metavar="N", help="only the first N questions")
    p.add_argument(
        "--provider",
        default="openai",
        choices=["openai", "deepseek"],
        help="the models' endpoint: an OpenAI-compatible one configured by STRATA_LLM_API_KEY or "
        "DEEPSEEK_API_KEY and STRATA_LLM_BASE_URL (default DeepSeek's)",
    )
    p.add_argument("--model", default=None, help="answer model (default $STRATA_LLM_MODEL, else deepseek-chat)")
    p.add_argument("--judge-model", default=None, help="judge model (default: the answer model)")
    p.add_argument(
        "--context-budget",
        type=positive_int,
        default=900,
        metavar="TOKENS",
        help="estimated tokens of memory placed before the answer model's call (default 900)",
    )
    p.add_argument(
        "--max-tool-rounds",
        type=positive_int,
        default=8,
        metavar="N",
        help="rounds of tool calls before the model is told to answer (default 8)",
    )
    p.add_argument("--json-out", help="write the JSON report to this file")
    p.set_defaults(handler=cmd_qa)
