"""End-to-end question answering through the harness adapter (benchmarks.md, "Question answering").

For each conversation (LoCoMo: its category 1-4 questions; LongMemEval_S: each question with its
haystack) a store is built and derived offline, then every question goes through the loop an agent
harness runs (``core.api.Harness``): the context placed before the model call, the memory tools
offered to the answer model and served with ``harness.tools.call_safe``, the answer, the turn-end
check. A judge model then labels the answer against the gold one (CORRECT / WRONG; a reply that
names neither is "unparsed", counted apart and never as correct).

The loop (``answer_question``) is the one of docs/examples/harness_loop.py, which stays the short
user-facing copy; here it also records what a benchmark reports (tool calls, context and model
tokens) and does not capture the question as a turn: an answer stored as memory would be found by
the next question of the same conversation.

Both models are anything with ``chat(messages, tools) -> assistant message``, ``model`` and a
cumulative ``usage`` (``core.providers.usage`` fields): ``OpenAICompatProvider`` is one, a test's
scripted model another.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from core.api import Harness, open_store
from core.bench import git_commit
from core.bench.locomo_data import CATEGORIES, load_questions
from core.bench.longmemeval import QUESTION_TYPES, is_abstention, select_questions
from core.bench.metrics import percentile
from core.db import db
from core.errors import InvalidInputError, StrataError
from core.ingest import IngestReport, parse, write_units
from core.ingest.common import load_json
from core.providers import usage as usage_acct
from core.providers.base import ProviderOutputError
from core.providers.jsonrecover import extract_json_object
from core.providers.openai_compat import ProviderCallError
from core.services.derive import run_pending

ProgressFn = Callable[[int, int, str], None]

DATASETS = ("locomo", "longmemeval")
LABELS = ("CORRECT", "WRONG")
UNPARSED = "unparsed"
ERROR = "error"  # a model call failed for this question (the run goes on)
# The memory tools an answering agent reads with; capture, sealing, `remember` and `get_context` are
# left out (the harness does their work, and the bench stores nothing the next question could find).
QA_TOOLS = (
    "search_events",
    "search_raw",
    "search_graph",
    "get_blocks",
    "expand_block",
    "expand_event",
    "expand_graph_node",
    "assess",
    "record_use",
)
MAX_TOOL_ROUNDS = 8
MAX_TOOL_RESULT_CHARS = 16_000  # of one tool result handed back to the model
# HTTP statuses that end the run: the key or the model is wrong, so every question would fail alike
# (a 400 may be one question's prompt, too long say: that question is an error and the run goes on).
FATAL_STATUSES = (401, 403, 404)
JUDGE_EXCERPT = 300  # characters of the judge's reply kept in the report

ANSWER_INSTRUCTIONS = (
    "You answer a question about earlier conversations, which are held in a memory store. Memory "
    "already found for the question is below, when there is any. Use the tools to look for more: "
    "search_raw finds the exact words of past messages, search_events finds event cards with their "
    "dates, search_graph finds facts about people and things, and the expand_* tools read around a "
    "hit. Close each retrieval batch with record_use, naming the refs your answer used ([] for none). "
    "Then answer in a short phrase (a name, a date, a few words). If the memory does not hold the "
    "answer, say that you do not know."
)
FINAL_NUDGE = "Answer the question now from what you found, without calling more tools."
JUDGE_INSTRUCTIONS = (
    "You grade an answer to a question about earlier conversations against the gold answer. Label it "
    "CORRECT when it gives the information of the gold answer: be generous about wording, length and "
    "format (a longer answer that contains the gold answer, the same date written differently, the "
    "same period named relatively). Label it WRONG when it misses or contradicts the gold answer or "
    'says it does not know. Reply with JSON only: {"label": "CORRECT"} or {"label": "WRONG"}.'
)
ABSTENTION_NOTE = (
    "The gold answer says the question cannot be answered from the conversations: label the answer "
    "CORRECT when it says it does not know or that the conversations do not say, WRONG when it answers "
    "as if it knew."
)


class ChatModel(Protocol):
    model: str | None

    @property
    def usage(self) -> dict[str, int]: ...

    def chat(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] = ()) -> dict[str, Any]: ...


@dataclass(frozen=True)
class QaItem:
    """One question: where its memory lives and what the judge compares with."""

    id: str
    namespace: str
    category: str
    question: str
    gold: str
    question_date: str | None = None
    abstention: bool = False
    speakers: tuple[str, ...] = ()


# -- the judge's label --------------------------------------------------------------------

_WORD_LABELS = {
    "correct": "CORRECT",
    "right": "CORRECT",
    "true": "CORRECT",
    "yes": "CORRECT",
    "pass": "CORRECT",
    "wrong": "WRONG",
    "incorrect": "WRONG",
    "false": "WRONG",
    "no": "WRONG",
    "fail": "WRONG",
}
_LABEL_KEYS = ("label", "verdict", "judgment", "judgement", "grade", "result")
_FIELD = re.compile(r"\b(?:label|verdict|judg(?:e)?ment|grade|result)\b\s*[:=]\s*[\"'*`\s]*([a-z]+)", re.IGNORECASE)
_PROSE = re.compile(r"\b(not\s+correct|incorrect|correct|wrong)\b", re.IGNORECASE)


def _word_label(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    return _WORD_LABELS.get(value.strip().strip("\"'*`.!:;,()[]{} ").lower())


def parse_judge_label(reply: object) -> str:
    """CORRECT, WRONG or ``unparsed`` from a judge's reply: a JSON object's ``label`` (or verdict,
    judgment, grade, result; or a boolean ``correct``), a "Label: correct" line, a bare word in any
    case and decoration, or prose that names one label only ("not correct" counts as WRONG). A reply
    naming both, or neither, is unparsed: it is never counted as correct."""
    if not isinstance(reply, str) or not reply.strip():
        return UNPARSED
    try:
        found = extract_json_object(reply)
    except ProviderOutputError:
        found = None
    if isinstance(found, dict):  # an object decides alone: its keys are not prose ({"correct": false})
        lowered = {str(k).lower(): v for k, v in found.items()}
        for key in _LABEL_KEYS:
            if key in lowered:
                return _word_label(lowered[key]) or UNPARSED
        for key in ("correct", "is_correct"):
            if isinstance(lowered.get(key), bool):
                return "CORRECT" if lowered[key] else "WRONG"
        return UNPARSED
    fields = {_word_label(m) for m in _FIELD.findall(reply)} - {None}
    if len(fields) == 1:
        return fields.pop()
    bare = _word_label(reply)
    if bare is not None:
        return bare
    named = {"WRONG" if m.lower() != "correct" else "CORRECT" for m in _PROSE.findall(reply)}
    return named.pop() if len(named) == 1 else UNPARSED


# -- one question through the harness -----------------------------------------------------


def _offered_tools(harness: Any) -> list[dict[str, Any]]:
    return [t for t in harness.tools.schemas() if t["name"] in QA_TOOLS]


def _echo(reply: Mapping[str, Any]) -> dict[str, Any]:
    """The assistant message as it goes back into the chat (no provider extras such as reasoning)."""
    out: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if reply.get("tool_calls"):
        out["tool_calls"] = reply["tool_calls"]
    return out


def _serve(harness: Any, call: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run one requested tool call; (the record for the report, the tool message for the model)."""
    function = call.get("function") or {}
    name = str(function.get("name") or "")
    raw = function.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    except ValueError:
        args = None
    if not isinstance(args, dict):
        result: dict[str, Any] = {"error": {"code": "bad_arguments", "message": "arguments must be a JSON object"}}
        args = {}
    elif name not in QA_TOOLS:
        result = {"error": {"code": "unknown_tool", "message": f"{name!r} is not offered; use {', '.join(QA_TOOLS)}"}}
    else:
        try:
            result = harness.tools.call_safe(name, args)
        except StrataError as exc:  # a model's odd arguments end one call, not the run
            result = {"error": {"code": "failed", "message": str(exc)}}
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) > MAX_TOOL_RESULT_CHARS:
        text = text[:MAX_TOOL_RESULT_CHARS] + " … [cut: ask for less]"
    error = result.get("error")
    record = {"name": name, "arguments": args, "error": error.get("code") if isinstance(error, dict) else error}
    return record, {"role": "tool", "tool_call_id": call.get("id"), "content": text}


