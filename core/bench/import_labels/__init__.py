"""A hand-labelled import set: what another assistant's export of a known conversation would
really say, and which decisions against Strata's memory of that conversation are acceptable.

One JSON file per conversation (``conv-30.json`` … ``demo.json``), each a list of items::

    {"id": "conv-30/017", "candidate": {…v2 candidate…}, "kind": "paraphrase",
     "acceptable": [{"action": "merge", "targets": ["D3:5"]}, {"action": "ignore"}], "note": "…"}

Targets are the external ids of the messages (LoCoMo ``dia_id``s, demo message ids) that the
right stored event cites, never database ids, so the labels outlive any store. How the set was
written is in README.md next to this file.

Everything here is pure (no database): loading, the dev/test split, the v2 export of a
conversation's items, and scoring a list of decisions. ``core.bench.import_labelled`` builds
the store and runs the previews.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from core.errors import InvalidInputError

LABEL_DIR = Path(__file__).resolve().parent
ACTIONS = ("add", "merge", "supersede", "conflict", "ignore")
TARGETED = ("merge", "supersede", "conflict")
KINDS = (
    "paraphrase",
    "detail",
    "other-person",
    "shared-words",
    "update-dated",
    "update-undated",
    "new-preference",
    "new-instruction",
    "contradiction",
    "in-file-duplicate",
    "chatter",
    "new-fact",
)
SPLITS = ("dev", "test", "all")
DEMO = "demo"
# Lower edges of the reliability buckets; the default threshold (0.85) is one of them so the
# table shows on its own what the auto-applied decisions are worth.
BUCKETS = (0.0, 0.5, 0.7, 0.85, 0.95)


@dataclass(frozen=True)
class Acceptable:
    action: str
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Item:
    id: str
    conversation: str
    candidate: dict[str, Any]
    kind: str
    acceptable: tuple[Acceptable, ...]
    note: str

    @property
    def split(self) -> str:
        return split_of(self.id)

    @property
    def actions(self) -> tuple[str, ...]:
        return tuple(a.action for a in self.acceptable)


@dataclass(frozen=True)
class Decision:
    """What the preview decided for one item: the action, the stored events it targets (database
    ids of this run's store) and the confidence."""

    action: str
    targets: tuple[int, ...] = ()
    confidence: float | None = None


def split_of(item_id: str) -> str:
    """dev when the first hex digit of sha256(item id) is 0-7, else test. The rule reads only the
    id, which is fixed when an item is written, so no label or decision can move an item."""
    return "dev" if hashlib.sha256(item_id.encode("utf-8")).hexdigest()[0] in "01234567" else "test"


def _fail(where: str, message: str) -> None:
    raise InvalidInputError(f"{where}: {message}")


def _item(raw: Any, conversation: str, where: str) -> Item:
    if not isinstance(raw, dict):
        _fail(where, "expected an object")
    missing = [k for k in ("id", "candidate", "kind", "acceptable", "note") if k not in raw]
    if missing:
        _fail(where, f"missing {', '.join(missing)}")
    item_id = raw["id"]
    if not isinstance(item_id, str) or not item_id.startswith(f"{conversation}/"):
        _fail(where, f"id {item_id!r} must start with {conversation + '/'!r}")
    where = f"{where} ({item_id})"
    if raw["kind"] not in KINDS:
        _fail(where, f"kind {raw['kind']!r} is not one of {', '.join(KINDS)}")
    if not isinstance(raw["candidate"], dict):
        _fail(where, "candidate must be an object")
    if not isinstance(raw["note"], str) or not raw["note"].strip():
        _fail(where, "note must say why")
    entries = raw["acceptable"]
    if not isinstance(entries, list) or not entries:
        _fail(where, "acceptable must be a non-empty list")
    acceptable = []
    for entry in entries:
        action = entry.get("action") if isinstance(entry, dict) else None
        if action not in ACTIONS:
            _fail(where, f"acceptable action {action!r} is not one of {', '.join(ACTIONS)}")
        targets = entry.get("targets") or []
        if action in TARGETED and not targets:
            _fail(where, f"a {action} needs the message ids its target cites")
        if action not in TARGETED and targets:
            _fail(where, f"an {action} has no targets")
        if not all(isinstance(t, str) and t for t in targets):
            _fail(where, "targets are message ids (strings)")
        acceptable.append(Acceptable(action, tuple(targets)))
    if len({a.action for a in acceptable}) != len(acceptable):
        _fail(where, "an action is listed twice")
    return Item(item_id, conversation, raw["candidate"], raw["kind"], tuple(acceptable), raw["note"])


def load_file(path: Path) -> list[Item]:
    conversation = path.stem
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path}: {exc}") from None
    if not isinstance(data, list):
        _fail(str(path), "expected a list of items")
    return [_item(raw, conversation, f"{path.name}[{i}]") for i, raw in enumerate(data)]


