"""The words of the graph: which relations hold one value at a time, the stored form of a key, how a
value is shown. A leaf of the graph modules, so the writer, the endings log and the readers share
it without importing each other."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# Keys and relations that hold one value at a time: a new value supersedes the old one.
# Everything else (likes, uses, hobby, has_pet, knows, visited, …) accumulates.
FUNCTIONAL_RELATIONS = frozenset(
    {
        "lives_in",
        "lives_at",
        "residence",
        "current_city",
        "location",
        "located_in",
        "works_at",
        "works_for",
        "employer",
        "role",
        "job_title",
        "title",
        "current_job",
        "occupation",
        "age",
        "birthday",
        "born_in",
        "birthplace",
        "hometown",
        "nationality",
        "status",
        "state",
        "relationship_status",
        "marital_status",
        "spouse",
        "married_to",
        "reports_to",
        "current_project",
        "位于",
        "属于",
        "住在",
        "居住地",
        "所在地",
        "工作于",
        "职位",
        "年龄",
        "状态",
        "生日",
        "出生地",
    }
)


def relation_key(text: str) -> str:
    """The stored form of a fact key or relation: case-folded, spaces and ``-`` become ``_``."""
    folded = unicodedata.normalize("NFKC", text).casefold().strip()
    return re.sub(r"[\s\-_]+", "_", folded).strip("_")


def is_functional(key: str) -> bool:
    """True when ``key`` (a fact key or edge relation) holds one value at a time."""
    return relation_key(key) in FUNCTIONAL_RELATIONS


def render_value(value: Any) -> str:
    return "、".join(value) if isinstance(value, list) else str(value)
