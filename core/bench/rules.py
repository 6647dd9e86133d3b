"""`strata bench rules`: the offline rules against a golden corpus of labelled sentences.

Each case of ``core/bench/rules_corpus/*.jsonl`` is a short conversation (turns with speakers and
dates) and what a careful reader expects from it. The case runs through the offline provider the
way a store would run it: each session is one block, extracted with the cards of the earlier
sessions as its timeline (``extract_events_offline``), then projected into the graph with the
nodes of the earlier sessions as context (``project_graph_offline``). No store, no model: a run
takes well under a few seconds.

Families, and what precision and recall count in each (``tp`` right, ``fp`` said but wrong,
``fn`` expected but missing; precision = tp / (tp + fp), recall = tp / (tp + fn)):

- ``type``: the type of the card from the case's target turn; one item a case. A case whose turn
  gives no card is a miss (fn), a wrong type is both an fp and an fn.
- ``time``: when the target card says it happened: its start and precision must both match. A card
  dated when the case expects no time ("mentioned, not happened") is an fp.
- ``status``: planned, occurred, ongoing, cancelled: exact, like ``type``.
- ``participants``: the people on the target card, as sets: the card's participant names that are
  people (a speaker, or a person node of the projection), against the expected people.
- ``non_persons``: of the names a case labels, the ones not held as a person node; a labelled
  non-person kept out is right, a labelled person kept out is an fp, a non-person held as a person
  is a miss.
- ``facts``: current graph triples (subject, relation, value), normalised, symmetric relations in
  either direction; every triple the projection states in a scored relation counts.
- ``supersessions``: facts a newer statement ends (stated as ended, or replaced in a one-at-a-time
  slot such as ``lives_in``), and event cards a later correction supersedes (turn pairs).

A case is *correct* in a family when it has no fp and no fn there; ``baseline.json`` holds the
number of correct cases per family that a change must not lower.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterable, Sequence

from core.bench import git_commit
from core.eventtypes import EVENT_TYPES, PRECISIONS, TIME_STATUSES
from core.providers.offline_events import extract_events_offline
from core.providers.offline_graph import project_graph_offline

CORPUS = Path(__file__).resolve().parent / "rules_corpus"
BASELINE = CORPUS / "baseline.json"
FAMILIES = ("type", "time", "status", "participants", "non_persons", "facts", "supersessions")
LANGS = ("en", "zh")
NON_PERSON_KINDS = ("place", "product", "org", "weekday", "pet", "title", "other")
# Relations read in either direction: "Ana sibling_of Maya" is "Maya sibling_of Ana".
SYMMETRIC = frozenset(
    {
        "sibling_of",
        "friend_of",
        "partner_of",
        "works_with",
        "neighbour_of",
        "lives_with",
        "relative_of",
        "knows",
        "married_to",
    }
)
# Projection records that restate others and are not scored as facts: "knows" joins any two people
# named together.
UNSCORED = frozenset({"knows"})
# A history edge that restates an ended one-at-a-time fact ("lived_in" beside an ended "lives_in").
HISTORY_OF = {"lived_in": "lives_in", "worked_at": "works_at"}

_EXPECT_KEYS = {"type", "time", "status", "participants", "people", "not_people", "facts", "ends", "supersedes", "turn"}


class CorpusError(ValueError):
    """A corpus line that is not a well-formed case; the message names the file and line."""


# ----------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Case:
    id: str
    lang: str
    turns: tuple[dict[str, Any], ...]  # {speaker, text, created_at, session, role}
    expect: dict[str, Any]
    file: str
    line: int
    note: str = ""

    @property
    def target(self) -> int:
        """The 1-based turn whose card the card families read: ``expect.turn``, else the last turn."""
        return int(self.expect.get("turn") or len(self.turns))

    def families(self) -> list[str]:
        keys = set(self.expect)
        return [f for f in FAMILIES if keys & _FAMILY_KEYS[f]]


_FAMILY_KEYS = {
    "type": {"type"},
    "time": {"time"},
    "status": {"status"},
    "participants": {"participants"},
    "non_persons": {"people", "not_people"},
    "facts": {"facts"},
    "supersessions": {"ends", "supersedes"},
}


def _vocab() -> tuple[Sequence[str], Sequence[str], Sequence[str]]:

    return EVENT_TYPES, PRECISIONS, TIME_STATUSES


def _iso(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise CorpusError(f"{where}: a date is an ISO string, got {value!r}")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise CorpusError(f"{where}: {value!r} is not an ISO date or time") from None


def _triple(value: Any, where: str) -> tuple[str, str, Any]:
    if (
        not isinstance(value, list)
        or len(value) != 3
        or not all(isinstance(v, str) and v.strip() for v in value[:2])
        or not (isinstance(value[2], str) and value[2].strip() or _strings(value[2]))
    ):
        raise CorpusError(
            f"{where}: a fact is [subject, relation, value] (value: a string or a list of "
            f"acceptable strings), got {value!r}"
        )
    return value[0], value[1], value[2]


def _strings(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v.strip() for v in value)


def parse_case(raw: Any, file: str, line: int) -> Case:
    """One corpus line as a ``Case``; anything malformed raises ``CorpusError`` naming file and line."""
    where = f"{file}:{line}"
    if not isinstance(raw, dict):
        raise CorpusError(f"{where}: a case is a JSON object")
    unknown = set(raw) - {"id", "lang", "date", "turns", "expect", "note"}
    if unknown:
        raise CorpusError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    cid = raw.get("id")
    if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", cid):
        raise CorpusError(f"{where}: id must be lower-case letters, digits, '.', '_' or '-', got {cid!r}")
    where = f"{where} ({cid})"
    lang = raw.get("lang")
    if lang not in LANGS:
        raise CorpusError(f"{where}: lang must be one of {', '.join(LANGS)}, got {lang!r}")
    base = _iso(raw.get("date"), f"{where}: date")
    turns_raw = raw.get("turns")
    if not isinstance(turns_raw, list) or not turns_raw:
        raise CorpusError(f"{where}: turns must be a non-empty list")
    turns = []
    for i, turn in enumerate(turns_raw, 1):
        if (
            not isinstance(turn, dict)
            or not isinstance(turn.get("speaker"), str)
            or not turn["speaker"].strip()
            or not isinstance(turn.get("text"), str)
            or not turn["text"].strip()
        ):
            raise CorpusError(f"{where}: turn {i} needs a speaker and a text")
        extra = set(turn) - {"speaker", "text", "date", "session", "role"}
        if extra:
            raise CorpusError(f"{where}: turn {i}: unknown field(s) {', '.join(sorted(extra))}")
        when = _iso(turn["date"], f"{where}: turn {i} date") if "date" in turn else base + timedelta(minutes=i - 1)
        session = turn.get("session", 1)
        if not isinstance(session, int) or isinstance(session, bool) or session < 1:
            raise CorpusError(f"{where}: turn {i}: session is a number from 1")
        role = turn.get("role", "user")
        if role not in ("user", "assistant"):
            raise CorpusError(f"{where}: turn {i}: role is user or assistant")
        turns.append(
            {
                "speaker": turn["speaker"].strip(),
                "text": turn["text"],
                "created_at": when.isoformat(),
                "session": session,
                "role": role,
            }
        )
    if [t["session"] for t in turns] != sorted(t["session"] for t in turns):
        raise CorpusError(f"{where}: sessions must not go back in time (turn order)")
    expect = raw.get("expect")
    if not isinstance(expect, dict) or not set(expect) - {"turn"}:
        raise CorpusError(
            f"{where}: expect must name at least one expectation ({', '.join(sorted(_EXPECT_KEYS - {'turn'}))})"
        )
    unknown = set(expect) - _EXPECT_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown expectation(s) {', '.join(sorted(unknown))}")
    _check_expect(expect, len(turns), where)
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise CorpusError(f"{where}: note is a string")
    return Case(cid, lang, tuple(turns), expect, file, line, note)


def _check_expect(expect: dict[str, Any], n_turns: int, where: str) -> None:
    types, precisions, statuses = _vocab()
    turn = expect.get("turn", n_turns)
    if not isinstance(turn, int) or isinstance(turn, bool) or not 1 <= turn <= n_turns:
        raise CorpusError(f"{where}: turn must be a turn number from 1 to {n_turns}")
    if "type" in expect and expect["type"] not in types:
        raise CorpusError(f"{where}: type must be one of {', '.join(types)}, got {expect['type']!r}")
    if "status" in expect and expect["status"] not in statuses:
        raise CorpusError(f"{where}: status must be one of {', '.join(statuses)}, got {expect['status']!r}")
    if "time" in expect:
        t = expect["time"]
        if t is not None:
            if not isinstance(t, dict) or set(t) - {"start", "precision"} or "start" not in t or "precision" not in t:
                raise CorpusError(f"{where}: time is null (no happened time) or {{start, precision}}")
            if t["precision"] not in precisions or t["precision"] == "unknown":
                raise CorpusError(f"{where}: time precision must be one of {', '.join(precisions[:-1])}")
            starts = t["start"] if isinstance(t["start"], list) else [t["start"]]
            if not starts or not all(
                isinstance(s, str) and re.fullmatch(r"\d{4}(-\d\d(-\d\d(T\d\d:\d\d.*)?)?)?", s) for s in starts
            ):
                raise CorpusError(f"{where}: time start is an ISO date (or a list of acceptable ones)")
    if "participants" in expect and not (
        isinstance(expect["participants"], list)
        and all(isinstance(p, str) and p.strip() or _strings(p) for p in expect["participants"])
    ):
        raise CorpusError(f"{where}: participants is a list of names (a name may be a list of acceptable spellings)")
    if "people" in expect and not _strings(expect["people"]):
        raise CorpusError(f"{where}: people is a list of names")
    if "not_people" in expect:
        value = expect["not_people"]
        if (
            not isinstance(value, dict)
            or not value
            or set(value) - set(NON_PERSON_KINDS)
            or not all(_strings(v) for v in value.values())
        ):
            raise CorpusError(f"{where}: not_people maps a kind ({', '.join(NON_PERSON_KINDS)}) to a list of names")
    for key in ("facts", "ends"):
        if key in expect:
            if not isinstance(expect[key], list):
                raise CorpusError(f"{where}: {key} is a list of [subject, relation, value]")
            for item in expect[key]:
                _triple(item, f"{where}: {key}")
    if "supersedes" in expect:
        pairs = expect["supersedes"]
        if not isinstance(pairs, list) or not all(
            isinstance(p, list)
            and len(p) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= n_turns for n in p)
            and p[0] > p[1]
            for p in pairs
        ):
            raise CorpusError(f"{where}: supersedes is a list of [later turn, earlier turn] (numbers from 1)")


def load_corpus(folder: str | Path = CORPUS) -> list[Case]:
    """Every case of ``folder/*.jsonl`` in file and line order; ids must be unique across files.
    Blank lines and lines starting with ``//`` are skipped."""
    folder = Path(folder)
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise CorpusError(f"{folder}: no *.jsonl corpus files")
    cases: list[Case] = []
    seen: dict[str, str] = {}
    for path in files:
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not text.strip() or text.lstrip().startswith("//"):
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path.name}:{number}: not valid JSON ({exc.msg}, column {exc.colno})") from None
            case = parse_case(raw, path.name, number)
            if case.id in seen:
                raise CorpusError(f"{path.name}:{number}: id {case.id} already used at {seen[case.id]}")
            seen[case.id] = f"{path.name}:{number}"
            cases.append(case)
    return cases


# ----------------------------------------------------------------------------- running the rules


def norm(text: Any) -> str:
    """A name or value as compared: NFKC, case-folded, possessive and leading article off, punctuation
    and spaces collapsed ("the Lisbon office." and "Lisbon office" are one value)."""
    folded = unicodedata.normalize("NFKC", str(text)).casefold()
    folded = re.sub(r"['’]s\b", "", folded)
    folded = re.sub(r"[^\w\s+#-]", " ", folded)
    parts = folded.replace("_", " ").split()
    while len(parts) > 1 and parts[0] in ("the", "a", "an", "my", "our"):
        parts = parts[1:]
    return " ".join(parts)


def _relation(text: str) -> str:
    return re.sub(r"[\s\-_]+", "_", unicodedata.normalize("NFKC", text).casefold().strip()).strip("_")


@dataclass
class Derived:
    """What the rules made of one case."""

    # {id, turn, sources, type, status, start, precision, participants, supersedes, title}
    cards: list[dict[str, Any]] = field(default_factory=list)
    persons: set[str] = field(default_factory=set)  # normalised names (and aliases) of person nodes
    # (subject, relation, value, status, order): every fact and edge of the projections, order = newest source id
    records: list[tuple[str, str, str, str, int]] = field(default_factory=list)


def _functional(relation: str) -> bool:
    try:
        # a bench run may be against an older checkout, where this import fails
        from core.services.graph_vocab import is_functional
    except ImportError:  # the older layout kept it beside the applier
        from core.services.graph import is_functional
    return is_functional(relation)


def derive(case: Case) -> Derived:
    """Run the offline provider on ``case``: one block and one graph batch per session."""

    out = Derived()
    speakers = list(dict.fromkeys(t["speaker"] for t in case.turns))
    timeline: list[dict[str, Any]] = []
    context_nodes: list[dict[str, Any]] = []
    sessions = sorted({t["session"] for t in case.turns})
    for session in sessions:
        messages = [
            {"id": i, "role": t["role"], "speaker": t["speaker"], "created_at": t["created_at"], "text": t["text"]}
            for i, t in enumerate(case.turns, 1)
            if t["session"] == session
        ]
        block_speakers = list(dict.fromkeys(m["speaker"] for m in messages))
        extracted = extract_events_offline(
            {
                "target": {"messages": messages},
                "speakers": block_speakers,
                "timeline": [dict(item) for item in timeline],
            }
        )
        block_ids: list[int] = []
        batch: list[dict[str, Any]] = []
        for card in extracted.get("events", []):
            cid = len(out.cards) + 1
            block_ids.append(cid)
            temporal = card.get("temporal") or {}
            supersedes = list(temporal.get("supersedes_event_ids") or [])
            supersedes += [
                block_ids[i] for i in temporal.get("supersedes_earlier") or [] if 0 <= i < len(block_ids) - 1
            ]
            sources = [s for s in card.get("source_message_ids") or [] if isinstance(s, int)]
            precision = temporal.get("precision") or "unknown"
            out.cards.append(
                {
                    "id": cid,
                    "turn": max(sources) if sources else None,
                    "sources": sources,
                    "type": temporal.get("event_type") or "other",
                    "status": temporal.get("status") or "unknown",
                    "start": temporal.get("happened_start") if precision != "unknown" else None,
                    "precision": precision,
                    "participants": list(temporal.get("participants") or []),
                    "supersedes": supersedes,
                    "title": card.get("title", ""),
                }
            )
            item = {
                "id": cid,
                "title": card.get("title", ""),
                "summary": card.get("summary", ""),
                "tags": list(card.get("tags") or []),
                "quotes": list(card.get("quotes") or []),
                "temporal": {k: v for k, v in temporal.items() if not k.startswith("supersedes")},
                "participants": list(temporal.get("participants") or []),
                "event_type": temporal.get("event_type"),
                "scope": card.get("scope", "user"),
                "criticality": card.get("criticality", "routine"),
                "status": "active",
            }
            batch.append(item)
            timeline.append(
                {
                    "id": cid,
                    "title": item["title"],
                    "summary": item["summary"],
                    "participants": item["participants"],
                    "event_type": item["event_type"],
                    "status": "active",
                    "happened_start": temporal.get("happened_start"),
                    "mentioned_at": temporal.get("mentioned_at"),
                }
            )
        if not batch:
            continue
        proposal = project_graph_offline(
            {"events": batch, "nodes": [dict(n) for n in context_nodes], "edges": [], "speakers": speakers}
        )
        names = {}
        for node in proposal.get("nodes", []):
            names[node["ref"]] = node["name"]
            if node.get("type") == "person":
                out.persons.update(norm(n) for n in [node["name"], *(node.get("aliases") or [])])
            for fact in node.get("facts", []):
                order = max(fact.get("source_event_ids") or [0])
                out.records.append(
                    (node["name"], _relation(fact["key"]), str(fact["value"]), fact.get("status", "active"), order)
                )
            context_nodes.append(
                {
                    "id": len(context_nodes) + 1,
                    "name": node["name"],
                    "type": node.get("type"),
                    "aliases": list(node.get("aliases") or []),
                    "tags": [],
                    "facts": [
                        {"key": f["key"], "value": f["value"], "status": f.get("status", "active")}
                        for f in node.get("facts", [])
                    ],
                }
            )
        for edge in proposal.get("edges", []):
            if edge["from_ref"] in names and edge["to_ref"] in names:
                out.records.append(
                    (
                        names[edge["from_ref"]],
                        _relation(edge["relation"]),
                        names[edge["to_ref"]],
                        edge.get("status", "active"),
                        max(edge.get("source_event_ids") or [0]),
                    )
                )
    return out


# ----------------------------------------------------------------------------- scoring


@dataclass
class Score:
    """Counts of one family (or one kind of it): right, said but wrong, expected but missing."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: "Score") -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    @property
    def precision(self) -> float | None:
        """tp / (tp + fp); None when nothing was said."""
        said = self.tp + self.fp
        return round(self.tp / said, 3) if said else None

    @property
    def recall(self) -> float | None:
        """tp / (tp + fn); None when nothing was expected."""
        expected = self.tp + self.fn
        return round(self.tp / expected, 3) if expected else None

    def as_dict(self) -> dict[str, Any]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": self.precision, "recall": self.recall}


@dataclass
class CaseResult:
    """One case in one family: its counts by kind, and what went wrong (empty when correct)."""

    case_id: str
    family: str
    lang: str
    kinds: dict[str, Score] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def count(self, kind: str, tp: int = 0, fp: int = 0, fn: int = 0) -> None:
        self.kinds.setdefault(kind, Score()).add(Score(tp, fp, fn))

    @property
    def score(self) -> Score:
        total = Score()
        for s in self.kinds.values():
            total.add(s)
        return total

    @property
    def correct(self) -> bool:
        s = self.score
        return s.fp == 0 and s.fn == 0


@dataclass
class FamilyReport:
    family: str
    cases: int = 0
    correct: int = 0
    score: Score = field(default_factory=Score)
    kinds: dict[str, Score] = field(default_factory=dict)
    langs: dict[str, Score] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)  # {id, problems}

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "correct": self.correct,
            **self.score.as_dict(),
            "kinds": {k: v.as_dict() for k, v in sorted(self.kinds.items())},
            "langs": {k: v.as_dict() for k, v in sorted(self.langs.items())},
            "failures": self.failures,
        }


@dataclass
class RulesReport:
    cases: int
    chinese: int
    seconds: float
    families: dict[str, FamilyReport]
    corpus: str = ""

    def as_dict(self) -> dict[str, Any]:

        return {
            "benchmark": "rules",
            "corpus": self.corpus,
            "commit": git_commit(),
            "cases": self.cases,
            "chinese_cases": self.chinese,
            "seconds": self.seconds,
            "families": {name: fam.as_dict() for name, fam in self.families.items()},
        }

    def correct_counts(self) -> dict[str, int]:
        return {name: fam.correct for name, fam in self.families.items()}


def aggregate(results: Iterable[CaseResult]) -> dict[str, FamilyReport]:
    """Family reports from per-case results: counts summed over cases, by kind and by language."""
    families = {name: FamilyReport(name) for name in FAMILIES}
    for result in results:
        fam = families.setdefault(result.family, FamilyReport(result.family))
        fam.cases += 1
        score = result.score
        fam.score.add(score)
        fam.langs.setdefault(result.lang, Score()).add(score)
        for kind, s in result.kinds.items():
            fam.kinds.setdefault(kind, Score()).add(s)
        if result.correct:
            fam.correct += 1
        else:
            fam.failures.append({"id": result.case_id, "problems": result.problems})
    return families


def _card_of(case: Case, derived: Derived) -> dict[str, Any] | None:
    """The first card citing the case's target turn."""
    return next((c for c in derived.cards if case.target in c["sources"]), None)


def _exact(result: CaseResult, kind: str, expected: str, got: str | None, what: str) -> None:
    if got == expected:
        result.count(kind, tp=1)
    elif got is None:
        result.count(kind, fn=1)
        result.problems.append(f"{what}: no card, expected {expected}")
    else:
        result.count(kind, fp=1, fn=1)
        result.problems.append(f"{what}: {got}, expected {expected}")


def _is_person(name: str, case: Case, derived: Derived) -> bool:
    key = norm(name)
    return key in {norm(t["speaker"]) for t in case.turns} or key in derived.persons


def _matches(expected: Any, got: str) -> bool:
    options = expected if isinstance(expected, list) else [expected]
    return norm(got) in {norm(o) for o in options}


def _same_triple(exp: tuple[str, str, Any], subject: str, relation: str, value: str) -> bool:
    e_subject, e_relation, e_value = exp
    if _relation(e_relation) != relation:
        return False
    if norm(e_subject) == norm(subject) and _matches(e_value, value):
        return True
    return (
        relation in SYMMETRIC
        and isinstance(e_value, str)
        and norm(e_value) == norm(subject)
        and norm(e_subject) == norm(value)
    )


def _ended_records(derived: Derived) -> list[tuple[str, str, str]]:
    """Records the projections end: stated as ended, or an older value in a one-at-a-time slot whose
    newer value is current (what the store's applier then ends)."""
    ended = {(s, r, v) for s, r, v, status, _ in derived.records if status != "active"}
    current = [(s, r, v, order) for s, r, v, status, order in derived.records if status == "active"]
    for s, r, v, order in current:
        if not _functional(r):
            continue
        if any(
            norm(s2) == norm(s) and r2 == r and norm(v2) != norm(v) and order2 > order for s2, r2, v2, order2 in current
        ):
            ended.add((s, r, v))
    return sorted(ended)


def score_case(case: Case, derived: Derived) -> list[CaseResult]:
    """The case's results, one per family it carries."""
    exp = case.expect
    out: list[CaseResult] = []
    card = _card_of(case, derived)
    for family in case.families():
        r = CaseResult(case.id, family, case.lang)
        out.append(r)
        if family == "type":
            _exact(r, exp["type"], exp["type"], card and card["type"], "type")
        elif family == "status":
            _exact(r, exp["status"], exp["status"], card and card["status"], "status")
        elif family == "time":
            want = exp["time"]
            kind = want["precision"] if want else "none"
            got = (card["start"], card["precision"]) if card and card["start"] else None
            if want is None:
                if got:
                    r.count(kind, fp=1)
                    r.problems.append(f"time: dated {got[0]} ({got[1]}), expected no happened time")
                else:
                    r.count(kind)
                continue
            starts = want["start"] if isinstance(want["start"], list) else [want["start"]]
            if got and got[1] == want["precision"] and any(_same_start(s, got[0]) for s in starts):
                r.count(kind, tp=1)
            else:
                r.count(kind, fp=1 if got else 0, fn=1)
                shown = f"{got[0]} ({got[1]})" if got else ("no card" if card is None else "no time")
                r.problems.append(f"time: {shown}, expected {' or '.join(starts)} ({want['precision']})")
        elif family == "participants":
            said = {norm(p): p for p in (card["participants"] if card else []) if _is_person(p, case, derived)}
            used: set[str] = set()
            missing = []
            for spellings in exp["participants"]:
                options = [norm(o) for o in (spellings if isinstance(spellings, list) else [spellings])]
                hit = next((o for o in options if o in said and o not in used), None)
                if hit is None:
                    r.count("person", fn=1)
                    missing.append(spellings if isinstance(spellings, str) else spellings[0])
                else:
                    used.add(hit)
                    r.count("person", tp=1)
            extra = [name for key, name in said.items() if key not in used]
            r.count("person", fp=len(extra))
            if card is None:
                r.problems.append("participants: no card")
            if extra:
                r.problems.append(f"participants: also {', '.join(extra)}")
            if missing:
                r.problems.append(f"participants: missing {', '.join(missing)}")
        elif family == "non_persons":
            for name in exp.get("people", []):
                if _is_person(name, case, derived):
                    r.count("person")
                else:
                    r.count("person", fp=1)
                    r.problems.append(f"non_persons: {name} is a person, not kept as one")
            for kind, names in exp.get("not_people", {}).items():
                for name in names:
                    if _is_person(name, case, derived):
                        r.count(kind, fn=1)
                        r.problems.append(f"non_persons: {name} ({kind}) held as a person")
                    else:
                        r.count(kind, tp=1)
        elif family == "facts":
            _score_triples(
                r,
                [_triple(t, "") for t in exp["facts"]],
                [(s, rel, v) for s, rel, v, status, _ in derived.records if status == "active" and rel not in UNSCORED],
                "facts",
                history=[_triple(t, "") for t in exp.get("ends", [])],
            )
        elif family == "supersessions":
            if "ends" in exp:
                _score_triples(r, [_triple(t, "") for t in exp["ends"]], _ended_records(derived), "ends", kind="fact")
            if "supersedes" in exp:
                _score_cards(r, case, derived)
    return out


def _same_start(expected: str, got: str) -> bool:
    if "T" in expected:
        return got[:16] == expected[:16]
    return got == expected


def _score_triples(
    r: CaseResult,
    expected: list[tuple[str, str, Any]],
    said: list[tuple[str, str, str]],
    what: str,
    kind: str | None = None,
    history: Sequence[tuple[str, str, Any]] = (),
) -> None:
    unique: list[tuple[str, str, str]] = []
    for s, rel, v in said:  # a fact and its edge state one triple
        if not any(norm(s) == norm(s2) and rel == r2 and norm(v) == norm(v2) for s2, r2, v2 in unique):
            unique.append((s, rel, v))
    matched: set[int] = set()
    for e in expected:
        hit = next((i for i, (s, rel, v) in enumerate(unique) if i not in matched and _same_triple(e, s, rel, v)), None)
        label = kind or _relation(e[1])
        if hit is None:
            r.count(label, fn=1)
            r.problems.append(f"{what}: missing {e[0]} {e[1]} {e[2] if isinstance(e[2], str) else e[2][0]}")
        else:
            matched.add(hit)
            r.count(label, tp=1)
    for i, (s, rel, v) in enumerate(unique):
        if i in matched:
            continue
        if rel in HISTORY_OF and any(_same_triple(h, s, HISTORY_OF[rel], v) for h in history):
            continue  # "lived_in Berlin" restates the ended "lives_in Berlin" the case expects
        r.count(kind or rel, fp=1)
        r.problems.append(f"{what}: also {s} {rel} {v}")


def _score_cards(r: CaseResult, case: Case, derived: Derived) -> None:
    turn_of = {c["id"]: c["turn"] for c in derived.cards}
    said = {(c["turn"], turn_of.get(old)) for c in derived.cards for old in c["supersedes"]}
    wanted = {tuple(p) for p in case.expect["supersedes"]}
    for pair in sorted(wanted):
        if pair in said:
            r.count("card", tp=1)
        else:
            r.count("card", fn=1)
            r.problems.append(f"supersedes: turn {pair[0]} should supersede turn {pair[1]}")
    for pair in sorted(said - wanted):
        r.count("card", fp=1)
        r.problems.append(f"supersedes: turn {pair[0]} supersedes turn {pair[1]}, not expected")


def run_rules(folder: str | Path = CORPUS, families: Sequence[str] | None = None) -> RulesReport:
    """Run every case of the corpus and score it per family."""
    started = time.perf_counter()
    cases = load_corpus(folder)
    results: list[CaseResult] = []
    for case in cases:
        wanted = [f for f in case.families() if families is None or f in families]
        if wanted:
            results.extend(r for r in score_case(case, derive(case)) if r.family in wanted)
    report = aggregate(results)
    if families is not None:
        report = {name: fam for name, fam in report.items() if name in families}
    return RulesReport(
        cases=len(cases),
        chinese=sum(c.lang == "zh" for c in cases),
        seconds=round(time.perf_counter() - started, 3),
        families=report,
        corpus=str(folder),
    )


def load_baseline(path: str | Path = BASELINE) -> dict[str, int]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: int(n) for name, n in data["correct"].items()}


def write_baseline(report: RulesReport, path: str | Path = BASELINE) -> None:
    """Record the report's correct cases per family as the floor a later change must not go below."""
    data = {
        "about": "correct cases per family of `strata bench rules`; tests/core/test_bench_rules.py fails when "
        "a family falls below. Raise it (strata bench rules --update-baseline) when a change "
        "improves a family.",
        "correct": report.correct_counts(),
        "cases": {name: fam.cases for name, fam in report.families.items()},
    }
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def below_baseline(report: RulesReport, baseline: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Families whose correct cases fell below the baseline: name -> (now, baseline)."""
    now = report.correct_counts()
    return {name: (now.get(name, 0), want) for name, want in baseline.items() if now.get(name, 0) < want}


__all__ = [
    "CORPUS",
    "FAMILIES",
    "Case",
    "CaseResult",
    "CorpusError",
    "Derived",
    "FamilyReport",
    "RulesReport",
    "Score",
    "aggregate",
    "below_baseline",
    "derive",
    "load_baseline",
    "load_corpus",
    "parse_case",
    "run_rules",
    "score_case",
    "write_baseline",
]
