"""`strata bench window`: the context window on small scripted cases, with ablations.

A case is one JSON object per line:

    {"id": "...", "memories": [{"role": "user", "content": "...", "created_at": "2026-03-01T09:00:00Z"}, ...],
     "query": "...", "expected": ["8247"], "unexpected": ["6389"], "budget": 900, "limit": 4,
     "priming": [{"query": "...", "use": ["runbook"]}]}

Each case, under each ablation, gets a fresh store: the memories are stored as one conversation,
sealed and derived by the offline provider (the real path), the priming queries are run and the
cards whose text holds a ``use`` string are recorded as used (the only thing that links cards),
then the context is built for ``query``. A case is a hit when every ``expected`` string occurs in
the handed-over text and no ``unexpected`` string does (a stale value handed over as current is a
miss). Ablations (core.services.context.ABLATIONS): full, no_hygiene, no_associations,
similarity_only, no_recency.

This is a pipeline check on cases written by hand, not a quality score: the LoCoMo and LongMemEval
benches measure retrieval on data nobody here wrote.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from core.api import open_store
from core.db import db
from core.errors import InvalidInputError
from core.models import Event
from core.services.capture import append_messages
from core.services.context import ABLATIONS, auto_context
from core.services.derive import run_pending
from core.services.gate import assess, event_ref, open_batch, record_use
from core.services.spaces import configure_namespace
from core.services.trace_view import get_trace

NAMESPACE = "window-bench"
MAX_CASES = 10_000
MAX_MEMORIES = 2_000
DEFAULT_BUDGET = 900
DEFAULT_LIMIT = 4


@dataclass(frozen=True)
class Priming:
    query: str
    use: tuple[str, ...]


@dataclass(frozen=True)
class WindowCase:
    id: str
    memories: tuple[dict[str, Any], ...]
    query: str
    expected: tuple[str, ...]
    unexpected: tuple[str, ...] = ()
    budget: int = DEFAULT_BUDGET
    limit: int = DEFAULT_LIMIT
    priming: tuple[Priming, ...] = ()
    source: str = ""  # file:line, for error messages and the report


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidInputError(f"{where}: expected a list of non-empty strings")
    return tuple(value)


def _int(value: Any, where: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{where}: expected an integer {low}-{high}, got {value!r}")
    return value


def parse_case(raw: Any, where: str) -> WindowCase:
    """One case from its decoded JSON; InvalidInputError names ``where`` and the field at fault."""
    if not isinstance(raw, dict):
        raise InvalidInputError(f"{where}: a case is a JSON object, got {type(raw).__name__}")
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        raise InvalidInputError(f"{where}: id must be a non-empty string")
    memories = raw.get("memories")
    if not isinstance(memories, list) or not memories or len(memories) > MAX_MEMORIES:
        raise InvalidInputError(f"{where}: memories must be a list of 1-{MAX_MEMORIES} messages")
    for n, m in enumerate(memories):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise InvalidInputError(f"{where}: memories[{n}] needs role user or assistant")
        if not isinstance(m.get("content"), str) or not m["content"].strip():
            raise InvalidInputError(f"{where}: memories[{n}].content must be non-empty text")
    query = raw.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError(f"{where}: query must be non-empty text")
    priming = []
    for n, p in enumerate(raw.get("priming") or []):
        if not isinstance(p, dict) or not isinstance(p.get("query"), str) or not p["query"].strip():
            raise InvalidInputError(f"{where}: priming[{n}] needs a query")
        priming.append(Priming(p["query"], _strings(p.get("use"), f"{where}: priming[{n}].use")))
    return WindowCase(
        id=case_id,
        memories=tuple({k: m[k] for k in ("role", "content", "created_at") if k in m} for m in memories),
        query=query,
        expected=_strings(raw.get("expected"), f"{where}: expected"),
        unexpected=_strings(raw.get("unexpected"), f"{where}: unexpected"),
        budget=_int(raw.get("budget"), f"{where}: budget", DEFAULT_BUDGET, 64, 100_000),
        limit=_int(raw.get("limit"), f"{where}: limit", DEFAULT_LIMIT, 1, 100),
        priming=tuple(priming),
        source=where,
    )


def load_cases(path: str | Path) -> list[WindowCase]:
    """The cases of a JSONL file; a bad line raises InvalidInputError naming the file and line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"cannot read window cases {path}: {exc}") from None
    cases: list[WindowCase] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        case = parse_case(raw, where)
        if case.id in seen:
            raise InvalidInputError(f"{where}: case id {case.id!r} repeats an earlier line")
        seen.add(case.id)
        cases.append(case)
        if len(cases) > MAX_CASES:
            raise InvalidInputError(f"{path}: more than {MAX_CASES} cases")
    if not cases:
        raise InvalidInputError(f"{path}: no cases")
    return cases