def load(split: str = "all", directory: str | Path = LABEL_DIR) -> list[Item]:
    """The items of ``split`` (dev, test or all) from every ``*.json`` file in ``directory``, in
    file and then file order (the order the export lists them in)."""
    if split not in SPLITS:
        raise InvalidInputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    directory = Path(directory)
    files = sorted(directory.glob("*.json"))
    if not files:
        raise InvalidInputError(f"{directory}: no label files (*.json)")
    items: list[Item] = []
    seen: set[str] = set()
    for path in files:
        for item in load_file(path):
            if item.id in seen:
                _fail(str(path), f"id {item.id} is used twice")
            seen.add(item.id)
            items.append(item)
    return [i for i in items if split == "all" or i.split == split]


def conversations(items: Iterable[Item]) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = {}
    for item in items:
        out.setdefault(item.conversation, []).append(item)
    return out


def export_document(items: Sequence[Item], conversation: str) -> dict[str, Any]:
    """The v2 export another assistant would hand over for one conversation. No ``exportedAt``:
    with it every undated item would carry the export date, and the undated updates would stop
    being undated."""
    return {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "sourceSystem": "hand-labelled import set",
        "coverage": "partial",
        "coverageNote": f"labelled candidates for {conversation}",
        "candidates": [item.candidate for item in items],
    }


# ----------------------------------------------------------------------------- scoring


def judge(item: Item, decision: Decision, cites: Callable[[int], set[str]]) -> bool:
    """Whether one decision is acceptable: its action is among the item's acceptable actions and,
    for a merge, supersede or conflict, it names at least one target and every target it names
    cites at least one of the messages labelled for that action (a merge into one right card and
    one wrong card would still change the wrong one)."""
    for entry in item.acceptable:
        if entry.action != decision.action:
            continue
        if entry.action not in TARGETED:
            return True
        labelled = set(entry.targets)
        return bool(decision.targets) and all(cites(t) & labelled for t in decision.targets)
    return False


def _rate(right: int, total: int) -> float | None:
    return round(right / total, 4) if total else None


def _bucket(confidence: float | None) -> str:
    value = 0.0 if confidence is None else confidence
    edges = list(BUCKETS) + [1.0]
    for low, high in zip(edges, edges[1:]):
        if value < high:
            return f"{low:.2f}-{high:.2f}"
    return f"{edges[-2]:.2f}-1.00"


def score(
    items: Sequence[Item], decisions: Sequence[Decision], cites: Callable[[int], set[str]], threshold: float = 0.85
) -> dict[str, Any]:
    """Accuracy overall, per kind and per conversation; the share of decisions applied without a
    person (confidence at or above ``threshold``) and their precision; a reliability table
    (confidence bucket → share correct); and one row per item."""
    if len(items) != len(decisions):
        raise ValueError(f"{len(items)} items but {len(decisions)} decisions")
    rows = []
    per_kind: dict[str, list[int]] = {}
    per_conv: dict[str, list[int]] = {}
    buckets: dict[str, list[int]] = {_bucket(edge): [0, 0] for edge in BUCKETS}
    decided: dict[str, int] = {a: 0 for a in ACTIONS}
    auto = auto_right = right_total = 0
    for item, decision in zip(items, decisions):
        right = judge(item, decision, cites)
        confidence = decision.confidence
        is_auto = confidence is not None and confidence >= threshold
        right_total += right
        auto += is_auto
        auto_right += right and is_auto
        for table, key in ((per_kind, item.kind), (per_conv, item.conversation)):
            table.setdefault(key, [0, 0])
            table[key][0] += right
            table[key][1] += 1
        buckets[_bucket(confidence)][0] += right
        buckets[_bucket(confidence)][1] += 1
        decided[decision.action] = decided.get(decision.action, 0) + 1
        rows.append(
            {
                "id": item.id,
                "kind": item.kind,
                "acceptable": [a.action for a in item.acceptable],
                "decided": decision.action,
                "targets": list(decision.targets),
                "target_messages": sorted(set().union(*(cites(t) for t in decision.targets)))
                if decision.targets
                else [],
                "confidence": confidence,
                "auto": is_auto,
                "right": right,
                "title": item.candidate.get("title"),
            }
        )
    n = len(items)
    return {
        "items": n,
        "accuracy": _rate(right_total, n),
        "right": right_total,
        "auto_applied_share": _rate(auto, n),
        "auto_applied_precision": _rate(auto_right, auto),
        "auto_applied": auto,
        "threshold": threshold,
        "decided": decided,
        "per_kind": {k: {"items": t, "accuracy": _rate(r, t)} for k, (r, t) in sorted(per_kind.items())},
        "per_conversation": {k: {"items": t, "accuracy": _rate(r, t)} for k, (r, t) in sorted(per_conv.items())},
        "reliability": {k: {"items": t, "share_correct": _rate(r, t)} for k, (r, t) in buckets.items()},
        "per_item": rows,
    }


def cites_from(mapping: Mapping[int, Iterable[str]]) -> Callable[[int], set[str]]:
    """A ``cites`` function from a mapping event id → external message ids."""
    frozen = {k: set(v) for k, v in mapping.items()}
    return lambda event_id: frozen.get(event_id, set())
