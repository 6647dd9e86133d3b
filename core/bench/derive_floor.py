"""What derivation costs apart from the offline rules.

The same synthetic store is built twice. The first build runs the offline provider and records
every answer it gives, timing the provider calls. The second build gets those answers replayed
in the same order, so its derivation costs only what Strata spends around the rules: reading
contexts, validating, writing rows, indexing, committing. The second build's rate is a ceiling:
no speed-up of the rules alone can take derivation past it on one core.

Replay is exact because derivation is deterministic: the second build asks the same questions
in the same order, and each answer is checked against the kind of call that recorded it; both
builds must end with the same counts of blocks, events and graph nodes.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable

from core.bench.scale import ProgressFn, report_progress, build, remove_database, throughput
from core.providers.offline import OfflineProvider

TARGET_MSGS_PER_S = 2000  # the Scale issue's line for ingest + offline derivation


class ReplayMismatch(RuntimeError):
    """The replaying build asked for something other than what was recorded at that point."""


class _Relay:
    """The three derivation calls of a provider, each handed to ``_call(kind, argument)``; it
    stands in for the offline provider, so it reads its context in process like that one."""

    name = "offline"
    model = None
    reads_context_lazily = True

    def _call(self, kind: str, arg: Any) -> Any:
        raise NotImplementedError

    def summarize_block(self, messages):
        return self._call("summarize_block", messages)

    def extract_events(self, context):
        return self._call("extract_events", context)

    def project_graph(self, context):
        return self._call("project_graph", context)


class RecordingProvider(_Relay):
    """The offline provider, each answer written to ``tape`` as it is given (pickled: the deriver
    may change what it gets, and a million messages' answers do not fit in memory), with the
    time spent in the rules summed apart from the time spent writing."""

    def __init__(self, tape: BinaryIO) -> None:
        self._inner = OfflineProvider()
        self._tape = tape
        self.calls = 0
        self.rules_s = 0.0
        self.record_s = 0.0

    def _call(self, kind: str, arg: Any) -> Any:
        started = time.perf_counter()
        # What the rules looked up beyond the block's timeline joins that timeline, and a link to it is
        # kept only if it is there: the replay looks the same words up again.
        lookups: list[str] = []
        timeline = arg.get("timeline") if isinstance(arg, dict) else None
        if hasattr(timeline, "look_for"):
            look_for = timeline.look_for
            timeline.look_for = lambda text: lookups.append(text) or look_for(text)
        answer = getattr(self._inner, kind)(arg)
        recorded = time.perf_counter()
        pickle.dump((kind, answer, lookups), self._tape, protocol=pickle.HIGHEST_PROTOCOL)
        self.calls += 1
        self.rules_s += recorded - started
        self.record_s += time.perf_counter() - recorded
        return answer


class ReplayingProvider(_Relay):
    """Gives back a recorded build's answers in order from ``tape``, computing nothing but the lookups
    the rules made beyond a block's timeline (a link into what they found is kept only if it is there)."""

    def __init__(self, tape: BinaryIO) -> None:
        self._tape = tape
        self._next = 0

    def _call(self, kind: str, arg: Any) -> Any:
        try:
            recorded, answer, lookups = pickle.load(self._tape)
        except EOFError:
            recorded, answer, lookups = None, None, []
        if recorded != kind:
            raise ReplayMismatch(f"call {self._next}: asked {kind}, recorded {recorded or 'nothing more'}")
        timeline = arg.get("timeline") if isinstance(arg, dict) else None
        for text in lookups:
            timeline.look_for(text)
        self._next += 1
        return answer


_COUNTS = ("blocks", "blocks_ready", "events", "graph_nodes")


def run_floor(n: int, workdir: Path, *, seed: int = 7, progress: ProgressFn = report_progress) -> dict:
    """Build ``n`` messages with the rules, then again with their answers replayed."""
    workdir.mkdir(parents=True, exist_ok=True)
    paths = [workdir / f"floor-{n}-rules.db", workdir / f"floor-{n}-replay.db"]
    for path in paths:
        remove_database(path)  # a bench workdir's own files, as in the scale bench
    tape_path = workdir / f"floor-{n}.tape"

    def step(label: str) -> Callable[[int, int, str], None]:
        return lambda done, total, _: progress(done, total, label)

    try:
        with tape_path.open("wb") as tape:
            recorder = RecordingProvider(tape)
            ruled = build(n, paths[0], seed=seed, provider=recorder, progress=step("with rules"))
        with tape_path.open("rb") as tape:
            replayed = build(n, paths[1], seed=seed, provider=ReplayingProvider(tape), progress=step("rules replayed"))
    finally:
        tape_path.unlink(missing_ok=True)
    differing = [k for k in _COUNTS if ruled[k] != replayed[k]]
    if differing:
        raise ReplayMismatch(f"the replayed build differs in {', '.join(differing)}")
    derive_s = max(ruled["derive_s"] - recorder.record_s, 0.0)  # writing the tape is no derivation
    with_rules = throughput(n, ruled["ingest_s"], n, derive_s)
    floor = throughput(n, replayed["ingest_s"], n, replayed["derive_s"])
    return {
        "benchmark": "derive-floor",
        "messages": n,
        "seed": seed,
        "provider_calls": recorder.calls,
        "rules_s": round(recorder.rules_s, 2),
        "with_rules": {"ingest_s": ruled["ingest_s"], "derive_s": round(derive_s, 2), **with_rules},
        "rules_replayed": {"ingest_s": replayed["ingest_s"], "derive_s": replayed["derive_s"], **floor},
        "rules_share_of_derivation": round(recorder.rules_s / derive_s, 3) if derive_s else None,
        "counts": {k: ruled[k] for k in _COUNTS},
        "target_msgs_per_s": TARGET_MSGS_PER_S,
        "built_at_commit": ruled["built_at_commit"],
    }
