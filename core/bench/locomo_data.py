"""LoCoMo questions with their evidence ids repaired, and the dev/test split."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import InvalidInputError
from core.ingest.common import load_json

SPLITS = {
    "dev": ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43"),
    "test": ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50"),
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_ID = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True)
class Question:
    sample_id: str
    index: int
    question: str
    category: int
    evidence: tuple[str, ...]

    @property
    def qid(self) -> str:
        return f"{self.sample_id}#{self.index}"


def split_ids(split: str) -> tuple[str, ...] | None:
    """Sample ids of a split; None means every conversation."""
    if split == "all":
        return None
    if split not in SPLITS:
        raise InvalidInputError(f"unknown split {split!r}; use dev, test or all")
    return SPLITS[split]


def repair_evidence(raw: object, known: set[str]) -> tuple[str, ...]:
    """Split packed ids ("D8:6; D9:17"), fix "D:11:26" and "D30:05", drop ids with no turn."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return ()
    out: list[str] = []
    for item in raw:
        if not isinstance(item, str):
            continue
        for session, turn in _ID.findall(item):
            dia = f"D{int(session)}:{int(turn)}"
            if dia in known and dia not in out:
                out.append(dia)
    return tuple(out)


def load_questions(path: str | Path, split: str) -> tuple[list[dict], list[Question]]:
    """The split's conversations (raw) and their category 1-4 questions with evidence."""
    data = load_json(Path(path))
    if not isinstance(data, list):
        raise InvalidInputError(f"{path}: expected the LoCoMo list of conversations")
    wanted = split_ids(split)
    samples = [s for s in data if isinstance(s, dict) and (wanted is None or s.get("sample_id") in wanted)]
    questions: list[Question] = []
    for sample in samples:
        conv = sample.get("conversation", {})
        known = {
            turn["dia_id"]
            for key, turns in conv.items()
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list)
            for turn in turns
        }
        for index, qa in enumerate(sample.get("qa", [])):
            category = qa.get("category")
            if category not in CATEGORIES:
                continue
            evidence = repair_evidence(qa.get("evidence"), known)
            if evidence:
                questions.append(Question(sample["sample_id"], index, str(qa.get("question", "")), category, evidence))
    return samples, questions
