"""`strata bench reliability`: what survives kill -9, concurrent writers, hostile input and undo.

Five sections, each a list of figures that must be 0 (or, for the counts of work done, what
was asked for):

1. ``kills``: the real CLI (``python -m workbench``) is killed with SIGKILL (its whole process
   group: ``derive --workers 2``'s pool dies with it) at a random moment of an ingest (a JSONL
   and a LoCoMo-like file, or ``data``), a derive (one process or two workers), an import
   commit or an import undo. Then: SQLite's ``PRAGMA integrity_check`` (PostgreSQL: the store
   opens), no import batch half applied (the namespace is exactly as before or after the
   batch), the same command run again resumes (the stored messages are the input's, none lost
   or twice), ``strata derive`` run until it exits 0 leaves no job unfinished, ``verify``
   passes, and each namespace's memory equals a reference built once without kills.
2. ``concurrency``: two writer processes append turns with receipts (replaying some) into one
   namespace while ``strata derive`` runs in a loop and a fourth process searches; every
   receipt's messages are stored once, positions stay contiguous, and no process sees an error.
3. ``fuzz``: generated and corrupted inputs for every ingest format, every import format, every
   agent tool's arguments, search queries and MCP JSON-RPC lines (through the server's stdio
   transport, in process): only StrataError or a JSON-RPC error may come back, a reply carries
   the request's id when it could be read, and a refused input writes nothing.
4. ``round_trips``: import commit and undo with unrelated writes in between: the namespace's
   export is byte-identical before the preview and after the undo.
5. ``isolation``: a second namespace holds secret words; no search, expansion, context or MCP
   call made for the first returns any of them or any of its ids.

Core never imports the UI: progress goes through ``progress(done, total, label)``. Run
``python -m core.bench.reliability writer|searcher …`` for the concurrency section's children.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from urllib.parse import urlparse, urlunparse
from core import models
from core.bench import git_commit
from core.bench.reliability_options import DEFAULTS, SECTIONS
from core.db import db, is_sqlite
from core.errors import StrataError
from core.imports.formats import FORMATS as IMPORT_FORMATS
from core.ingest import FORMATS as INGEST_FORMATS, ingest, parse
from core.models import Block, Event, GraphNode, ImportBatch, IngestionReceipt, Job, Message, Namespace, Thread
from core.services.capture import append_messages, append_turn, close_thread
from core.services.events import forget_event
from core.services.export import comparable_memory, export_namespace
from core.services.search import search_events, search_graph, search_raw
from core.services.spaces import configure_namespace

ProgressFn = Callable[[int, int, str], None]
ROOT = Path(__file__).resolve().parents[2]

SCENARIOS = ("ingest-jsonl", "ingest-locomo", "derive", "derive-workers", "import-commit", "import-undo")
CHAT = "rel-chat"  # the JSONL file's namespace: imports, fuzzing and probes use it too
LIVE = "rel-live"
SECRET = "rel-secret"
OTHER = "rel-other"
DERIVE_RERUNS = 6  # `strata derive` runs allowed after a kill before its jobs count as unfinished
COMMAND_TIMEOUT = 600.0


class BenchSetupError(StrataError):
    """The bench could not build what it measures against (not a reliability failure)."""


@dataclass
class Section:
    """One section's figures; ``failures`` names each figure that must be 0 and is not."""

    figures: dict[str, Any] = field(default_factory=dict)
    must_be_zero: list[str] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)  # a few per figure, to reproduce them
    seconds: float = 0.0

    def bad(self, name: str, amount: int = 1, example: str | None = None) -> None:
        self.figures[name] = self.figures.get(name, 0) + amount
        kept = self.examples.setdefault(name, []) if example else []
        if example and len(kept) < 4:
            kept.append(example[:600])

    def zero(self, *names: str) -> None:
        for name in names:
            self.figures.setdefault(name, 0)
            if name not in self.must_be_zero:
                self.must_be_zero.append(name)

    def failures(self) -> list[str]:
        return [name for name in self.must_be_zero if self.figures.get(name)]

    def to_dict(self) -> dict:
        return {
            "figures": self.figures,
            "must_be_zero": self.must_be_zero,
            "failures": self.failures(),
            "examples": self.examples,
            "seconds": round(self.seconds, 1),
        }


# ----------------------------------------------------------------------------- stores


class Engine:
    """Scratch stores of one engine: SQLite files in the workdir, or PostgreSQL databases made
    (and dropped) through ``server_url``'s server in autocommit."""

    def __init__(self, kind: str, workdir: Path, server_url: str | None = None) -> None:
        if kind not in ("sqlite", "postgresql"):
            raise ValueError(f"engine must be sqlite or postgresql, got {kind!r}")
        self.kind, self.workdir, self.server_url = kind, workdir, server_url
        self._numbers = iter(range(1, 1 << 30))
        self._admin = None
        self._made: list[str] = []
        if kind == "postgresql":
            if not server_url or not server_url.startswith(("postgresql://", "postgres://")):
                raise BenchSetupError(
                    "--engine postgresql needs a server URL (--db postgresql://… or "
                    "$STRATA_TEST_DB): a role that may create databases"
                )
            self._cursor()  # fail now, not after the SQLite-free part of a run

    def _cursor(self):
        if self._admin is None or self._admin.closed:
            # optional dependency (psycopg2, the postgres extra)
            import psycopg2

            self._admin = psycopg2.connect(self.server_url)
            self._admin.autocommit = True
        return self._admin.cursor()

    def _pg_url(self, name: str) -> str:

        return urlunparse(urlparse(self.server_url)._replace(path=f"/{name}"))

    @staticmethod
    def _pg_name(url: str) -> str:

        return urlparse(url).path.lstrip("/")

    def new(self, label: str) -> str:
        """The URL of a store that does not exist yet (PostgreSQL: an empty database)."""
        number = next(self._numbers)
        if self.kind == "sqlite":
            path = self.workdir / f"{label}-{number}.db"
            _remove_sqlite(path)
            return f"sqlite:///{path}"
        name = f"strata_rel_{os.getpid()}_{number}"
        self._cursor().execute(f'CREATE DATABASE "{name}"')
        self._made.append(name)
        return self._pg_url(name)

    def copy(self, template: str, label: str) -> str:
        """A private copy of a closed store."""

        if db.obj is not None and not db.is_closed():
            db.close()
        number = next(self._numbers)
        if self.kind == "sqlite":
            source = Path(template[len("sqlite:///") :])
            target = self.workdir / f"{label}-{number}.db"
            _remove_sqlite(target)
            shutil.copy(source, target)
            return f"sqlite:///{target}"
        name, source = f"strata_rel_{os.getpid()}_{number}", self._pg_name(template)
        cursor = self._cursor()
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (source,),
        )
        cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
        self._made.append(name)
        return self._pg_url(name)

    def drop(self, url: str) -> None:

        if db.obj is not None and not db.is_closed():
            db.close()
        if self.kind == "sqlite":
            _remove_sqlite(Path(url[len("sqlite:///") :]))
            return
        name = self._pg_name(url)
        if name in self._made:
            self._made.remove(name)
            self._cursor().execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def integrity(self, url: str) -> str | None:
        """What is wrong with the store's file right after a kill (None: nothing). SQLite runs
        ``PRAGMA integrity_check`` on a connection of its own; a PostgreSQL server recovers its
        own files, so there the check is that the store opens (and ``verify`` later)."""
        if self.kind == "sqlite":
            path = Path(url[len("sqlite:///") :])
            if not path.exists():
                return None  # killed before the file was made
            try:
                connection = sqlite3.connect(str(path), timeout=30)
                try:
                    rows = [row[0] for row in connection.execute("PRAGMA integrity_check").fetchall()]
                finally:
                    connection.close()
            except sqlite3.Error as exc:
                return f"integrity_check could not run: {exc}"
            return None if rows == ["ok"] else "; ".join(map(str, rows[:5]))
        # start-up time, here and below: `strata --help` loads this module, so what only a trial
        # needs loads when the trial runs
        from core.api import open_store

        try:
            open_store(url)
        except StrataError as exc:
            return f"the store does not open: {exc}"
        finally:
            if db.obj is not None and not db.is_closed():
                db.close()
        return None

    def close(self) -> None:
        for name in list(self._made):
            self.drop(self._pg_url(name))
        if self._admin is not None and not self._admin.closed:
            self._admin.close()


def _remove_sqlite(path: Path) -> None:
    from core.bench.scale import remove_database

    remove_database(path)


def _close() -> None:

    if db.obj is not None and not db.is_closed():
        if is_sqlite():
            db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()


def _open(url: str):
    from core.api import open_store

    return open_store(url)


