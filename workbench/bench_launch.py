"""`strata bench ui`, the user's view: `strata ui` launched and quit as a user does it.

Each run spawns the real entry point (this environment's `strata` script, else ``python -m
workbench``) as ``strata ui --db URL`` in a pseudo-terminal of 120×36 (a terminal the run owns,
so nothing is drawn on the caller's), with ``$STRATA_BENCH_MARKS`` naming a pipe the app writes
its marks to (``workbench.app.MARKS_ENV``: a line per mark, with the wall clock and its CPU time,
written right after the frame it marks is on screen) and ``$STRATA_CONFIG_DIR`` an empty folder
(the default start view, theme and keymap, whatever the caller's config says). It times:

- **first frame**: spawn → the start view's frame is on screen, before its data;
- **first paint**: spawn → the start view's frame with its data (``<view>:list``): what a user
  sees after pressing Enter (interpreter start, imports, opening the store, the first reads);
- **quit**: ``q`` written to the terminal → the process has exited (the app's shutdown, the
  threads, the interpreter's own exit).

``q`` is sent once the views built ahead in the background are done (``SETTLE_S`` later), as a
user who looked at the first view quits, or ``quit_delay`` seconds after the first paint (0: while
they are being built, the slowest moment to quit).

Targets: first paint ≤ 500 ms and quit ≤ 300 ms on the demo on an idle machine; first
paint ≤ 1,000 ms on the 100k-event store. Wall-clock figures on a shared machine: the report keeps
the CPU count and load average of each run beside them.
"""

from __future__ import annotations

import os
import select
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from workbench.app import MARKS_ENV
from workbench.config import CONFIG_ENV, Config
from workbench.database import strata_command

TARGET_FIRST_PAINT_MS = 500
TARGET_QUIT_MS = 300
TARGET_FIRST_PAINT_LARGE_MS = 1000
"""First paint on the generated store (100k events by default)."""
SIZE = (120, 36)
TIMEOUT_S = 60.0
SETTLE_S = 0.2
"""With no quit delay, ``q`` is sent this long after the views built ahead are done."""
BUILT_TIMEOUT_S = 15.0
"""... or this long after the first paint when they never are."""


class LaunchError(RuntimeError):
    """The launched workbench did not paint or did not exit in time; says what it last drew."""


def _load_avg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _parse_marks(text: str) -> dict[str, tuple[float, float]]:
    """The first time each mark was written: (wall clock, the process's CPU time), in seconds."""
    marks: dict[str, tuple[float, float]] = {}
    for line in text.splitlines():
        try:
            name, at, cpu = line.split(" ")
            marks.setdefault(name, (float(at), float(cpu)))
        except ValueError:
            continue
    return marks


