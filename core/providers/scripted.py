"""A provider that replays prepared answers, for tests of the services around providers.

Answers go through the same validation as a model's answer, so a test can script both
good results and the malformed ones a real model produces.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Sequence

from core.errors import InvalidInputError
from core.providers.base import BlockSummary, Extraction, ProviderOutputError

TASKS = ("summarize_block", "extract_events", "project_graph", "decide_external_memory", "recover_external_memory")


def _graph_answer(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise ProviderOutputError("graph projection result is not an object")
    return answer


def _decision_answer(answer: Any) -> dict[str, Any] | str:
    # A model's decision may be text (prose, a cut-off object): the import service recovers and checks it.
    if not isinstance(answer, (dict, str)):
        raise ProviderOutputError("answer is not an object")
    return answer


def _object_answer(answer: Any) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise ProviderOutputError("answer is not an object")
    return answer


_VALIDATORS: dict[str, Callable[[Any], Any]] = {
    "summarize_block": BlockSummary.validated,
    "extract_events": Extraction.validated,
    "project_graph": _graph_answer,
    "decide_external_memory": _decision_answer,
    "recover_external_memory": _object_answer,
}


class ScriptedProvider:
    """Pops the next prepared answer for each task; exceptions in the script are raised."""

    reads_context_lazily = False  # tests read the contexts it was given

    def __init__(
        self,
        answers: dict[str, list[Any]] | None = None,
        name: str = "scripted",
        model: str | None = None,
        *,
        model_backed: bool = False,
    ):
        answers = answers or {}
        unknown = sorted(set(answers) - set(TASKS))
        if unknown:
            raise InvalidInputError(f"unknown scripted task(s) {', '.join(unknown)}; tasks are {', '.join(TASKS)}")
        self.name = name
        self.model = model
        # True to have its import decisions checked as a model's are (strict schema, capped confidence).
        self.model_backed = model_backed
        # Copied, so the caller's lists are left as they were.
        self._answers: dict[str, deque[Any]] = {task: deque(answers.get(task, ())) for task in TASKS}
        self.calls: list[tuple[str, Any]] = []

    def __repr__(self) -> str:
        left = ", ".join(f"{task}={len(queue)}" for task, queue in self._answers.items())
        return f"ScriptedProvider(name={self.name!r}, left: {left})"

    def remaining(self, task: str) -> int:
        """How many answers are still scripted for ``task``."""
        return len(self._answers[task])

    def _next(self, task: str, given: Any) -> Any:
        self.calls.append((task, given))
        queue = self._answers[task]
        if not queue:
            raise ProviderOutputError(f"no scripted answer left for {task}")
        answer = queue.popleft()
        if isinstance(answer, BaseException):
            raise answer
        return _VALIDATORS[task](answer)

    def summarize_block(self, messages: Sequence[dict[str, Any]]) -> BlockSummary:
        return self._next("summarize_block", messages)

    def extract_events(self, context: dict[str, Any]) -> Extraction:
        return self._next("extract_events", context)

    def project_graph(self, context: dict[str, Any]) -> dict[str, Any]:
        return self._next("project_graph", context)

    def decide_external_memory(self, context: dict[str, Any]) -> dict[str, Any]:
        return self._next("decide_external_memory", context)

    def recover_external_memory(self, context: dict[str, Any]) -> dict[str, Any]:
        return self._next("recover_external_memory", context)


__all__ = ["ScriptedProvider"]
