"""The workbench phase of ``strata bench scale``, run as its own process by the core bench.

It lives here, not in ``core``, because it drives the Textual app: ``core`` never imports
the UI. It speaks the scale bench's line protocol (progress and result as JSON lines).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.bench.scale import NAMESPACE, emit, report_progress
from workbench.bench_ui import measure


def workbench_timings(path: Path) -> dict:
    """First paint, slowest screen switch and slowest filter of the real workbench on ``path``."""

    report_progress(0, 1, "workbench")
    timings = measure(f"sqlite:///{path}", namespace=NAMESPACE)
    report_progress(1, 1, "workbench")
    return {
        "ui_first_paint_ms": timings["first_paint_ms"],
        "ui_switch_ms": timings["worst_switch_ms"],
        "ui_filter_ms": timings["worst_filter_ms"],
        "ui_switch_detail_ms": timings["switch"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.bench_scale_ui")
    parser.add_argument("--db", required=True, type=Path)
    args = parser.parse_args(argv)
    emit("result", workbench_timings(args.db))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