# ----------------------------------------------------------------------------- the CLI


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "workbench", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("STRATA_DB", None)  # every command names its store
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_cli(args: list[str], url: str, timeout: float = COMMAND_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        cli_command(*args, "--db", url), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def run_killed(args: list[str], url: str, delay: float) -> tuple[bool, float]:
    """Start the command and SIGKILL its process group after ``delay`` seconds: (True, delay) when
    it was still running then, (False, how long it took) when it finished first."""
    started = time.perf_counter()
    process = subprocess.Popen(
        cli_command(*args, "--db", url),
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        process.wait(timeout=delay)
        return False, time.perf_counter() - started
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
    _reap_group(process.pid)
    return True, delay


def _reap_group(pgid: int) -> None:
    """Wait until no process of the killed group is left (a pool worker may take a moment)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        except PermissionError:
            return
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def _first_line(result: subprocess.CompletedProcess) -> str:
    text = (result.stderr or result.stdout or "").strip().splitlines()
    return text[-1][:300] if text else ""


# ----------------------------------------------------------------------------- the data


def write_inputs(workdir: Path, seed: int, data: Path | None = None) -> dict[str, Path]:
    """The files the kill section feeds the CLI: a JSONL chat, a LoCoMo-like file (or ``data``)
    and a v2 memory export for the import."""
    from core.bench.synthetic import conversation

    rng = random.Random(seed)
    workdir.mkdir(parents=True, exist_ok=True)
    lines = []
    for thread, messages in conversation(150, seed):
        for message in messages:
            lines.append(json.dumps({"thread": thread, **message}))
    jsonl = workdir / "chat.jsonl"
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")

    locomo = workdir / "locomo-like.json"
    if data is not None:
        locomo = data
    else:
        samples = []
        for number in range(2):
            people = ("Iris", "Tobias") if number == 0 else ("Noor", "Malik")
            conv: dict[str, Any] = {"speaker_a": people[0], "speaker_b": people[1]}
            said = [m for _, messages in conversation(60, seed + 1 + number) for m in messages]
            for session in range(1, 3):
                turns = []
                for turn in range(15):
                    text = said[(session * 15 + turn) % len(said)]["content"]
                    turns.append({"speaker": people[turn % 2], "dia_id": f"D{session}:{turn + 1}", "text": text})
                conv[f"session_{session}"] = turns
                conv[f"session_{session}_date_time"] = f"{1 + session}:{10 + number:02d} pm on {3 + session} May, 2023"
            samples.append({"sample_id": f"rel-conv-{number + 1}", "conversation": conv, "qa": []})
        locomo.write_text(json.dumps(samples), encoding="utf-8")

    facts = [
        "Iris adopted a grey cat named Pixel.",
        "Tobias runs the Lisbon marathon every October.",
        "The team moved the billing service to postgres in March.",
        "Noor is learning to play the cello.",
        "Malik works at Globex as a data engineer.",
        "Quentin Moreau prefers tea over coffee.",
    ]
    rng.shuffle(facts)
    export = workdir / "memory-export.json"
    export.write_text(json.dumps(_v2_export(facts)), encoding="utf-8")
    return {"jsonl": jsonl, "locomo": locomo, "export": export}


def _v2_export(facts: list[str], exported: str = "2025-06-01") -> dict:
    return {
        "schemaVersion": "stratagate.external-memory.v2",
        "sourceType": "external_ai_memory_export",
        "exportedAt": exported,
        "candidates": [
            {"title": fact.rstrip(".")[:60], "summary": fact, "temporal": {"mentionedAt": exported}} for fact in facts
        ],
    }


def expected_messages(fmt: str, path: Path, limit: int | None = None) -> Counter:
    """(namespace, thread, role, content) of every message the file holds, as ingest stores them."""

    expected: Counter = Counter()
    for unit in parse(fmt, path, namespace=CHAT if fmt == "jsonl" else None, limit=limit):
        for batch in unit.threads:
            for message in batch.messages:
                expected[(unit.namespace, batch.thread, message["role"], message["content"])] += 1
    return expected


def stored_messages(namespaces: list[str]) -> Counter:

    rows = (
        Message.select(Namespace.name, Thread.name, Message.role, Message.content)
        .join(Thread, on=(Message.thread == Thread.id))
        .switch(Message)
        .join(Namespace, on=(Message.namespace == Namespace.id))
        .where(Namespace.name.in_(namespaces))
        .tuples()
    )
    return Counter(tuple(row) for row in rows)


_CLOCK = None


def _clock_pattern() -> re.Pattern:
    """ISO stamps of the days this run spans: the clock's, never the data's (2021–2025)."""
    global _CLOCK
    if _CLOCK is None:
        today = datetime.now(timezone.utc).date()
        days = "|".join(str(today + timedelta(days=d)) for d in (-1, 0, 1))
        _CLOCK = re.compile(rf"^(?:{days})T")
    return _CLOCK


def comparable(namespace: str) -> Any:
    """``comparable_memory`` with every stamp of the clock left out too (an import's source block
    and message are dated when it is committed)."""

    pattern = _clock_pattern()

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if not (isinstance(v, str) and pattern.match(v))}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(comparable_memory(namespace))


def memory_of(url: str, namespaces: list[str]) -> dict[str, Any]:
    _open(url)
    try:
        return {
            name: comparable(name) if Namespace.get_or_none(Namespace.name == name) else None for name in namespaces
        }
    finally:
        _close()


def _difference(a: Any, b: Any, where: str = "") -> str:
    """Where two comparable memories first differ (for the report's examples)."""
    if type(a) is not type(b):
        return f"{where or '/'}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{where}/{key}: only in {'the run' if key in a else 'the reference'}"
            if a[key] != b[key]:
                return _difference(a[key], b[key], f"{where}/{key}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)} in the reference"
        for index, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _difference(x, y, f"{where}[{index}]")
    return f"{where}: {str(a)[:120]!r} vs {str(b)[:120]!r}"


# ----------------------------------------------------------------------------- 1. kills


@dataclass
class Reference:
    """The unkilled run: templates each scenario starts from, the memory it must end with, and
    how long each command took (the kill moments are drawn within that)."""

    urls: dict[str, str]
    memory: dict[str, dict[str, Any]]
    seconds: dict[str, float]
    batch_id: int
    namespaces: dict[str, list[str]]
    expected: dict[str, Counter]
    imported: int


def _must(result: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    if result.returncode != 0:
        raise BenchSetupError(f"reference run: {what} exited {result.returncode}: {_first_line(result)}")
    return result


def _timed_cli(args: list[str], url: str, what: str) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    result = _must(run_cli(args, url), what)
    return time.perf_counter() - started, result


def build_reference(
    engine: Engine, inputs: dict[str, Path], *, data_limit: int | None, progress: ProgressFn | None = None
) -> Reference:
    """Every step once through the CLI, without kills, keeping a copy of the store before each
    step a scenario kills."""
    steps = 10
    say = (lambda done, label: progress(done, steps, f"reference: {label}")) if progress else (lambda *_: None)
    urls: dict[str, str] = {}
    seconds: dict[str, float] = {}
    locomo_args = ["ingest", "locomo", str(inputs["locomo"])] + (["--limit", str(data_limit)] if data_limit else [])
    jsonl_args = ["ingest", "jsonl", str(inputs["jsonl"]), "--namespace", CHAT]

    urls["empty"] = engine.new("empty")
    _open(urls["empty"])
    _close()
    ref = engine.copy(urls["empty"], "reference")
    say(0, "ingest jsonl")
    seconds["ingest-jsonl"], _ = _timed_cli(jsonl_args, ref, "ingest jsonl")
    say(1, "ingest locomo")
    seconds["ingest-locomo"], _ = _timed_cli(locomo_args, ref, "ingest locomo")
    urls["ingested"] = engine.copy(ref, "ingested")
    say(2, "derive")
    seconds["derive"], _ = _timed_cli(["derive", "--json"], ref, "derive")
    urls["derived"] = engine.copy(ref, "derived")
    say(3, "derive --workers 2")
    workers = engine.copy(urls["ingested"], "workers")
    seconds["derive-workers"], _ = _timed_cli(["derive", "--workers", "2", "--json"], workers, "derive --workers 2")

    _open(ref)
    try:
        every = [n for (n,) in Namespace.select(Namespace.name).order_by(Namespace.name).tuples()]
    finally:
        _close()
    namespaces = {"jsonl": [CHAT], "locomo": [n for n in every if n != CHAT]}
    memory = {"derived": memory_of(ref, every)}
    if memory_of(workers, every) != memory["derived"]:
        raise BenchSetupError("reference run: `strata derive --workers 2` derived other memory than one process")
    engine.drop(workers)

    say(4, "import preview")
    _, preview = _timed_cli(
        ["import", "preview", str(inputs["export"]), "--namespace", CHAT, "--json"], ref, "import preview"
    )
    batch_id = int(json.loads(preview.stdout)["batch"]["id"])
    urls["previewed"] = engine.copy(ref, "previewed")
    memory["previewed"] = memory_of(ref, [CHAT])
    say(5, "import commit")
    seconds["import-commit"], _ = _timed_cli(["import", "commit", str(batch_id), "--json"], ref, "import commit")
    memory["committed-underived"] = memory_of(ref, [CHAT])
    _open(ref)
    try:
        imported = ImportBatch.get_by_id(batch_id).imported_count or 0
    finally:
        _close()
    say(6, "derive the import")
    _timed_cli(["derive", "--json"], ref, "derive after the commit")
    urls["committed"] = engine.copy(ref, "committed")
    memory["committed"] = memory_of(ref, [CHAT])
    say(7, "import undo")
    seconds["import-undo"], _ = _timed_cli(["import", "undo", str(batch_id), "--json"], ref, "import undo")
    memory["undone-underived"] = memory_of(ref, [CHAT])
    say(8, "derive after the undo")
    _timed_cli(["derive", "--json"], ref, "derive after the undo")
    memory["undone"] = memory_of(ref, [CHAT])
    # Start-up (interpreter, imports, opening the store) timed warm: the first commands above also
    # compiled bytecode and read cold pages.
    seconds["startup"] = min(_timed_cli(["stats", "--json"], ref, "stats")[0] for _ in range(2))
    urls["reference"] = ref
    expected = {
        "jsonl": expected_messages("jsonl", inputs["jsonl"]),
        "locomo": expected_messages("locomo", inputs["locomo"], data_limit),
    }
    say(steps, "done")
    return Reference(
        urls=urls,
        memory=memory,
        seconds=seconds,
        batch_id=batch_id,
        namespaces=namespaces,
        expected=expected,
        imported=imported,
    )


def _scenario_plan(scenario: str, ref: Reference, inputs: dict[str, Path], data_limit: int | None) -> dict:
    limit = ["--limit", str(data_limit)] if data_limit else []
    batch = str(ref.batch_id)
    return {
        "ingest-jsonl": dict(
            start=None,
            args=["ingest", "jsonl", str(inputs["jsonl"]), "--namespace", CHAT],
            namespaces=ref.namespaces["jsonl"],
            memory="derived",
            ingest="jsonl",
        ),
        "ingest-locomo": dict(
            start="empty",
            args=["ingest", "locomo", str(inputs["locomo"]), *limit],
            namespaces=ref.namespaces["locomo"],
            memory="derived",
            ingest="locomo",
        ),
        "derive": dict(
            start="ingested",
            args=["derive", "--json"],
            namespaces=ref.namespaces["jsonl"] + ref.namespaces["locomo"],
            memory="derived",
        ),
        "derive-workers": dict(
            start="ingested",
            args=["derive", "--workers", "2", "--json"],
            namespaces=ref.namespaces["jsonl"] + ref.namespaces["locomo"],
            memory="derived",
        ),
        "import-commit": dict(
            start="previewed",
            args=["import", "commit", batch, "--json"],
            namespaces=[CHAT],
            memory="committed",
            batch=("previewed", "committed-underived", "committed"),
        ),
        "import-undo": dict(
            start="committed",
            args=["import", "undo", batch, "--json"],
            namespaces=[CHAT],
            memory="undone",
            batch=("committed", "undone-underived", "undone"),
        ),
    }[scenario]


def _kill_delay(rng: random.Random, ref: Reference, scenario: str) -> float:
    """Mostly inside the command's work (after the interpreter started and opened the store),
    sometimes during start-up."""
    startup = ref.seconds["startup"]
    total = max(ref.seconds[scenario], startup + 0.05)
    if rng.random() < 0.15:
        return rng.uniform(0.0, startup)
    return rng.uniform(startup * 0.8, total * 1.05)


def _batch_state(batch_id: int) -> str:

    batch = ImportBatch.get_or_none(ImportBatch.id == batch_id)
    return batch.status if batch is not None else "missing"


def kill_trial(
    engine: Engine,
    ref: Reference,
    inputs: dict[str, Path],
    scenario: str,
    rng: random.Random,
    section: Section,
    data_limit: int | None,
) -> None:
    """One kill at a random moment of ``scenario`` and every check after it."""

    plan = _scenario_plan(scenario, ref, inputs, data_limit)
    url = engine.new("trial") if plan["start"] is None else engine.copy(ref.urls[plan["start"]], "trial")
    label = f"{scenario} (seed {rng.random():.6f})"
    try:
        delay = _kill_delay(rng, ref, scenario)
        landed, took = run_killed(plan["args"], url, delay)
        if landed:
            section.bad("kills landed")
        else:
            section.bad("finished before the kill")
            # The reference's first runs may have been slower (a cold page or bytecode cache, a busy
            # machine): later kills are drawn within what the command takes now.
            ref.seconds[scenario] = min(ref.seconds[scenario], took)
        problem = engine.integrity(url)
        if problem:
            section.bad("integrity failures", example=f"{label}, killed at {delay:.2f} s: {problem}")

        if "batch" in plan:
            before, after, _ = plan["batch"]
            now = memory_of(url, [CHAT])[CHAT]
            if now == ref.memory[before][CHAT]:
                state = "before"
            elif now == ref.memory[after][CHAT]:
                state = "after"
            else:
                state = "half"
                section.bad(
                    "half-applied import batches",
                    example=f"{label}, killed at {delay:.2f} s: {_difference(now, ref.memory[after][CHAT])}",
                )
            _open(url)
            try:
                status = _batch_state(ref.batch_id)
            finally:
                _close()
            seen = section.figures.setdefault("import kills leaving the batch before / after", [0, 0])
            seen[state == "after"] += state != "half"
            wanted = {"import-commit": "committed", "import-undo": "undone"}[scenario]
            if (state == "after") != (status == wanted) and state != "half":
                section.bad(
                    "half-applied import batches",
                    example=f"{label}: memory is {state} the batch but the batch is {status}",
                )
            if status != wanted:
                rerun = run_cli(plan["args"], url)
                if rerun.returncode != 0:
                    section.bad(
                        "reruns that failed", example=f"{label}: rerun exited {rerun.returncode}: {_first_line(rerun)}"
                    )
        elif "ingest" in plan:
            rerun = run_cli(plan["args"], url)
            if rerun.returncode != 0:
                section.bad(
                    "reruns that failed", example=f"{label}: rerun exited {rerun.returncode}: {_first_line(rerun)}"
                )

        for _ in range(DERIVE_RERUNS):
            derive = run_cli(["derive", "--json"], url)
            if derive.returncode == 0:
                break
        else:
            section.bad("derive never exited 0", example=f"{label}: {_first_line(derive)}")

        try:
            _open(url)
        except StrataError as exc:
            section.bad("integrity failures", example=f"{label}: the store does not open after the rerun: {exc}")
            return
        try:
            from core.services.verify import verify

            report = verify()
            if not report.ok:
                section.bad("verify failures", example=f"{label}: {'; '.join(report.problems[:3])}")
            if "ingest" in plan:
                want = ref.expected[plan["ingest"]]
                have = stored_messages(plan["namespaces"])
                lost, twice = want - have, have - want
                if lost:
                    section.bad("messages lost", sum(lost.values()), f"{label}: {next(iter(lost))}")
                if twice:
                    section.bad("messages duplicated", sum(twice.values()), f"{label}: {next(iter(twice))}")
            ids = [n.id for n in Namespace.select().where(Namespace.name.in_(plan["namespaces"]))]
            unfinished = Job.select().where(Job.namespace.in_(ids) & Job.status.in_(["pending", "running", "failed"]))
            count = unfinished.count()
            if count:
                job = unfinished.first()
                section.bad(
                    "jobs unfinished after restart",
                    count,
                    f"{label}: job {job.id} {job.kind} {job.status}: {job.last_error}",
                )
        finally:
            _close()
        memory = memory_of(url, plan["namespaces"])
        for name in plan["namespaces"]:
            want = ref.memory[plan["memory"]].get(name)
            if memory.get(name) != want:
                section.bad(
                    "memory differing from the unkilled run",
                    example=f"{label}, killed at {delay:.2f} s, namespace {name}: "
                    f"{_difference(memory.get(name), want)}",
                )
    finally:
        engine.drop(url)


def run_kills(
    engine: Engine,
    ref: Reference,
    inputs: dict[str, Path],
    kills: int,
    rng: random.Random,
    data_limit: int | None,
    progress: ProgressFn | None,
) -> Section:
    section = Section()
    section.zero(
        "integrity failures",
        "half-applied import batches",
        "messages lost",
        "messages duplicated",
        "reruns that failed",
        "derive never exited 0",
        "jobs unfinished after restart",
        "verify failures",
        "memory differing from the unkilled run",
    )
    section.figures.update({"kills landed": 0, "finished before the kill": 0})
    order = [SCENARIOS[i % len(SCENARIOS)] for i in range(kills)]
    rng.shuffle(order)
    per: Counter = Counter()
    for done, scenario in enumerate(order):
        if progress:
            progress(done, kills, f"kills: {scenario}")
        kill_trial(engine, ref, inputs, scenario, rng, section, data_limit)
        per[scenario] += 1
    section.figures["kills per scenario"] = dict(sorted(per.items()))
    section.figures["import batch imported events"] = ref.imported
    return section


# ----------------------------------------------------------------------------- 2. concurrency


def _turn_text(writer: int, i: int) -> tuple[str, str]:
    words = ["billing", "postgres", "Lisbon", "release", "cat", "marathon", "cello", "invoice", "deploy", "Oslo"]
    return (
        f"writer {writer} turn {i}: we talked about {words[(writer + i) % 10]} and {words[i * 7 % 10]}",
        f"noted {writer}/{i}: {words[i * 3 % 10]}",
    )


def _turn_thread(writer: int, i: int) -> str:
    return f"w{writer}-t{i % 3}"


def _turn_time(writer: int, i: int) -> str:

    return (datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=i, seconds=writer)).isoformat()


def writer_main(url: str, writer: int, turns: int) -> dict:
    """Append ``turns`` turns under receipts (replaying every 37th one); an exception is counted
    and the same receipt tried again, as a harness would."""

    _open(url)
    errors: list[str] = []
    replays = 0
    for i in range(turns):
        for attempt in range(6):
            try:
                user, assistant = _turn_text(writer, i)
                append_turn(
                    LIVE,
                    _turn_thread(writer, i),
                    user,
                    assistant,
                    created_at=_turn_time(writer, i),
                    receipt_id=f"w{writer}:{i}",
                )
                if i % 37 == 36:
                    user, assistant = _turn_text(writer, i - 1)
                    result = append_turn(
                        LIVE,
                        _turn_thread(writer, i - 1),
                        user,
                        assistant,
                        created_at=_turn_time(writer, i - 1),
                        receipt_id=f"w{writer}:{i - 1}",
                    )
                    replays += 1
                    if not result.duplicate:
                        errors.append(f"replayed receipt w{writer}:{i - 1} was not seen as a duplicate")
                break
            except Exception as exc:  # every error counts; the turn is tried again under its receipt
                errors.append(f"turn {i} attempt {attempt}: {type(exc).__name__}: {exc}")
                time.sleep(0.05)
    _close()
    return {"turns": turns, "replays": replays, "errors": len(errors), "examples": errors[:5]}


def searcher_main(url: str, stop: Path, seed: int) -> dict:
    """Search through the agent tools and default retrieval until ``stop`` exists."""
    from core.agent_tools import MemoryTools
    from core.services.retrieval import default_retrieval

    rng = random.Random(seed)
    _open(url)
    words = ["billing", "postgres", "Lisbon", "release", "cat", "marathon", "cello", "invoice", "writer", "noted"]
    errors: list[str] = []
    searches = 0
    while not stop.exists() or searches == 0:
        query = " ".join(rng.sample(words, 2))
        tool = rng.choice(["search_raw", "search_events", "search_graph", "get_blocks", None])
        # A session per round, as an agent's turns are: one session would be told to switch
        # strategy after a channel found nothing new, which is advice, not an error.
        tools = MemoryTools(LIVE, session=f"searcher-{searches}", budget=None)
        try:
            if tool is None:
                default_retrieval(LIVE, query, limit=20)
            else:
                args = {} if tool == "get_blocks" else {"query": query}
                result = tools.call_safe(tool, args)
                if "error" in result:
                    errors.append(f"{tool}: {result['error'].get('code')}: {result['error'].get('message')}")
                elif tool != "get_blocks":
                    tools.call_safe("record_use", {"batch_id": result["batch_id"], "evidence_refs": []})
        except Exception as exc:
            errors.append(f"{tool or 'default_retrieval'}: {type(exc).__name__}: {exc}")
        searches += 1
    _close()
    return {"searches": searches, "errors": len(errors), "examples": errors[:5]}


def _child(role: str, args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "core.bench.reliability", role, *args],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _child_result(process: subprocess.Popen, role: str, section: Section, timeout: float) -> dict:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        section.bad("errors", example=f"{role}: did not finish within {timeout:.0f} s")
        return {}
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        tail = (err or "").strip().splitlines()
        section.bad("errors", example=f"{role}: exited {process.returncode}: {tail[-1] if tail else ''}")
        return {}
    return json.loads(lines[-1])


def run_concurrency(engine: Engine, turns: int, seed: int, workdir: Path, progress: ProgressFn | None) -> Section:

    section = Section()
    section.zero(
        "errors", "receipts lost", "messages duplicated", "gaps in positions", "jobs unfinished", "verify failures"
    )
    url = engine.new("concurrency")
    _open(url)
    configure_namespace(LIVE, block_turn_size=4)
    _close()
    stop = workdir / f"concurrency-{os.getpid()}.stop"
    stop.unlink(missing_ok=True)
    writers = [_child("writer", ["--db", url, "--writer", str(k), "--turns", str(turns)]) for k in range(2)]
    searcher = _child("searcher", ["--db", url, "--stop", str(stop), "--seed", str(seed)])
    derives = {"runs": 0}
    finished = threading.Event()

    def derive_loop() -> None:
        while True:
            done = finished.is_set()
            result = run_cli(["derive", "--json"], url)
            derives["runs"] += 1
            if result.returncode != 0:
                section.bad("errors", example=f"strata derive exited {result.returncode}: {_first_line(result)}")
            if done:
                return

    deriver = threading.Thread(target=derive_loop, daemon=True)
    deriver.start()
    timeout = max(600.0, turns * 0.2)
    started = time.monotonic()
    results = []
    for k, process in enumerate(writers):
        while process.poll() is None and progress:
            progress(int(time.monotonic() - started), int(timeout), "concurrency: writers")
            time.sleep(0.5)
        results.append(_child_result(process, f"writer {k}", section, timeout))
    finished.set()
    deriver.join()
    stop.touch()
    searched = _child_result(searcher, "searcher", section, 120)
    stop.unlink(missing_ok=True)
    for k, result in enumerate(results):
        if result.get("errors"):
            section.bad("errors", result["errors"], f"writer {k}: {result['examples'][0]}")
    if searched.get("errors"):
        section.bad("errors", searched["errors"], f"searcher: {searched['examples'][0]}")
    section.figures.update(
        {
            "writers": 2,
            "turns per writer": turns,
            "receipts replayed": sum(r.get("replays", 0) for r in results),
            "searches": searched.get("searches", 0),
            "derive runs": derives["runs"],
        }
    )
    _check_live(url, turns, section)
    engine.drop(url)
    return section


def _check_live(url: str, turns: int, section: Section) -> None:
    from core.services.verify import verify

    _open(url)
    try:
        ns = Namespace.get(Namespace.name == LIVE)
        receipts = {
            r: result
            for r, result in IngestionReceipt.select(IngestionReceipt.receipt_id, IngestionReceipt.result)
            .where(IngestionReceipt.namespace == ns)
            .tuples()
        }
        contents = Counter(c for (c,) in Message.select(Message.content).where(Message.namespace == ns).tuples())
        for writer in range(2):
            for i in range(turns):
                user, assistant = _turn_text(writer, i)
                result = receipts.get(f"w{writer}:{i}")
                if (
                    result is None
                    or len((json.loads(result) if isinstance(result, str) else result).get("message_ids", [])) != 2
                ):
                    section.bad("receipts lost", example=f"receipt w{writer}:{i}: {result!r}")
                for text in (user, assistant):
                    if contents[text] != 1:
                        key = "receipts lost" if contents[text] == 0 else "messages duplicated"
                        section.bad(key, example=f"{text!r} stored {contents[text]} times")
        for thread in Thread.select().where(Thread.namespace == ns):
            positions = [
                p
                for (p,) in Message.select(Message.position)
                .where(Message.thread == thread)
                .order_by(Message.position)
                .tuples()
            ]
            if positions and positions != list(range(positions[0], positions[0] + len(positions))):
                section.bad("gaps in positions", example=f"thread {thread.name}: {positions[:10]}…")
            turns_seen = [
                t
                for (t,) in Message.select(Message.turn)
                .where(Message.thread == thread)
                .order_by(Message.position)
                .tuples()
            ]
            if turns_seen != sorted(turns_seen) or (turns_seen and len(set(turns_seen)) * 2 != len(turns_seen)):
                section.bad("gaps in positions", example=f"thread {thread.name}: turns {turns_seen[:10]}…")
        unfinished = (
            Job.select().where((Job.namespace == ns) & Job.status.in_(["pending", "running", "failed"])).count()
        )
        if unfinished:
            section.bad("jobs unfinished", unfinished)
        report = verify(LIVE)
        if not report.ok:
            section.bad("verify failures", example="; ".join(report.problems[:3]))
        section.figures["messages stored"] = sum(contents.values())
    finally:
        _close()


# ----------------------------------------------------------------------------- 3. fuzz


def write_mark() -> Any:
    """Something that changes whenever this process writes to the store: SQLite counts every row
    its connection changed; on PostgreSQL the newest id of each table that grows, every
    namespace's revision and the stamps retrieval, use and lifting update."""

    if is_sqlite():
        return db.connection().total_changes

    tables = [
        model._meta.table_name
        for model in (
            models.Message,
            models.Event,
            models.RetrievalBatch,
            models.RetrievalTrace,
            models.UsageReceipt,
            models.ImportBatch,
            models.ImportItem,
            models.Job,
            models.GraphNode,
            models.GraphFact,
            models.GraphEdge,
            models.Namespace,
            models.Thread,
            models.Block,
            models.IngestionReceipt,
        )
    ]
    parts = " UNION ALL ".join(f"SELECT '{t}', MAX(id) FROM \"{t}\"" for t in tables)
    rows = tuple(db.execute_sql(parts).fetchall())
    revisions = tuple(db.execute_sql("SELECT name, revision, updated_at FROM namespace ORDER BY id").fetchall())
    # Updates that add no row: retrieval stamps, reinforcement, lifted blocks.
    touched = tuple(
        db.execute_sql(
            f'SELECT (SELECT MAX(last_retrieved_at) FROM "{models.Event._meta.table_name}"), '
            f'(SELECT SUM(mention_count) FROM "{models.Event._meta.table_name}"), '
            f'(SELECT MAX(last_lifted_at) FROM "{models.Block._meta.table_name}")'
        ).fetchall()
    )
    return rows, revisions, touched


_WORDS = (
    "billing postgres Lisbon release cat marathon cello invoice deploy Oslo Maya Tobias Iris plan "
    "decided moved job tea coffee Globex"
).split()
_NASTY = [
    "\x00",
    "\ud800",
    "\udfff",
    "\udc80\udcff",
    "\u202e",
    "\ufeff",
    "\u2028",
    "🙂",
    "e\u0301",
    "'",
    '"',
    "\\",
    "%",
    "_",
    "*",
    "(",
    ")",
    "-",
    "NOT",
    "AND",
    "OR",
    "NEAR",
    "^",
    ":",
    "{",
    "}",
    "[",
    "]",
    "\t",
    "\r",
    "\n",
    "' OR 1=1 --",
    '"unclosed',
    "a" * 300,
]


def _bad_bytes(rng: random.Random) -> str:
    raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
    return raw.decode("utf-8", "surrogateescape")


def fuzz_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
    if roll < 0.55:
        return "".join(rng.choice(_NASTY + _WORDS) + rng.choice(["", " "]) for _ in range(rng.randint(1, 8)))
    if roll < 0.65:
        return rng.choice(_WORDS) + _bad_bytes(rng)
    if roll < 0.72:
        return rng.choice(["x", "ab ", "\x00", "é"]) * rng.choice([5_000, 100_000, 300_000])
    if roll < 0.8:
        return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randint(1, 40)))
    if roll < 0.85:
        return rng.choice(["", " ", "\n\t", "\x00"])
    return rng.choice(
        [
            "event:1",
            "event:99999999999999999999",
            "block:1:level:2",
            "node:3",
            "batch_1",
            "batch_0",
            "batch_-1",
            "-1",
            "0",
            "1e309",
            "NaN",
            "12",
            " 7 ",
            "event:" + "9" * 40,
        ]
    )


def deep(rng: random.Random) -> Any:
    value: Any = rng.choice([1, "x", None])
    for _ in range(rng.choice([63, 64, 65, 200, 5_000, 50_000])):
        value = [value] if rng.random() < 0.5 else {"k": value}
    return value


def fuzz_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return fuzz_text(rng)
    if roll < 0.5:
        return rng.choice([0, 1, -1, 7, 2**31, 2**63 - 1, 2**63, 10**30, -(10**30)])
    if roll < 0.56:
        return rng.choice([0.5, -0.0, 1e308, float("inf"), float("-inf"), float("nan")])
    if roll < 0.62:
        return rng.choice([True, False, None])
    if roll < 0.8 and depth < 3:
        return [fuzz_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.92 and depth < 3:
        return {fuzz_text(rng)[:20]: fuzz_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return deep(rng)


def plausible(rng: random.Random, spec: dict) -> Any:
    kinds = spec.get("type", "string")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "enum" in spec:
        return rng.choice(spec["enum"])
    if "array" in kinds:
        return [rng.choice(["event:1", "node:1", "block:1", "raw:1", "event:2"]) for _ in range(rng.randint(0, 3))]
    if "integer" in kinds and ("string" not in kinds or rng.random() < 0.5):
        low, high = spec.get("minimum", 1), spec.get("maximum", 20)
        return rng.randint(low, high)
    if "string" in kinds and "integer" in kinds:
        return rng.choice(["batch_1", "batch_2", "1", "event:1", "node:1", "block:1"])
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))


def fuzz_tool_call(rng: random.Random) -> tuple[Any, Any]:
    from core.agent_schemas import TOOL_SPECS

    names = list(TOOL_SPECS)
    name: Any = rng.choice(names)
    if rng.random() < 0.05:
        name = rng.choice([fuzz_text(rng), None, 3, "search_events\x00", "Search_Events", "record_use "])
    spec = TOOL_SPECS.get(name, TOOL_SPECS["search_events"]) if isinstance(name, str) else TOOL_SPECS["search_raw"]
    properties = spec["inputSchema"]["properties"]
    args: Any = {
        key: plausible(rng, prop)
        for key, prop in properties.items()
        if key in spec["inputSchema"]["required"] or rng.random() < 0.4
    }
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        if roll < 0.6 and properties:
            args[rng.choice(list(properties))] = fuzz_value(rng)
        elif roll < 0.7:
            args[fuzz_text(rng)[:30]] = fuzz_value(rng)
        elif roll < 0.8 and args:
            args.pop(rng.choice(list(args)))
        elif roll < 0.85:
            args = rng.choice([None, [], "query", 5, deep(rng)])
            break
    return name, args


def _fuzz_json_value(rng: random.Random, value: Any) -> Any:
    """``value`` with one leaf or member replaced by a fuzzed value."""
    if isinstance(value, dict) and value and rng.random() < 0.85:
        key = rng.choice(list(value))
        return {**value, key: _fuzz_json_value(rng, value[key])}
    if isinstance(value, list) and value and rng.random() < 0.85:
        index = rng.randrange(len(value))
        return value[:index] + [_fuzz_json_value(rng, value[index])] + value[index + 1 :]
    return fuzz_value(rng)


def _dumps(value: Any, ascii: bool = False) -> str:
    try:
        return json.dumps(value, ensure_ascii=ascii)
    except RecursionError:
        # Deeper than json can write: the same depth of arrays, written out.
        depth = 0
        while isinstance(value, (list, dict)) and value:
            value = value[0] if isinstance(value, list) else next(iter(value.values()))
            depth += 1
        return "[" * depth + "1" + "]" * depth


def corrupt_text(rng: random.Random, text: str) -> str | bytes:
    roll = rng.random()
    if roll < 0.2:
        return text
    if roll < 0.35:
        return text[: rng.randrange(len(text) + 1)]
    if roll < 0.5:
        data = bytearray(text.encode("utf-8", "surrogatepass"))
        for _ in range(rng.randint(1, 4)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if roll < 0.6:
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(["\\ud800", "\\u0000", "\x00", "\\udfff\\ud800", "\ufffe", "\\"]) + text[at:]
    if roll < 0.7:
        return text.encode("utf-8", "surrogatepass") + bytes([0xFF, 0xFE, 0xC3])
    if roll < 0.78:
        return rng.choice(["", " ", "[]", "{}", "null", "[" * 5000, '{"a":' * 3000, "[1,]", "NaN", "\ufeff" + text])
    if roll < 0.85:
        return text * rng.randint(2, 5)
    return text.replace(rng.choice(['"', ",", ":", "}", "]"]), rng.choice(["", "'", ";", "]]"]), 1)


def _ingest_doc(rng: random.Random, fmt: str) -> Any:
    turns = [
        {
            "role": rng.choice(["user", "assistant"]),
            "content": fuzz_text(rng) if rng.random() < 0.3 else " ".join(rng.sample(_WORDS, 3)),
        }
        for _ in range(rng.randint(1, 4))
    ]
    if fmt == "jsonl":
        return [
            {
                "thread": rng.choice(["t1", "t2", " t1", fuzz_text(rng)[:30]]),
                "created_at": "2024-03-01T10:00:00Z",
                **turn,
            }
            for turn in turns
        ]
    if fmt == "locomo":
        conv = {
            "speaker_a": "Ana",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": rng.choice(["Ana", "Bo"]), "dia_id": f"D1:{i}", "text": t["content"]}
                for i, t in enumerate(turns, 1)
            ],
        }
        return [{"sample_id": f"fz-{rng.randrange(50)}", "conversation": conv, "qa": []}]
    return [
        {
            "question_id": f"q-{rng.randrange(50)}",
            "question": "what?",
            "answer": "x",
            "question_type": "single-session-user",
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["s1"],
            "haystack_dates": ["2023/05/30 (Tue) 23:40"],
            "haystack_sessions": [turns],
            "answer_session_ids": ["s1"],
        }
    ]


def fuzz_ingest_file(rng: random.Random, fmt: str) -> str | bytes:
    doc = _ingest_doc(rng, fmt)
    if rng.random() < 0.4:
        doc = _fuzz_json_value(rng, doc)
    if fmt == "jsonl":
        text = "\n".join(_dumps(line) for line in (doc if isinstance(doc, list) else [doc]))
    else:
        text = _dumps(doc)
    return corrupt_text(rng, text)


def fuzz_import_text(rng: random.Random, fmt: str) -> str:
    if fmt == "text":
        text = "\n".join(
            f"- {fuzz_text(rng) if rng.random() < 0.3 else ' '.join(rng.sample(_WORDS, 4))}"
            for _ in range(rng.randint(1, 5))
        )
    else:
        facts = [" ".join(rng.sample(_WORDS, 5)) + "." for _ in range(rng.randint(1, 4))]
        doc: Any = (
            _v2_export(facts)
            if fmt == "v2"
            else [{"memory": fact, "created_at": "2024-01-02T03:04:05Z", "categories": ["fact"]} for fact in facts]
        )
        if rng.random() < 0.5:
            doc = _fuzz_json_value(rng, doc)
        text = _dumps(doc)
    out = corrupt_text(rng, text)
    return out.decode("utf-8", "surrogateescape") if isinstance(out, bytes) else out


def fuzz_mcp_line(rng: random.Random, serial: int) -> str:
    roll = rng.random()
    ident: Any = rng.choice(
        [serial, f"r{serial}", serial, f"r{serial}", None, True, 1.5, [serial], {"a": 1}, -serial, 2**70]
    )
    if roll < 0.45:
        name, args = fuzz_tool_call(rng)
        message: Any = {
            "jsonrpc": "2.0",
            "id": ident,
            "method": "tools/call",
            "params": {"name": name, "arguments": args},
        }
    elif roll < 0.6:
        message = {
            "jsonrpc": rng.choice(["2.0", "2.0", "1.0", None]),
            "id": ident,
            "method": rng.choice(
                ["tools/list", "ping", "resources/list", "prompts/get", "initialize", fuzz_text(rng)[:40], "tools/call"]
            ),
            "params": fuzz_value(rng),
        }
    elif roll < 0.7:
        message = {
            "jsonrpc": "2.0",
            "method": rng.choice(
                ["notifications/cancelled", "notifications/progress", "notifications/" + fuzz_text(rng)[:20]]
            ),
            "params": fuzz_value(rng),
        }
    elif roll < 0.8:
        message = _fuzz_json_value(
            rng,
            {
                "jsonrpc": "2.0",
                "id": ident,
                "method": "tools/call",
                "params": {"name": "search_raw", "arguments": {"query": "cat"}},
            },
        )
    else:
        base = _dumps(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "method": "tools/call",
                "params": {"name": "search_events", "arguments": {"query": fuzz_text(rng)[:200]}},
            }
        )
        out = corrupt_text(rng, base)
        text = out.decode("utf-8", "replace") if isinstance(out, bytes) else _as_read(out)
        return text.replace("\n", " ").replace("\r", " ")
    if isinstance(message, dict) and "id" in message and message["id"] is None and rng.random() < 0.5:
        message.pop("id")
    text = _dumps(message, ascii=rng.random() < 0.5)
    return _as_read(text.replace("\n", " "))


def _as_read(text: str) -> str:
    """A line as the stdio transport hands it on: bytes decoded as UTF-8 with errors replaced, so
    never a lone surrogate (a JSON escape of one stays an escape)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def readable_id(line: str) -> tuple[bool, Any]:
    """(whether ``line`` is a request a reply must answer, the id it must carry): a JSON object
    with a string method and an id that is a string or an integer."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return False, None
    if not isinstance(obj, dict) or not isinstance(obj.get("method"), str) or "id" not in obj:
        return False, None
    ident = obj["id"]
    if isinstance(ident, bool) or not isinstance(ident, (str, int)):
        return False, None
    if isinstance(ident, str) and re.search("[\ud800-\udfff]", ident):
        return False, None  # no reply can carry it (it cannot be encoded)
    return True, ident


class _Replies:
    """Standard output for the MCP stdio transport: each reply parsed and handed on."""

    def __init__(self, send) -> None:
        self._send = send

    async def write(self, text: str) -> None:
        for line in text.split("\n"):  # not splitlines: a reply may hold U+2028 unescaped
            if line.strip():
                await self._send.send(json.loads(line))

    async def flush(self) -> None:
        return None


MCP_REPLY_TIMEOUT = 20.0


def fuzz_mcp(tools, lines: list[str], section: Section, on_line: Callable[[], None]) -> None:
    """Feed ``lines`` to the MCP server as ``core.mcp_server.serve_stdio`` serves it (its checked
    standard input, the SDK's stdio transport, its answering reader, the server), through a pipe
    instead of this process's standard input, one line at a time, each followed by a ping that
    marks where its replies end."""
    # start-up time: the MCP SDK (anyio, mcp) loads in ~0.4 s and only the MCP trials need it
    import anyio
    from mcp.server.stdio import stdio_server

    from core import mcp_server

    done_so_far = [0]

    async def session(todo: list[str]) -> None:
        reply_send, reply_receive = anyio.create_memory_object_stream(1024)
        read_fd, write_fd = os.pipe()
        source, sink = os.fdopen(read_fd, "rb"), os.fdopen(write_fd, "wb")
        try:
            with anyio.CancelScope() as scope:  # cancelled at the end: the transport's tasks wait for more
                await serve(todo, source, sink, reply_send, reply_receive, scope)
        finally:
            sink.close()
            source.close()

    async def send(sink, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass") + b"\n"

        def write() -> None:
            sink.write(data)
            sink.flush()

        await anyio.to_thread.run_sync(write)

    async def serve(todo, source, sink, reply_send, reply_receive, scope) -> None:
        server = mcp_server.build_server(tools)
        checked = mcp_server._CheckedLines(source)  # noqa: SLF001 - the server's own stdin, as served
        async with stdio_server(stdin=checked, stdout=_Replies(reply_send)) as (read, write):
            checked.attach(write)
            reader = mcp_server._AnsweringReader(read, write)  # noqa: SLF001
            async with anyio.create_task_group() as group:
                group.start_soon(server.run, reader, write, server.create_initialization_options())

                async def until(ident: Any) -> list[dict]:
                    seen = []
                    with anyio.fail_after(MCP_REPLY_TIMEOUT):
                        while True:
                            reply = await reply_receive.receive()
                            seen.append(reply)
                            if reply.get("id") == ident:
                                return seen

                await send(
                    sink,
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": "init",
                            "method": "initialize",
                            "params": {
                                "protocolVersion": "2025-06-18",
                                "capabilities": {},
                                "clientInfo": {"name": "reliability", "version": "1"},
                            },
                        }
                    ),
                )
                await until("init")
                await send(sink, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                for number, line in enumerate(todo):
                    sentinel = f"sentinel-{number}"
                    request, ident = readable_id(line)
                    mark = write_mark()
                    await send(sink, line)
                    await send(sink, json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "ping"}))
                    try:
                        replies = await until(sentinel)
                        if request and ident != sentinel and not any(r.get("id") == ident for r in replies):
                            replies += await until(ident)
                    except TimeoutError:
                        section.bad(
                            "MCP requests unanswered",
                            example=f"no reply within {MCP_REPLY_TIMEOUT:.0f} s to {line[:200]!r}",
                        )
                        done_so_far[0] += 1
                        on_line()
                        break
                    _check_mcp_replies(
                        line, request, ident, [r for r in replies if r.get("id") != sentinel], mark, section
                    )
                    done_so_far[0] += 1
                    on_line()
                scope.cancel()

    while done_so_far[0] < len(lines):
        try:
            anyio.run(session, lines[done_so_far[0] :])
        except Exception as exc:  # the server (or the transport) let an exception out: a failure
            detail = exc
            while isinstance(detail, BaseExceptionGroup) and detail.exceptions:
                detail = detail.exceptions[0]
            line = lines[done_so_far[0]][:200]
            section.bad("uncaught exceptions", example=f"MCP server on {line!r}: {type(detail).__name__}: {detail}")
            done_so_far[0] += 1  # the line it failed on is not sent again
            on_line()