def _system_prompt(item: QaItem, context_text: str) -> str:
    parts = [ANSWER_INSTRUCTIONS]
    if item.speakers:
        parts.append(f"The conversations are between {' and '.join(item.speakers)}.")
    if item.question_date:
        parts.append(f"The question is asked on {item.question_date}.")
    if context_text:
        parts.append("Memory found for the question:\n" + context_text)
    return "\n\n".join(parts)


def answer_question(
    harness: Any, item: QaItem, model: ChatModel, *, max_tool_rounds: int = MAX_TOOL_ROUNDS
) -> dict[str, Any]:
    """The harness loop for one question: context, tool calls served by Strata, the answer, the
    turn-end check. Nothing is captured (see the module's docstring)."""
    question = {"role": "user", "content": item.question}
    context = harness.before_model_call([question])
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system_prompt(item, context.text)},
        question,
    ]
    tools = _offered_tools(harness)
    calls: list[dict[str, Any]] = []
    answer = ""
    stopped = "answered"
    for round_no in range(max_tool_rounds + 1):
        if round_no == max_tool_rounds:
            messages.append({"role": "user", "content": FINAL_NUDGE})
        reply = model.chat(messages, tools)
        requested = reply.get("tool_calls") or []
        if not requested:
            answer = (reply.get("content") or "").strip()
            break
        if round_no == max_tool_rounds:
            stopped = "tool_rounds"  # still asking for tools after the nudge: no answer
            break
        messages.append(_echo(reply))
        for call in requested:
            record, tool_message = _serve(harness, call)
            calls.append(record)
            messages.append(tool_message)
    check = harness.end_turn()
    return {
        "answer": answer,
        "stopped": stopped,
        "tool_calls": calls,
        "context_tokens": context.tokens,
        "context_events": len(context.event_ids),
        "unclosed_batches": len(check.unclosed),
    }