def _spawn(argv: list[str], env: dict[str, str], size: tuple[int, int]) -> tuple[int, int]:
    """Fork ``argv`` on a new pseudo-terminal of ``size`` (columns, rows); returns (pid, master fd)."""
    # only this bench needs pty and termios (POSIX); `strata --help` never loads them
    import fcntl
    import pty
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: size its terminal before the app reads it, then become `strata`
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def launch_once(
    url: str,
    *,
    namespace: str | None = None,
    quit_delay: float | None = None,
    size: tuple[int, int] = SIZE,
    timeout: float = TIMEOUT_S,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """Launch `strata ui` on ``url`` once, quit it, and return the timings (ms). ``q`` is sent
    ``quit_delay`` seconds after the first paint, or with None once the views built ahead in the
    background are done (``SETTLE_S`` later)."""

    view = Config().start_screen
    with tempfile.TemporaryDirectory(prefix="strata-bench-launch-") as folder:
        # The marks come through a named pipe: select() wakes on each, no polling of a file.
        fifo = Path(folder) / "marks"
        os.mkfifo(fifo)
        marks_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        keep_open = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # never an end of file before the app writes
        env = {k: v for k, v in os.environ.items() if k not in ("STRATA_DB", "TEXTUAL")}
        env.update(
            {
                MARKS_ENV: str(fifo),
                CONFIG_ENV: str(Path(folder) / "config"),
                "TERM": env["TERM"] if env.get("TERM", "dumb") not in ("", "dumb") else "xterm-256color",
                "COLUMNS": str(size[0]),
                "LINES": str(size[1]),
            }
        )
        argv = [*(command or strata_command())]
        if namespace:
            argv += ["--namespace", namespace]
        argv += ["ui", "--db", url]
        load = _load_avg()
        spawned = time.time()
        pid, fd = _spawn(argv, env, size)
        screen = bytearray()  # the last bytes drawn, for an error that says what was on screen
        text = ""
        marks: dict[str, tuple[float, float]] = {}
        quit_at: float | None = None
        quit_sent: float | None = None
        exited: float | None = None
        status = 0
        deadline = time.monotonic() + timeout
        try:
            while exited is None:
                if time.monotonic() > deadline:
                    stage = "exit after q" if quit_sent else f"paint {view}'s data"
                    raise LaunchError(
                        f"`{' '.join(argv)}` did not {stage} within {timeout:.0f} s; it last drew: "
                        + screen[-600:].decode("utf-8", "replace")
                    )
                wait = 0.5 if quit_at is None else max(0.0, quit_at - time.time())
                ready, _, _ = select.select([fd, marks_fd], [], [], wait)
                if marks_fd in ready:
                    text += os.read(marks_fd, 1 << 16).decode("utf-8", "replace")
                    marks = _parse_marks(text)
                if fd in ready:
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except OSError:  # EIO: the terminal's other side is closed (the app is gone)
                        chunk = b""
                    screen += chunk
                    del screen[:-4096]
                    if not chunk:
                        _, status = os.waitpid(pid, 0)
                        exited = time.time()
                        break
                if quit_sent is None:
                    quit_at = _quit_time(marks, view, quit_delay)
                    if quit_at is not None and time.time() >= quit_at:
                        quit_sent = time.time()
                        os.write(fd, b"q")
        finally:
            if exited is None:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)
            try:
                text += os.read(marks_fd, 1 << 16).decode("utf-8", "replace")
            except BlockingIOError:
                pass
            os.close(marks_fd)
            os.close(keep_open)
        marks = _parse_marks(text)
    if quit_sent is None:
        raise LaunchError(
            f"`{' '.join(argv)}` exited (status {status}) before painting {view}'s data; it last drew: "
            + screen[-600:].decode("utf-8", "replace")
        )

    def since(start: float, mark: str) -> float | None:
        at = marks.get(mark)
        return None if at is None else round((at[0] - start) * 1000, 1)

    def cpu(mark: str) -> float | None:
        at = marks.get(mark)
        return None if at is None else round(at[1] * 1000, 1)

    return {
        "view": view,
        "load_avg_1m": load,
        "app_init_ms": since(spawned, "app:init"),
        "first_frame_ms": since(spawned, f"{view}:paint"),
        "first_paint_ms": since(spawned, f"{view}:list"),
        "first_paint_cpu_ms": cpu(f"{view}:list"),
        "views_built_ms": since(spawned, "app:views-built"),
        "quit_ms": round((exited - quit_sent) * 1000, 1),
        "quit_to_unmount_ms": since(quit_sent, "app:unmount"),
        "exit_status": os.waitstatus_to_exitcode(status),
    }


def _quit_time(marks: dict[str, tuple[float, float]], view: str, quit_delay: float | None) -> float | None:
    """When to send ``q`` (wall clock), None while it is not known yet."""
    painted = marks.get(f"{view}:list")
    if painted is None:
        return None
    if quit_delay is not None:
        return painted[0] + quit_delay
    built = marks.get("app:views-built")
    return built[0] + SETTLE_S if built is not None else painted[0] + BUILT_TIMEOUT_S


def measure_launch(
    url: str,
    *,
    runs: int = 5,
    namespace: str | None = None,
    quit_delay: float | None = None,
    target_first_paint_ms: float = TARGET_FIRST_PAINT_MS,
    target_quit_ms: float | None = TARGET_QUIT_MS,
    progress: Callable[[int, int, str], None] | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """Launch `strata ui` on ``url`` ``runs`` times; the median of each measure and every run."""

    report = progress or (lambda done, total, label: None)
    each = []
    for run in range(runs):
        report(run, runs, "strata ui")
        each.append(launch_once(url, namespace=namespace, quit_delay=quit_delay, command=command))
    report(runs, runs, "strata ui")
    medians: dict[str, float | None] = {}
    for key in (
        "app_init_ms",
        "first_frame_ms",
        "first_paint_ms",
        "first_paint_cpu_ms",
        "views_built_ms",
        "quit_ms",
        "quit_to_unmount_ms",
        "load_avg_1m",
    ):
        values = [r[key] for r in each if r[key] is not None]
        medians[key] = round(statistics.median(values), 1 if key != "load_avg_1m" else 2) if values else None
    first_paint, quit_ms = medians["first_paint_ms"], medians["quit_ms"]
    return {
        "command": " ".join([*(command or strata_command()), "ui", "--db", url]),
        "python": sys.version.split()[0],
        "runs": runs,
        "quit_delay_s": quit_delay,
        "median": medians,
        "each": each,
        "targets": {
            "first_paint_ms": target_first_paint_ms,
            "quit_ms": target_quit_ms,
            "first_paint_met": first_paint is not None and first_paint <= target_first_paint_ms,
            "quit_met": None if target_quit_ms is None else quit_ms is not None and quit_ms <= target_quit_ms,
        },
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": _load_avg()},
    }