def _check_mcp_replies(line: str, request: bool, ident: Any, replies: list[dict], mark: Any, section: Section) -> None:
    errors = [r for r in replies if "error" in r]
    answers = [r for r in replies if r.get("id") == ident] if request else []
    if request and len(answers) != 1:
        section.bad(
            "MCP requests unanswered" if not answers else "MCP replies repeated",
            example=f"{len(answers)} replies with id {ident!r} to {line[:200]!r}",
        )
    for reply in errors:
        if request and reply.get("id") != ident:
            section.bad(
                "MCP error replies without the request's id",
                example=f"reply {json.dumps(reply)[:200]} to {line[:200]!r}",
            )
    if not request and len(replies) > 1:
        section.bad("MCP replies repeated", example=f"{len(replies)} replies to {line[:200]!r}")
    figures = section.figures
    figures["MCP requests answered"] = figures.get("MCP requests answered", 0) + len(answers)
    figures["MCP error replies"] = figures.get("MCP error replies", 0) + len(errors)
    refused = bool(errors)
    for reply in answers:
        result = reply.get("result")
        if isinstance(result, dict) and result.get("isError"):
            refused = True
            payload = result.get("structuredContent") or {}
            figures["MCP tool refusals"] = figures.get("MCP tool refusals", 0) + 1
            if (payload.get("error") or {}).get("code") == "internal_error":
                section.bad("uncaught exceptions", example=f"MCP tool: {payload['error'].get('message', '')[:300]}")
    if refused and write_mark() != mark:
        section.bad("writes on rejected input", example=f"MCP {line[:200]!r}: {json.dumps(replies)[:300]}")


