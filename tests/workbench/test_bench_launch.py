"""`strata ui` as a user starts and quits it: the quick parse of `strata` / `strata ui`, the
collector paused for start-up, the database thread closed on the way out, and `strata bench ui`'s
launches in a pseudo-terminal. Shapes and behaviour only: timings are the bench's to report, never
a test's to assert."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from core.db import db, sqlite_path
from tests.stores import copy_of, fresh_url
from tests.workbench.test_pilot_views import SIZE
from workbench.backend import Backend
from workbench.cli import _common, _top_options, build_parser, main
from workbench.cli.ui import parse_ui, run_ui
from workbench.testing import settle

# ------------------------------------------------------------------ `strata` / `strata ui` without the whole parser

OPENS_THE_WORKBENCH = [
    [],
    ["ui"],
    ["--db", "sqlite:///x.db"],
    ["ui", "--db", "sqlite:///x.db", "--create", "--namespace", "demo", "--theme", "nord"],
    ["--namespace", "demo", "ui", "--db", "sqlite:///y.db"],
    ["--name", "demo"],  # an abbreviation, as argparse reads it
    ["--theme", "nord", "--create"],
]
NOT_THE_WORKBENCH = [
    ["stats"],
    ["demo"],
    ["-h"],
    ["ui", "--help"],
    ["ui", "--bogus"],
    ["ui", "--json"],
    ["--db"],
    ["ui", "extra"],
    ["--namespace", "   "],
]


def quick(argv: list[str]):
    return parse_ui(argv, _top_options, lambda: _common(json_flag=False))


@pytest.mark.parametrize("argv", OPENS_THE_WORKBENCH, ids=" ".join)
def test_a_command_line_that_opens_the_workbench_is_read_as_the_whole_parser_reads_it(argv):
    fast, full = quick(argv), build_parser().parse_args(argv)
    assert fast is not None
    assert {k: v for k, v in vars(fast).items() if k != "handler"} == {
        k: v for k, v in vars(full).items() if k != "handler"
    }
    assert getattr(fast, "handler", None) is getattr(full, "handler", None)
    assert getattr(full, "handler", None) in (None, run_ui)


@pytest.mark.parametrize("argv", NOT_THE_WORKBENCH, ids=" ".join)
def test_anything_else_goes_to_the_whole_parser(argv):
    assert quick(argv) is None


def test_strata_ui_loads_no_other_command_nor_the_services_before_the_workbench():
    code = (
        "import sys\n"
        "from workbench.cli import main\n"
        "code = main(['ui', '--db', 'sqlite:///nowhere/strata.db'])\n"
        "heavy = ('numpy', 'core.services.search', 'core.ingest', 'workbench.cli.bench', 'workbench.cli.memory')\n"
        "print(code, sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split("\n")[0] == "2 []", done.stdout + done.stderr
    assert "the workbench needs a terminal" in done.stderr


# ------------------------------------------------------------------ the way out


def test_closing_the_backend_stops_a_read_under_way_and_waits_for_its_thread(tmp_path):
    backend = Backend(fresh_url(tmp_path))
    reading = threading.Event()

    def endless() -> int:
        reading.set()
        cursor = db.execute_sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
        )
        return cursor.fetchone()[0]

    future = backend.submit(endless)
    assert reading.wait(60)
    # Each call interrupts the read under way (the first may come before its query starts).
    assert any(backend.close(wait=0.5) for _ in range(120))
    assert future.exception(timeout=5) is not None
    assert backend.close(wait=0) is True  # closed already: nothing left to wait for


async def test_a_workbench_started_with_the_collector_paused_resumes_it_once_its_first_view_shows_data(make_app):
    assert gc.get_freeze_count() == 0
    gc.disable()
    try:
        app = make_app()
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert gc.isenabled()
            assert gc.get_freeze_count() > 0  # what start-up made lives as long as the app
        assert gc.get_freeze_count() == 0  # collectable again once the app is closed
    finally:
        gc.enable()
        gc.unfreeze()


# ------------------------------------------------------------------ `strata ui` launched in a pseudo-terminal


@pytest.fixture
def demo_url(demo_template, tmp_path) -> str:
    yield copy_of(demo_template, tmp_path / "demo.db")
    if db.obj is not None and not db.is_closed():
        db.close()


def test_a_launch_reports_what_a_user_sees(demo_url):
    from workbench.bench_launch import measure_launch

    report = measure_launch(demo_url, runs=1)
    (run,) = report["each"]
    assert run["exit_status"] == 0 and run["view"] == "blocks"
    for key in ("app_init_ms", "first_frame_ms", "first_paint_ms", "first_paint_cpu_ms", "quit_ms"):
        assert isinstance(run[key], float) and run[key] >= 0, key
        assert report["median"][key] == run[key]
    assert run["app_init_ms"] <= run["first_frame_ms"] <= run["first_paint_ms"]
    assert set(report["targets"]) == {"first_paint_ms", "quit_ms", "first_paint_met", "quit_met"}
    assert report["runs"] == 1 and report["machine"]["cpus"] >= 1


def test_quitting_while_the_views_are_built_ahead_ends_the_process_with_the_store_closed(demo_url):
    from workbench.bench_launch import launch_once

    run = launch_once(demo_url, quit_delay=0)  # q as soon as the first view shows its data
    assert run["exit_status"] == 0
    assert run["quit_to_unmount_ms"] is not None  # the app shut down before the process ended
    path = sqlite_path(demo_url)
    if path is not None:  # the last connection closed: SQLite removed its write-ahead log
        assert not Path(f"{path}-wal").exists()


def test_bench_ui_launches_strata_ui_on_the_demo_and_on_the_store(demo_url, tmp_path, capsys):
    store = fresh_url(tmp_path, "ui.db")
    argv = ["bench", "ui", "--db", store, "--events", "200", "--runs", "1", "--demo", demo_url, "--launch-only"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "switch" not in report  # --launch-only: nothing measured inside the process
    assert set(report["launch"]) == {"demo", "large"}
    demo, large = report["launch"]["demo"], report["launch"]["large"]
    assert demo["url"] == demo_url and demo["targets"]["first_paint_ms"] == 500 and demo["targets"]["quit_ms"] == 300
    assert large["targets"]["first_paint_ms"] == 1000 and large["targets"]["quit_ms"] is None
    for launched in (demo, large):
        assert launched["runs"] == 1 and launched["each"][0]["exit_status"] == 0
        assert launched["median"]["first_paint_ms"] is not None and launched["median"]["quit_ms"] is not None


def test_bench_ui_refuses_a_missing_demo_before_building_anything(tmp_path, capsys, monkeypatch):
    import workbench.bench_ui

    monkeypatch.setattr(workbench.bench_ui, "generate_store", lambda *a, **k: pytest.fail("generated the store"))
    missing = f"sqlite:///{tmp_path / 'no-demo.db'}"
    assert main(["bench", "ui", "--events", "50", "--runs", "1", "--demo", missing]) == 2
    assert "--demo" in capsys.readouterr().err
