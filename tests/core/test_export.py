"""The canonical export is written as it is read: the same bytes at any page size, flat memory."""

from __future__ import annotations

import io
import json
import tracemalloc

import pytest

from core.services import export
from core.services.capture import append_messages
from core.api import open_store
from tests.stores import copy_of
from workbench.cli import main


@pytest.fixture
def demo(demo_template, tmp_path):
    url = copy_of(demo_template, tmp_path / "demo.db")
    open_store(url)
    return url


def test_streamed_export_is_the_json_of_the_data_at_any_page_size(demo, monkeypatch):
    data = export.export_data("demo")
    assert data["events"] and data["graph"]["facts"] and any(f["ended_by"] for f in data["graph"]["facts"])
    reference = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
    markdown = export.export_namespace("demo", "markdown")
    for size in (1, 7, 5000):
        monkeypatch.setattr(export, "ROWS_PER_READ", size)
        assert export.export_namespace("demo") == reference
        assert export.export_namespace("demo", "markdown") == markdown
    assert markdown.count("\n- [") >= len(data["messages"]) + len(data["events"])


class _Counting(io.TextIOBase):
    """A sink that keeps only how much was written."""

    written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


def test_export_memory_stays_flat_as_the_store_grows(store, monkeypatch):
    """Gigabytes at a million messages: the writer holds a page of rows, never the whole namespace."""
    monkeypatch.setattr(export, "ROWS_PER_READ", 100)
    for batch in range(30):
        append_messages(
            "big",
            f"t{batch % 3}",
            [
                {"role": "user" if i % 2 else "assistant", "content": f"message {batch}-{i}: " + "lorem ipsum " * 20}
                for i in range(100)
            ],
        )
    sink = _Counting()
    tracemalloc.start()
    try:
        export.write_export("big", sink)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sink.written > 1_500_000  # 3,000 messages of ~300 characters, as JSON
    assert peak < sink.written / 4


def test_a_failed_export_leaves_the_previous_file(demo, tmp_path, monkeypatch, capsys):
    target = tmp_path / "me.json"
    assert main(["export", "--db", demo, "--namespace", "demo", "--out", str(target)]) == 0
    good = target.read_text(encoding="utf-8")
    assert json.loads(good)["namespace"]["name"] == "demo"

    def broken(event, turn):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export, "event_weight", broken)
    capsys.readouterr()
    assert main(["export", "--db", demo, "--namespace", "demo", "--out", str(target)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"strata: error: --out {target}: cannot write: No space left on device" in err
    assert target.read_text(encoding="utf-8") == good
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".me")) == []


def test_export_through_a_link_replaces_the_file_it_names(demo, tmp_path, capsys):
    real = tmp_path / "real.json"
    real.write_text("old\n", encoding="utf-8")
    real.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert main(["export", "--db", demo, "--namespace", "demo", "--out", str(link)]) == 0
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text(encoding="utf-8"))["namespace"]["name"] == "demo"
    assert real.stat().st_mode & 0o777 == 0o600


def _fifo_reader(path, keep: int | None):
    """A thread reading ``path`` (all of it, or only ``keep`` bytes before closing it)."""
    import threading

    got = []

    def read():
        with open(path, "rb") as pipe:
            got.append(pipe.read() if keep is None else pipe.read(keep))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, got


def test_export_into_a_fifo_writes_through_it(demo, tmp_path, capsys):
    import os
    import stat

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    thread, got = _fifo_reader(fifo, None)
    assert main(["export", "--db", demo, "--namespace", "demo", "--out", str(fifo)]) == 0
    thread.join(10)
    assert json.loads(got[0])["namespace"]["name"] == "demo"
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # not replaced by a regular file


def test_a_write_error_on_a_fifo_is_one_error_line(demo, tmp_path, capsys):
    import os

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    thread, _ = _fifo_reader(fifo, 10)  # the reader goes away after 10 bytes
    capsys.readouterr()
    assert main(["export", "--db", demo, "--namespace", "demo", "--out", str(fifo)]) == 2
    thread.join(10)
    err = capsys.readouterr().err
    assert f"strata: error: --out {fifo}: cannot write: Broken pipe" in " ".join(err.split())


@pytest.mark.parametrize("name, message", [("missing/me.json", "does not exist"), (".", "is a directory")])
def test_an_unusable_out_path_is_refused_before_the_export(demo, tmp_path, capsys, monkeypatch, name, message):
    monkeypatch.setattr(export, "write_export", lambda *a, **k: pytest.fail("exported before checking --out"))
    capsys.readouterr()
    assert main(["export", "--db", demo, "--namespace", "demo", "--out", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("strata: error: --out") and message in err and err.strip().count("\n") == 0
    assert not (tmp_path / "missing").exists()


def test_export_reports_progress_and_writes_the_same(demo, monkeypatch):
    """Minutes at a million messages: the export says how far it is, and counting changes nothing."""
    monkeypatch.setattr(export, "PROGRESS_EVERY", 50)
    calls = []
    for format in ("json", "markdown"):
        calls.clear()
        out = io.StringIO()
        export.write_export("demo", out, format, progress=lambda done, total, label: calls.append((done, total, label)))
        assert out.getvalue() == export.export_namespace("demo", format)
        done = [d for d, _, _ in calls]
        assert done == sorted(done) and calls[0][0] == 0 and calls[-1][0] == calls[-1][1] > 0
        assert {"messages", "events"} <= {label for _, _, label in calls}
    data = export.export_data("demo")
    records = (
        sum(len(data[k]) for k in ("messages", "blocks", "events"))
        + sum(len(v) for v in data["graph"].values())
        + sum(len(v) for v in data["receipts"].values())
    )
    assert calls[-1][1] == records and calls[-2][0] == records - records % 50