def run_fuzz(
    engine: Engine, template: str, total: int, seed: int, workdir: Path, progress: ProgressFn | None
) -> Section:
    from core.agent_tools import MemoryTools
    from core.services.import_preview import start_import
    from core.services.retrieval import default_retrieval

    section = Section()
    section.zero(
        "uncaught exceptions",
        "writes on rejected input",
        "MCP requests unanswered",
        "MCP replies repeated",
        "MCP error replies without the request's id",
    )
    rng = random.Random(seed)
    shares = {
        "ingest files": 0.15,
        "import texts": 0.15,
        "agent tool calls": 0.35,
        "search queries": 0.15,
        "MCP lines": 0.20,
    }
    counts = {name: int(total * share) for name, share in shares.items()}
    counts["agent tool calls"] += total - sum(counts.values())
    url = engine.copy(template, "fuzz")
    _open(url)
    quiet = [logging.getLogger(name) for name in ("strata.mcp", "mcp", "strata")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:
        logger.setLevel(logging.CRITICAL)
    done = [0]

    def tick(label: str) -> None:
        done[0] += 1
        if progress and done[0] % 50 == 0:
            progress(done[0], total, f"fuzz: {label}")

    def attempt(label: str, call: Callable[[], Any], refused: Callable[[Any], bool] = lambda _: False) -> None:
        mark = write_mark()
        try:
            result = call()
        except StrataError:
            rejected = True
        except Exception as exc:  # anything but StrataError reaching the caller is a failure
            section.bad("uncaught exceptions", example=f"{label}: {type(exc).__name__}: {str(exc)[:300]}")
            rejected = True
            _recover_connection()
        else:
            rejected = refused(result)
        if rejected and write_mark() != mark:
            section.bad("writes on rejected input", example=f"{label}")
        tick(label)

    try:
        folder = workdir / f"fuzz-{os.getpid()}"
        folder.mkdir(parents=True, exist_ok=True)
        for number in range(counts["ingest files"]):
            fmt = INGEST_FORMATS[number % len(INGEST_FORMATS)]
            content = fuzz_ingest_file(rng, fmt)
            path = folder / f"input-{number % 8}.{'jsonl' if fmt == 'jsonl' else 'json'}"
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
            namespace = rng.choice([None, "rel-fuzz", " rel-fuzz ", "", fuzz_text(rng)[:40]])
            attempt(f"ingest {fmt} {content[:120]!r}", lambda: ingest(fmt, path, namespace=namespace))
        shutil.rmtree(folder, ignore_errors=True)

        for number in range(counts["import texts"]):
            fmt = IMPORT_FORMATS[number % len(IMPORT_FORMATS)]
            text = fuzz_import_text(rng, fmt)
            namespace = CHAT if rng.random() < 0.9 else fuzz_text(rng)[:40]
            attempt(
                f"import {fmt} {text[:120]!r}",
                lambda: start_import(namespace, text, format=fmt, recover=False, provider="offline"),
            )

        sessions = [MemoryTools(CHAT, session=f"fuzz-{k}", budget=None) for k in range(3)]
        sessions.append(MemoryTools(CHAT))
        for _ in range(counts["agent tool calls"]):
            tools = rng.choice(sessions)
            name, args = fuzz_tool_call(rng)
            attempt(
                f"tool {name!r} {_dumps(args)[:200]}",
                lambda: tools.call_safe(name, args),
                lambda result: isinstance(result, dict) and "error" in result,
            )

        searches = {
            "search_raw": search_raw,
            "search_events": search_events,
            "search_graph": search_graph,
            "default_retrieval": default_retrieval,
        }
        for _ in range(counts["search queries"]):
            name = rng.choice(list(searches))
            query = fuzz_text(rng)
            attempt(f"{name} {query[:120]!r}", lambda: searches[name](CHAT, query))

        lines = [fuzz_mcp_line(rng, number) for number in range(counts["MCP lines"])]
        fuzz_mcp(MemoryTools(CHAT, session="fuzz-mcp", budget=None), lines, section, lambda: tick("MCP"))
    finally:
        for logger, level in zip(quiet, levels):
            logger.setLevel(level)
        _close()
        engine.drop(url)
    section.figures.update({f"{name} fuzzed": count for name, count in counts.items()})
    section.figures["inputs fuzzed"] = total
    return section


def _recover_connection() -> None:
    """After an unexpected exception a transaction may be left open; roll it back."""

    try:
        if db.in_transaction():
            db.rollback()
    except Exception:
        pass


# ----------------------------------------------------------------------------- 4. round trips


def run_round_trips(engine: Engine, template: str, count: int, seed: int, progress: ProgressFn | None) -> Section:
    from core.services.derive import run_pending
    from core.services.import_choices import decide
    from core.services.import_commit import commit_batch
    from core.services.import_preview import preview_import
    from core.services.import_undo import undo_batch

    section = Section()
    section.zero(
        "exports differing after undo",
        "other namespace changed by undo",
        "memory differing from never importing",
        "errors",
    )
    rng = random.Random(seed)
    # The twin gets only the writes made to the namespace itself between a commit and its undo: after
    # the undo the two must hold the same memory (ids aside: the import used some).
    twin = engine.copy(template, "round-trips-twin")
    url = engine.copy(template, "round-trips")
    _open(url)
    stats: Counter = Counter()
    try:
        chat = Namespace.get(Namespace.name == CHAT)
        stored = list(Event.select().where(Event.namespace == chat).order_by(Event.id).limit(40))
        titles = [(e.title, e.summary) for e in stored]
        append_messages(
            OTHER,
            "seed",
            [
                {
                    "role": "user",
                    "content": "Kenji repaired an antique clock.",
                    "created_at": "2025-07-01T09:00:00+00:00",
                },
                {"role": "assistant", "content": "Lovely.", "created_at": "2025-07-01T09:00:05+00:00"},
            ],
            close_turn=True,
        )
        run_pending(OTHER)
        for number in range(count):
            if progress:
                progress(number, count, "round trips")
            before = export_namespace(CHAT)
            candidates = []
            for _ in range(rng.randint(1, 5)):
                kind = rng.random()
                if kind < 0.3 and titles:
                    title, summary = rng.choice(titles)
                    candidates.append({"title": title[:60], "summary": summary})
                else:
                    text = f"{rng.choice(['Maya', 'Ravi', 'Iris', 'Tobias'])} " + " ".join(rng.sample(_WORDS, 5)) + "."
                    candidates.append(
                        {
                            "title": text[:60],
                            "summary": text,
                            "temporal": {"mentionedAt": f"2025-0{rng.randint(1, 9)}-01"},
                        }
                    )
            try:
                preview = preview_import(
                    CHAT,
                    json.dumps(
                        {
                            "schemaVersion": "stratagate.external-memory.v2",
                            "sourceType": "external_ai_memory_export",
                            "candidates": candidates,
                        }
                    ),
                )
                for item in preview.items:
                    if rng.random() < 0.4:
                        action = rng.choice(["add", "ignore", "merge", "supersede", "conflict"])
                        targets = [m.event_id for m in item.matches]
                        if action in ("merge", "supersede", "conflict"):
                            if not targets:
                                continue
                            decide(preview.batch.id, item.position, action, [rng.choice(targets)])
                        else:
                            decide(preview.batch.id, item.position, action)
                committed = commit_batch(preview.batch.id)
                stats["events imported"] += committed.batch.imported_count or 0
                if rng.random() < 0.5:
                    run_pending(CHAT)
                    stats["projected before the undo"] += 1
                roll = rng.random()
                same = roll < 0.25
                if same:
                    turns = _later_turns(rng, number)
                    _write_later(turns, number)
                    stats["with later writes to the same namespace"] += 1
                elif roll < 0.7:
                    _unrelated_write(rng, number, append_messages, run_pending, forget_event)
                    stats["with writes to another namespace"] += 1
                other_before = export_namespace(OTHER)
                undo_batch(preview.batch.id)
                if export_namespace(OTHER) != other_before:
                    section.bad("other namespace changed by undo", example=f"round trip {number}")
                if same:
                    mine = comparable(CHAT)
                    _close()
                    _open(twin)
                    _write_later(turns, number)
                    never = comparable(CHAT)
                    _close()
                    _open(url)
                    if mine != never:
                        section.bad(
                            "memory differing from never importing",
                            example=f"round trip {number}: {_difference(mine, never)}",
                        )
                    continue
                after = export_namespace(CHAT)
                if after != before:
                    section.bad(
                        "exports differing after undo",
                        example=f"round trip {number}: {_difference(json.loads(after), json.loads(before))}",
                    )
            except Exception as exc:
                section.bad("errors", example=f"round trip {number}: {type(exc).__name__}: {exc}")
                _recover_connection()
        stats["round trips"] = count
    finally:
        _close()
        engine.drop(url)
        engine.drop(twin)
    section.figures.update(stats)
    return section


_LATER = (
    "Kenji repaired an antique clock for his neighbour.",
    "Kenji booked a ferry to the northern islands.",
    "Kenji finished knitting a green scarf.",
    "Kenji adopted two goldfish named Pip and Pop.",
    "Kenji started learning the accordion.",
)


def _later_turns(rng: random.Random, number: int) -> list[dict]:
    """A few turns by someone no import speaks of, dated after everything imported."""
    messages = []
    for turn in range(rng.randint(1, 3)):
        day = f"2026-0{1 + number % 9}-{10 + turn:02d}"
        messages += [
            {
                "role": "user",
                "speaker": "Kenji",
                "content": _LATER[(number + turn) % len(_LATER)],
                "created_at": f"{day}T09:00:00+00:00",
            },
            {"role": "assistant", "content": "Lovely.", "created_at": f"{day}T09:00:05+00:00"},
        ]
    return messages


def _write_later(messages: list[dict], number: int) -> None:
    from core.services.derive import run_pending

    append_messages(CHAT, f"later-{number}", messages, close_turn=True, close_thread=True)
    run_pending(CHAT)


def _unrelated_write(rng: random.Random, number: int, append_messages, run_pending, forget_event) -> None:

    roll = rng.random()
    if roll < 0.5:
        day = 1 + number % 28
        append_messages(
            OTHER,
            f"later-{number % 5}",
            [
                {
                    "role": "user",
                    "speaker": "Kenji",
                    "content": f"Kenji {' '.join(rng.sample(_WORDS, 4))} on day {day}.",
                    "created_at": f"2025-08-{day:02d}T09:00:00+00:00",
                },
                {"role": "assistant", "content": "Noted.", "created_at": f"2025-08-{day:02d}T09:00:05+00:00"},
            ],
            close_turn=True,
        )
    elif roll < 0.8:
        run_pending(OTHER)
    else:
        other = Namespace.get(Namespace.name == OTHER)
        live = list(Event.select().where((Event.namespace == other) & (Event.status == "active")).limit(5))
        if live:
            forget_event(rng.choice(live).id)


# ----------------------------------------------------------------------------- 5. isolation

SECRETS = ("zorblax", "quindlewhip", "marrowfjord", "plinthavex", "vexolutria")


def _secret_turns() -> list[tuple[str, str]]:
    a, b, c, d, e = SECRETS
    return [
        (f"My password hint is {a} and I keep it in the {b} drawer.", f"Noted: {a} in the {b} drawer."),
        (f"Dr. Harriet {c.title()} works at {d.title()} Labs in Reykjavik.", f"Got it, {c.title()} at {d.title()}."),
        (f"We decided to ship project {e.title()} on Friday.", f"Shipping {e.title()} on Friday."),
        (f"My sister Olga {c.title()} lives in {b.title()}ville.", "Good to know."),
        (f"The {a} launch moved to March 3.", f"Updated: {a} launch on March 3."),
    ]


def run_isolation(engine: Engine, template: str, progress: ProgressFn | None) -> Section:
    # start-up time: the MCP SDK, as in fuzz_mcp
    import anyio

    from core.agent_tools import MemoryTools
    from core.services.context import auto_context
    from core.services.derive import run_pending
    from core.services.retrieval import default_retrieval

    section = Section()
    section.zero("leaks", "errors")
    url = engine.copy(template, "isolation")
    _open(url)
    probes = 0
    try:
        configure_namespace(SECRET, block_turn_size=2)
        for i, (user, assistant) in enumerate(_secret_turns()):
            append_turn(
                SECRET,
                "vault",
                user,
                assistant,
                created_at=f"2024-02-{10 + i:02d}T10:00:00+00:00",
                receipt_id=f"secret-{i}",
            )
        close_thread(SECRET, "vault")
        if run_pending(SECRET).failed:
            raise BenchSetupError("isolation: the secret namespace did not derive")
        secret = Namespace.get(Namespace.name == SECRET)
        ids = {
            "event": [i for (i,) in Event.select(Event.id).where(Event.namespace == secret).tuples()],
            "block": [i for (i,) in Block.select(Block.id).where(Block.namespace == secret).tuples()],
            "node": [i for (i,) in GraphNode.select(GraphNode.id).where(GraphNode.namespace == secret).tuples()],
            "message": [i for (i,) in Message.select(Message.id).where(Message.namespace == secret).tuples()],
        }
        if not ids["event"]:
            raise BenchSetupError("isolation: the secret namespace has no events to leak")
        secret_words = [w.lower() for w in SECRETS]
        queries = [
            *SECRETS,
            " ".join(SECRETS),
            "password hint drawer",
            "Reykjavik Labs",
            "ship project Friday",
            "sister Olga",
            "launch March",
            "what is my password hint?",
            "who works at the labs?",
        ]

        def leaked(where: str, value: Any, own: bool = False) -> None:
            nonlocal probes
            probes += 1
            text = json.dumps(value, default=lambda o: getattr(o, "__dict__", str(o)), ensure_ascii=False).lower()
            words = [w for w in secret_words if w in text]
            if words:
                section.bad("leaks", example=f"{where}: {words[0]!r} in {text[:200]}")

        tools = MemoryTools(CHAT, session="probe", budget=None)
        for query in queries:
            leaked(
                f"search_raw {query!r}",
                [h.__dict__ if hasattr(h, "__dict__") else h for h in search_raw(CHAT, query, limit=50)],
            )
            leaked(f"search_events {query!r}", [repr(h) for h in search_events(CHAT, query, limit=20)])
            leaked(f"search_graph {query!r}", [repr(h) for h in search_graph(CHAT, query, limit=20)])
            leaked(f"default_retrieval {query!r}", [repr(h) for h in default_retrieval(CHAT, query, limit=50)])
            leaked(f"auto_context {query!r}", repr(auto_context(CHAT, query)))
            for tool in ("search_events", "search_graph", "search_raw"):
                for scope in [None, "namespace", "session"] if tool == "search_raw" else [None]:
                    args = {"query": query} | ({"scope": scope} if scope else {})
                    leaked(f"{tool} {args}", tools.call_safe(tool, args))
        leaked("get_blocks", tools.call_safe("get_blocks", {}))
        for kind, tool, prefix in (
            ("event", "expand_event", "event"),
            ("node", "expand_graph_node", "node"),
            ("block", "expand_block", "block"),
        ):
            for ident in ids[kind]:
                for value in (ident, f"{prefix}:{ident}"):
                    result = tools.call_safe(tool, {"id": value})
                    leaked(f"{tool} {value!r}", result)
                    if "error" not in result:
                        section.bad("leaks", example=f"{tool} {value!r} from {CHAT} answered: {str(result)[:200]}")
        for batch in range(1, 4):
            leaked(
                f"assess batch {batch}",
                tools.call_safe(
                    "assess",
                    {
                        "batch_id": batch,
                        "verdict": "sufficient",
                        "evidence_refs": [f"event:{i}" for i in ids["event"]],
                        "fit": "x",
                        "missing": "",
                        "next_strategy": "answer",
                    },
                ),
            )

        # start-up time: the MCP SDK, as in fuzz_mcp
        from mcp import Client

        from core.mcp_server import build_server

        async def over_mcp() -> None:
            async with Client(build_server(MemoryTools(CHAT, session="probe-mcp", budget=None))) as client:
                for query in queries:
                    for tool in ("search_events", "search_graph", "search_raw"):
                        result = await client.call_tool(tool, {"query": query})
                        leaked(f"MCP {tool} {query!r}", [c.model_dump() for c in result.content])
                for ident in ids["event"] + [f"event:{i}" for i in ids["event"]]:
                    result = await client.call_tool("expand_event", {"id": ident})
                    leaked(f"MCP expand_event {ident!r}", [c.model_dump() for c in result.content])
                    if not result.is_error:
                        section.bad("leaks", example=f"MCP expand_event {ident!r} answered")

        anyio.run(over_mcp)
    except BenchSetupError:
        raise
    except Exception as exc:
        section.bad("errors", example=f"{type(exc).__name__}: {exc}")
    finally:
        _close()
        engine.drop(url)
    section.figures["probes"] = probes
    return section


# ----------------------------------------------------------------------------- the run


def run_reliability(
    *,
    workdir: Path,
    engine: str = "sqlite",
    server_url: str | None = None,
    kills: int = DEFAULTS["kills"],
    fuzz: int = DEFAULTS["fuzz"],
    round_trips: int = DEFAULTS["round_trips"],
    turns: int = DEFAULTS["turns"],
    seed: int = 7,
    data: Path | None = None,
    data_limit: int | None = None,
    sections: tuple[str, ...] = SECTIONS,
    progress: ProgressFn | None = None,
) -> dict:
    """Run the sections asked for and return the report (``failures``: how many figures that
    must be 0 are not)."""
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    commit = git_commit()
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    stores = Engine(engine, workdir, server_url)
    rng = random.Random(seed)
    report: dict[str, Any] = {
        "benchmark": "reliability",
        "engine": engine,
        "seed": seed,
        "commit": commit,
        "machine": {"cores": os.cpu_count()},
        "asked": {
            "kills": kills,
            "fuzz": fuzz,
            "round_trips": round_trips,
            "turns": turns,
            "data": str(data) if data else None,
        },
    }
    results: dict[str, Section] = {}
    try:
        inputs = write_inputs(workdir, seed, data)
        if data is not None and data_limit is None:
            data_limit = 1  # a whole LoCoMo file takes minutes to derive: its first conversation
        reference = build_reference(stores, inputs, data_limit=data_limit, progress=progress)
        report["reference_seconds"] = {k: round(v, 2) for k, v in reference.seconds.items()}
        for name in sections:
            began = time.monotonic()
            if name == "kills":
                section = run_kills(stores, reference, inputs, kills, random.Random(rng.random()), data_limit, progress)
            elif name == "concurrency":
                section = run_concurrency(stores, turns, seed, workdir, progress)
            elif name == "fuzz":
                section = run_fuzz(stores, reference.urls["derived"], fuzz, seed, workdir, progress)
            elif name == "round_trips":
                section = run_round_trips(stores, reference.urls["derived"], round_trips, seed, progress)
            else:
                section = run_isolation(stores, reference.urls["derived"], progress)
            section.seconds = time.monotonic() - began
            results[name] = section
    finally:
        _close()
        stores.close()
    report["sections"] = {name: section.to_dict() for name, section in results.items()}
    report["failures"] = sum(len(section.failures()) for section in results.values())
    report["seconds"] = round(time.monotonic() - started, 1)
    return report


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.bench.reliability")
    parser.add_argument("role", choices=["writer", "searcher"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--writer", type=int, default=0)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--stop", type=Path)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.role == "writer":
        result = writer_main(args.db, args.writer, args.turns)
    else:
        result = searcher_main(args.db, args.stop, args.seed)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