def judge_answer(item: QaItem, answer: str, judge: ChatModel) -> tuple[str, str]:
    """(label, the judge's reply cut to an excerpt)."""
    instructions = JUDGE_INSTRUCTIONS + (f"\n\n{ABSTENTION_NOTE}" if item.abstention else "")
    prompt = f"Question: {item.question}\nGold answer: {item.gold}\nGenerated answer: {answer or '(no answer)'}"
    reply = judge.chat([{"role": "system", "content": instructions}, {"role": "user", "content": prompt}], [])
    text = reply.get("content") or ""
    return parse_judge_label(text), text[:JUDGE_EXCERPT]


# -- the data sets --------------------------------------------------------------------------


def _check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise InvalidInputError(f"--limit must be a positive integer, got {limit!r}")


def locomo_items(data: str | Path, split: str, limit: int | None = None) -> list[QaItem]:
    """The split's category 1-4 questions (those the retrieval bench scores), the first ``limit``."""
    _check_limit(limit)
    samples, questions = load_questions(data, split)
    by_id = {s["sample_id"]: s for s in samples}
    items = []
    for q in questions[:limit] if limit is not None else questions:
        sample = by_id[q.sample_id]
        conv = sample.get("conversation") or {}
        speakers = tuple(str(conv[k]) for k in ("speaker_a", "speaker_b") if conv.get(k))
        gold = sample["qa"][q.index].get("answer", "")
        items.append(
            QaItem(
                id=q.qid,
                namespace=q.sample_id,
                category=CATEGORIES[q.category],
                question=q.question,
                gold=str(gold),
                speakers=speakers,
            )
        )
    return items


def longmemeval_items(raw: list, split: str, limit: int | None = None) -> list[QaItem]:
    """The split's questions in file order (abstention ones too: the judge knows them)."""
    _check_limit(limit)
    return [
        QaItem(
            id=item["question_id"],
            namespace=item["question_id"],
            category=str(item.get("question_type", "unknown")),
            question=str(item.get("question", "")),
            gold=str(item.get("answer", "")),
            question_date=item.get("question_date"),
            abstention=is_abstention(item["question_id"]),
        )
        for item in select_questions(raw, split, limit)
    ]