def bundled_cases() -> list[Path]:
    """The case files that ship with Strata: window hygiene and the current-truth fixture."""
    folder = Path(__file__).parent / "window_cases"
    return [folder / name for name in ("window.jsonl", "current_truth.jsonl")]


@dataclass
class CaseResult:
    id: str
    hit: bool
    selected: int
    candidates: int
    tokens: int
    edges_applied: int
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)


@dataclass
class AblationRun:
    ablation: str
    cases: list[CaseResult]
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        n = len(self.cases) or 1
        return {
            "ablation": self.ablation,
            "cases": len(self.cases),
            "hit_rate": round(sum(c.hit for c in self.cases) / n, 4),
            "mean_candidates": round(sum(c.candidates for c in self.cases) / n, 2),
            "mean_selected": round(sum(c.selected for c in self.cases) / n, 2),
            "mean_tokens": round(sum(c.tokens for c in self.cases) / n, 1),
            "mean_association_edges_applied": round(sum(c.edges_applied for c in self.cases) / n, 2),
            "misses": [{"id": c.id, "missing": c.missing, "stale": c.stale} for c in self.cases if not c.hit],
            "seconds": round(self.seconds, 3),
        }


def _card_texts(event_ids: Sequence[int]) -> dict[int, str]:
    return {e.id: f"{e.title}\n{e.summary}" for e in Event.select().where(Event.id.in_(list(event_ids)))}


def _prime(priming: Priming, number: int, limit: int, budget: int) -> None:
    """An agent that asked ``priming.query`` and used the handed-over cards holding a ``use`` string."""
    ctx = auto_context(NAMESPACE, priming.query, max_events=limit, token_budget=budget)
    texts = _card_texts(ctx.event_ids)
    used = [i for i in ctx.event_ids if any(u.casefold() in texts[i].casefold() for u in priming.use)]
    if not used:
        return
    refs = [event_ref(i) for i in used]
    specs = [(r, [i]) for r, i in zip(refs, used)]
    batch = open_batch(NAMESPACE, "search_events", priming.query, specs, session=f"prime-{number}", budget=None)
    assess(NAMESPACE, batch.id, "sufficient", refs, "used", "", "answer", session=f"prime-{number}")
    record_use(NAMESPACE, batch.id, refs, receipt_id=f"prime-{number}", session=f"prime-{number}")


def run_case(case: WindowCase, ablation: str, path: Path) -> CaseResult:
    open_store(f"sqlite:///{path}")
    try:
        configure_namespace(NAMESPACE, block_turn_size=4)
        append_messages(NAMESPACE, "case", list(case.memories), close_thread=True)
        run_pending(NAMESPACE, provider="offline")
        for number, priming in enumerate(case.priming):
            _prime(priming, number, case.limit, case.budget)
        ctx = auto_context(
            NAMESPACE, case.query, max_events=case.limit, token_budget=case.budget, window=ABLATIONS[ablation]
        )
        trace = get_trace(ctx.trace_id)
        text = ctx.text.casefold()
        missing = [e for e in case.expected if e.casefold() not in text]
        stale = [u for u in case.unexpected if u.casefold() in text]
        return CaseResult(
            id=case.id,
            hit=not missing and not stale,
            selected=len(ctx.event_ids),
            candidates=sum(1 for c in trace.candidates if c["ref"].startswith("event:")),
            tokens=ctx.tokens,
            edges_applied=int(trace.detail.get("associations", {}).get("edges_applied", 0)),
            missing=missing,
            stale=stale,
        )
    finally:
        if not db.is_closed():
            db.close()


def run_window_bench(
    cases: Sequence[WindowCase],
    ablations: Sequence[str] = tuple(ABLATIONS),
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[str, Any]:
    """Every case under every ablation; the report has one run per ablation."""
    unknown = [a for a in ablations if a not in ABLATIONS]
    if unknown:
        raise InvalidInputError(f"unknown ablation(s) {', '.join(unknown)}; known: {', '.join(ABLATIONS)}")
    total = len(cases) * len(ablations)
    runs = []
    done = 0
    with tempfile.TemporaryDirectory(prefix="strata-window-") as tmp:
        for ablation in ablations:
            started = time.perf_counter()
            results = []
            for case in cases:
                if progress:
                    progress(done, total, f"{ablation}: {case.id}")
                results.append(run_case(case, ablation, Path(tmp) / f"{done}.db"))
                done += 1
            runs.append(AblationRun(ablation, results, time.perf_counter() - started))
    if progress:
        progress(total, total, "done")
    report_runs = [r.as_dict() for r in runs]
    best = max(r["hit_rate"] for r in report_runs)
    return {
        "benchmark": "window",
        "cases": len(cases),
        "runs": report_runs,
        "full_is_best": report_runs[0]["ablation"] != "full" or report_runs[0]["hit_rate"] >= best,
    }


__all__ = ["WindowCase", "bundled_cases", "load_cases", "parse_case", "run_case", "run_window_bench"]
