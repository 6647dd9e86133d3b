"""The hand-labelled import set: every file loads, every candidate is a valid v2 candidate, every
target names a turn that exists, the split rule stays put, and the scorer judges decisions the
way the README says (checked on a tiny store, never on LoCoMo)."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from core.bench.import_labels import (
    ACTIONS,
    KINDS,
    LABEL_DIR,
    Acceptable,
    Decision,
    Item,
    cites_from,
    conversations,
    export_document,
    judge,
    load,
    score,
    split_of,
)
from core.errors import InvalidInputError
from core.imports.formats import parse_v2_object

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCOMO = Path(os.environ.get("STRATA_LOCOMO", REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
DEMO = REPO_ROOT / "core" / "demo_data" / "demo.jsonl"


@pytest.fixture(scope="module")
def items() -> list[Item]:
    return load("all")


@pytest.fixture(scope="module")
def locomo_path() -> Path:
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo data not found at {LOCOMO} (set STRATA_LOCOMO)")
    return LOCOMO


def test_the_files_load_with_the_promised_sizes(items):
    by_conv = conversations(items)
    assert set(by_conv) == {"conv-30", "conv-41", "conv-42", "conv-43", "demo"}
    assert len(items) >= 200
    for name, its in by_conv.items():
        assert len(its) >= (30 if name == "demo" else 35), name
        numbered = [f"{name}/{n:03d}" for n in range(1, len(its) + 1)]
        assert [i.id for i in its] == numbered, "ids run 001, 002 … per file"
    assert set(Counter(i.kind for i in items)) == set(KINDS)
    assert all(a.action in ACTIONS for i in items for a in i.acceptable)


def test_every_candidate_is_a_valid_v2_candidate(items):
    for name, its in conversations(items).items():
        parsed = parse_v2_object(export_document(its, name), f"{name}.json")
        assert len(parsed.candidates) == len(its)
        assert parsed.warnings == (), name  # no enum value silently dropped, no time quietly lost


def _locomo_turns(path: Path) -> dict[str, set[str]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, set[str]] = {}
    for sample in data:
        turns = out.setdefault(sample["sample_id"], set())
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                turns |= {t["dia_id"] for t in value}
    return out


def test_every_demo_target_is_a_demo_message(items):
    ids = {json.loads(line)["id"] for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()}
    missing = [
        (i.id, t) for i in items if i.conversation == "demo" for a in i.acceptable for t in a.targets if t not in ids
    ]
    assert missing == []


def test_every_locomo_target_is_a_turn_of_its_conversation(items, locomo_path):
    turns = _locomo_turns(locomo_path)
    missing = [
        (i.id, t)
        for i in items
        if i.conversation != "demo"
        for a in i.acceptable
        for t in a.targets
        if t not in turns.get(i.conversation, set())
    ]
    assert missing == []


def test_the_split_rule_reads_only_the_id(items):
    # Fixed examples: if these move, every figure reported on the split moves with them.
    assert {i: split_of(i) for i in ("conv-30/001", "conv-41/001", "demo/001", "demo/004")} == {
        "conv-30/001": "test",
        "conv-41/001": "dev",
        "demo/001": "dev",
        "demo/004": "test",
    }
    for item in items:
        first = hashlib.sha256(item.id.encode("utf-8")).hexdigest()[0]
        assert item.split == ("dev" if int(first, 16) < 8 else "test")
    dev, test = load("dev"), load("test")
    assert {i.id for i in dev} | {i.id for i in test} == {i.id for i in items}
    assert not {i.id for i in dev} & {i.id for i in test}
    assert min(len(dev), len(test)) >= 0.4 * len(items)


def test_a_broken_label_file_is_refused_with_its_place(tmp_path):
    (tmp_path / "x.json").write_text(
        json.dumps(
            [
                {
                    "id": "x/001",
                    "candidate": {"title": "t", "summary": "s"},
                    "kind": "paraphrase",
                    "acceptable": [{"action": "merge"}],
                    "note": "n",
                }
            ]
        )
    )
    with pytest.raises(InvalidInputError, match=r"x.json\[0\] \(x/001\): a merge needs the message ids"):
        load("all", tmp_path)
    with pytest.raises(InvalidInputError, match="split must be one of"):
        load("train", LABEL_DIR)


# ----------------------------------------------------------------------------- scoring


def _item(*acceptable: Acceptable, kind: str = "paraphrase", conversation: str = "c") -> Item:
    return Item(f"{conversation}/001", conversation, {"title": "t", "summary": "s"}, kind, acceptable, "n")


def test_judge_wants_the_action_and_every_target_on_a_labelled_turn():
    item = _item(Acceptable("merge", ("D1:1", "D1:2")), Acceptable("ignore"))
    cites = cites_from({10: {"D1:2"}, 11: {"D9:9"}, 12: {"D1:1", "D5:5"}})
    assert judge(item, Decision("merge", (10,)), cites)
    assert judge(item, Decision("merge", (10, 12)), cites)
    assert not judge(item, Decision("merge", (10, 11)), cites)  # one wrong card would still be changed
    assert not judge(item, Decision("merge", ()), cites)
    assert judge(item, Decision("ignore", (11,)), cites)  # an ignore's matched card does not matter
    assert not judge(item, Decision("supersede", (10,)), cites)
    assert not judge(_item(Acceptable("add")), Decision("merge", (10,)), cites)


def test_score_counts_accuracy_auto_share_precision_and_reliability():
    items = [
        _item(Acceptable("add"), kind="new-fact", conversation="a"),
        _item(Acceptable("conflict", ("D2:1",)), kind="contradiction", conversation="a"),
        _item(Acceptable("ignore"), kind="chatter", conversation="b"),
        _item(Acceptable("supersede", ("D3:1",)), kind="update-dated", conversation="b"),
    ]
    decisions = [
        Decision("add", (), 0.9),
        Decision("conflict", (7,), 0.72),
        Decision("add", (), 0.95),
        Decision("supersede", (8,), 0.4),
    ]
    result = score(items, decisions, cites_from({7: {"D2:1"}, 8: {"D3:2"}}), threshold=0.85)
    assert result["accuracy"] == 0.5 and result["right"] == 2
    assert result["auto_applied"] == 2 and result["auto_applied_share"] == 0.5
    assert result["auto_applied_precision"] == 0.5
    assert result["per_conversation"] == {"a": {"items": 2, "accuracy": 1.0}, "b": {"items": 2, "accuracy": 0.0}}
    assert result["per_kind"]["contradiction"] == {"items": 1, "accuracy": 1.0}
    assert result["reliability"]["0.00-0.50"] == {"items": 1, "share_correct": 0.0}
    assert result["reliability"]["0.70-0.85"] == {"items": 1, "share_correct": 1.0}
    assert result["reliability"]["0.85-0.95"] == {"items": 1, "share_correct": 1.0}
    assert result["reliability"]["0.95-1.00"] == {"items": 1, "share_correct": 0.0}
    assert [r["right"] for r in result["per_item"]] == [True, True, False, False]
    assert result["decided"]["add"] == 2


def test_the_scorer_end_to_end_on_a_tiny_store(store, tmp_path):
    """Messages with external ids, derived offline; a scripted preview of a two-item export; the
    scorer maps the decided event back to the turn it cites."""
    from core.bench.import_labelled import event_citations
    from core.providers.scripted import ScriptedProvider
    from core.services.capture import append_messages
    from core.services.derive import run_pending
    from core.services.import_preview import preview_import

    append_messages(
        "tiny",
        "chat",
        [
            {
                "role": "user",
                "content": "Maya lives in Lisbon.",
                "created_at": "2024-03-01T10:00:00+00:00",
                "external_id": "t-1",
            },
            {"role": "assistant", "content": "Noted.", "created_at": "2024-03-01T10:00:05+00:00", "external_id": "t-2"},
            {
                "role": "user",
                "content": "Ben has a dog named Rex.",
                "created_at": "2024-03-02T10:00:00+00:00",
                "external_id": "t-3",
            },
            {"role": "assistant", "content": "Noted.", "created_at": "2024-03-02T10:00:05+00:00", "external_id": "t-4"},
        ],
        close_turn=True,
        close_thread=True,
    )
    assert run_pending("tiny").failed == 0
    cited = event_citations("tiny")
    lisbon = next(e for e, ids in cited.items() if "t-1" in ids)

    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "tiny.json").write_text(
        json.dumps(
            [
                {
                    "id": "tiny/001",
                    "candidate": {"title": "Home", "summary": "Maya is based in Lisbon, near the river."},
                    "kind": "detail",
                    "acceptable": [{"action": "merge", "targets": ["t-1"]}, {"action": "ignore"}],
                    "note": "t-1 with a detail",
                },
                {
                    "id": "tiny/002",
                    "candidate": {"title": "Likes jazz", "summary": "Likes jazz."},
                    "kind": "new-preference",
                    "acceptable": [{"action": "add"}],
                    "note": "never said",
                },
            ]
        )
    )
    items = load("all", labels)
    provider = ScriptedProvider(
        {
            "decide_external_memory": [
                {"action": "merge", "existing_event_ids": [lisbon], "confidence": 0.95, "reason": "same home"},
                {"action": "add", "existing_event_ids": [], "confidence": 0.6, "reason": "new"},
            ]
        }
    )
    preview = preview_import("tiny", json.dumps(export_document(items, "tiny")), provider=provider)
    decisions = [
        Decision(row.action, tuple(row.target_ids), row.confidence)
        for row in sorted(preview.items, key=lambda r: r.position)
    ]
    result = score(items, decisions, lambda e: cited.get(e, set()))
    assert [r["decided"] for r in result["per_item"]] == ["merge", "add"]
    assert result["per_item"][0]["target_messages"] == ["t-1"]
    assert result["accuracy"] == 1.0
    assert result["auto_applied_share"] == 0.5 and result["auto_applied_precision"] == 1.0


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--labels", "{labels}", "--seed", "3"], "--seed: only for the generated set, not with --labels"),
        (["--split", "dev"], "--split: only with --labels"),
        (["--labels", "{labels}", "--data", "{tmp}/none.json"], "none.json: no such file"),
        (["--labels", "{labels}", "--json-out", "{tmp}/no/report.json"], "--json-out"),
        (["--labels", "{tmp}"], "no label files"),
    ],
)
def test_bench_import_labels_arguments_are_checked_before_a_run(argv, message, tmp_path, capsys, monkeypatch):
    import core.bench.import_labelled
    from workbench.cli import main

    monkeypatch.setattr(core.bench.import_labelled, "build_store", lambda *a, **k: pytest.fail("a store was built"))
    names = {"labels": LABEL_DIR, "tmp": tmp_path}
    assert main(["bench", "import", *(a.format(**names) for a in argv)]) == 2
    assert message in capsys.readouterr().err