# -- the report ------------------------------------------------------------------------------


def _tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {"questions": len(rows), "correct": 0, "wrong": 0, UNPARSED: 0, ERROR: 0}
    for row in rows:
        counts[{"CORRECT": "correct", "WRONG": "wrong"}.get(row["label"], row["label"])] += 1
    counts["accuracy"] = round(counts["correct"] / len(rows), 4) if rows else None
    return counts


def _accuracy(rows: list[dict[str, Any]], groups: Sequence[str]) -> dict[str, Any]:
    out = {"overall": _tally(rows)}
    for group in groups:
        chosen = [r for r in rows if r["category"] == group]
        if chosen:
            out[group] = _tally(chosen)
    abstention = [r for r in rows if r.get("abstention")]
    if abstention:
        out["abstention"] = _tally(abstention)
    return out


def _priced(usage: Mapping[str, Any], price: Mapping[str, Any]) -> dict[str, Any]:
    return {**usage_acct.normalized(usage), "cost": usage_acct.cost_estimate(usage, price)}


def _percentile(values: list[float], pct: float) -> float:
    return round(percentile(values, pct), 2) if values else 0.0


def _model_name(model: ChatModel) -> str:
    return str(getattr(model, "model", None) or getattr(model, "name", None) or type(model).__name__)


def _ask(
    item: QaItem,
    answer_model: ChatModel,
    judge_model: ChatModel,
    *,
    context_budget: int,
    max_tool_rounds: int,
    price: Mapping[str, Any],
) -> dict[str, Any]:
    started = time.perf_counter()
    before_answer, before_judge = answer_model.usage, judge_model.usage
    row: dict[str, Any] = {
        "id": item.id,
        "category": item.category,
        "question": item.question,
        "gold": item.gold,
    }
    if item.abstention:
        row["abstention"] = True
    if item.question_date:
        row["question_date"] = item.question_date
    harness = Harness(item.namespace, session=f"qa:{item.id}", token_budget=context_budget)
    try:
        row.update(answer_question(harness, item, answer_model, max_tool_rounds=max_tool_rounds))
        row["label"], row["judge_reply"] = judge_answer(item, row["answer"], judge_model)
    except ProviderOutputError as exc:
        if isinstance(exc, ProviderCallError) and exc.status in FATAL_STATUSES:
            raise  # a refused key, an unknown model: every question would fail the same way
        row.setdefault("answer", "")
        row.setdefault("tool_calls", [])
        row.update(label=ERROR, error=str(exc))
    spent_answer = usage_acct.delta(answer_model.usage, before_answer)
    spent_judge = usage_acct.delta(judge_model.usage, before_judge)
    row["usage"] = {"answer": spent_answer, "judge": spent_judge}
    row["estimated_cost"] = usage_acct.cost_estimate(usage_acct.add(spent_answer, spent_judge), price)["estimated_cost"]
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row


def run_qa_bench(
    data: str | Path,
    split: str = "dev",
    *,
    answer_model: ChatModel,
    judge_model: ChatModel,
    dataset: str = "locomo",
    limit: int | None = None,
    db_url: str | None = None,
    context_budget: int = 900,
    max_tool_rounds: int = MAX_TOOL_ROUNDS,
    derive_provider: str = "offline",
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Build the store(s), then answer and judge every question of the split (the first ``limit``).

    LoCoMo: the conversations the chosen questions belong to, ingested and derived into one store
    (a temporary SQLite file unless ``db_url``). LongMemEval_S: each question's haystack in its own
    namespace of that store, ingested and derived just before the question."""
    if dataset not in DATASETS:
        raise InvalidInputError(f"--dataset must be one of {', '.join(DATASETS)}, got {dataset!r}")
    if split not in ("dev", "test", "all"):
        raise InvalidInputError(f"unknown split {split!r}; use dev, test or all")
    if context_budget < 1 or max_tool_rounds < 0:
        raise InvalidInputError("the context budget must be positive and the tool rounds at least 0")
    price = usage_acct.prices()  # a malformed price variable fails here, before any work
    run_started = time.perf_counter()
    commit = git_commit()
    if dataset == "locomo":
        items = locomo_items(data, split, limit)
        groups: Sequence[str] = tuple(CATEGORIES.values())
    else:
        raw_items = load_json(Path(data))
        if not isinstance(raw_items, list):
            raise InvalidInputError(f"{data}: expected the LongMemEval list of questions")
        items = longmemeval_items(raw_items, split, limit)
        del raw_items
        groups = QUESTION_TYPES
    namespaces = list(dict.fromkeys(i.namespace for i in items))
    units = {u.namespace: u for u in parse(dataset, data) if u.namespace in set(namespaces)}

    timing = {"ingest_s": 0.0, "derive_s": 0.0}
    built = {"conversations": 0, "messages": 0, "jobs": 0, "failed": 0, "events": 0}

    def build(namespace: str) -> None:
        unit = units.pop(namespace, None)
        if unit is None:
            return
        started = time.perf_counter()
        written = write_units([unit], IngestReport(format=dataset, path=str(data)))
        timing["ingest_s"] += time.perf_counter() - started
        started = time.perf_counter()
        done = run_pending(namespace, provider=derive_provider)
        timing["derive_s"] += time.perf_counter() - started
        built["conversations"] += written.units
        built["messages"] += written.messages
        built.update(jobs=built["jobs"] + done.processed, failed=built["failed"] + done.failed)
        built["events"] += done.events

    rows: list[dict[str, Any]] = []
    workdir = tempfile.TemporaryDirectory(prefix="strata-bench-qa-") if db_url is None else None
    try:
        open_store(db_url or f"sqlite:///{Path(workdir.name) / 'qa.db'}")
        if dataset == "locomo":
            for n, namespace in enumerate(namespaces, 1):
                build(namespace)
                if progress:
                    progress(n, len(namespaces), f"derive {namespace}")
        for done, item in enumerate(items, 1):
            build(item.namespace)  # LongMemEval: this question's haystack; LoCoMo: built already
            rows.append(
                _ask(
                    item,
                    answer_model,
                    judge_model,
                    context_budget=context_budget,
                    max_tool_rounds=max_tool_rounds,
                    price=price,
                )
            )
            if progress:
                progress(done, len(items), item.id)
    finally:
        if workdir is not None:
            if db.obj is not None and not db.is_closed():
                db.close()
            workdir.cleanup()

    answer_usage = usage_acct.add(*(r["usage"]["answer"] for r in rows))
    judge_usage = usage_acct.add(*(r["usage"]["judge"] for r in rows))
    seconds = [r["seconds"] for r in rows]
    return {
        "benchmark": "qa",
        "dataset": dataset,
        "split": split,
        "limit": limit,
        "commit": commit,
        "answer_model": _model_name(answer_model),
        "judge_model": _model_name(judge_model),
        "derive_provider": derive_provider,
        "context_budget": context_budget,
        "max_tool_rounds": max_tool_rounds,
        "tools": list(QA_TOOLS),
        "questions": len(rows),
        "conversations": namespaces if dataset == "locomo" else len(namespaces),
        "accuracy": _accuracy(rows, groups),
        "usage": {
            "answer": _priced(answer_usage, price),
            "judge": _priced(judge_usage, price),
            "total": _priced(usage_acct.add(answer_usage, judge_usage), price),
        },
        "tool_calls": sum(len(r["tool_calls"]) for r in rows),
        "context_tokens_mean": round(sum(r.get("context_tokens", 0) for r in rows) / len(rows), 1) if rows else None,
        "timing": {
            "ingest_s": round(timing["ingest_s"], 2),
            "derive_s": round(timing["derive_s"], 2),
            "question_p50_s": _percentile(seconds, 50),
            "question_p95_s": _percentile(seconds, 95),
            "total_s": round(time.perf_counter() - run_started, 2),
        },
        "ingest": {"conversations": built["conversations"], "messages": built["messages"]},
        "derive": {"jobs": built["jobs"], "failed": built["failed"], "events": built["events"]},
        "per_question": rows,
    }


__all__ = [
    "ChatModel",
    "QA_TOOLS",
    "QaItem",
    "answer_question",
    "judge_answer",
    "locomo_items",
    "longmemeval_items",
    "parse_judge_label",
    "run_qa_bench",
]
