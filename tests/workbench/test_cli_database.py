"""Which database `strata` opens: --db, then $STRATA_DB, then the remembered default (`strata demo`,
`strata db use`), then the built-in one; and what `strata demo` prints outside a terminal, followed
word for word from a fresh shell."""

from __future__ import annotations

import json
import os
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.db import default_sqlite_path, display_url
from tests.stores import fresh_url
from workbench.cli import main
from workbench.database import remembered_path, remembered_url

pytestmark = pytest.mark.usefixtures("cli_without_strata_db")


def run_json(capsys, *argv: str):
    code = main([*argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def make_store(tmp_path: Path, capsys, name: str) -> str:
    """A store holding one message in namespace ``name``."""
    url = fresh_url(tmp_path, f"{name}.db")
    lines = tmp_path / f"{name}.jsonl"
    said = {"thread": "t", "role": "user", "content": f"about {name}", "created_at": "2024-01-01T00:00:00Z"}
    lines.write_text(json.dumps(said) + "\n", encoding="utf-8")
    assert main(["ingest", "jsonl", str(lines), "--db", url, "--namespace", name]) == 0
    capsys.readouterr()
    return url


def opened(capsys, *argv: str) -> list[str]:
    """The namespaces of the store a command opens (so, which store it is)."""
    return [row["name"] for row in run_json(capsys, "namespaces", *argv)]


def test_db_then_env_then_the_remembered_default_then_the_builtin_one(tmp_path, capsys, monkeypatch):
    a, b, c = (make_store(tmp_path, capsys, name) for name in ("a", "b", "c"))

    assert main(["namespaces"]) == 2  # the built-in default, not made by a command that reads
    assert str(default_sqlite_path()) in " ".join(capsys.readouterr().err.split())

    assert main(["db", "use", c]) == 0
    assert "now opens" in capsys.readouterr().out
    assert opened(capsys) == ["c"]
    monkeypatch.setenv("STRATA_DB", b)
    assert opened(capsys) == ["b"]
    assert opened(capsys, "--db", a) == ["a"]
    monkeypatch.delenv("STRATA_DB")
    assert opened(capsys, "--db", a) == ["a"]
    assert opened(capsys) == ["c"]  # --db opened a, and left the remembered default alone

    assert main(["db", "forget"]) == 0
    assert "forgot" in capsys.readouterr().out and remembered_url() is None
    assert main(["namespaces"]) == 2
    assert main(["db", "forget"]) == 0
    assert "no database was remembered" in capsys.readouterr().out


def test_strata_db_names_the_database_and_what_chose_it(tmp_path, capsys, monkeypatch):
    a, b, c = (make_store(tmp_path, capsys, name) for name in ("a", "b", "c"))
    shown = run_json(capsys, "db")
    assert shown["source"] == "default" and shown["remembered"] is None
    assert shown["url"] == shown["builtin"] == f"sqlite:///{default_sqlite_path()}"
    assert shown["remembered_file"] == str(remembered_path())

    assert main(["db", "use", c]) == 0
    capsys.readouterr()
    shown = run_json(capsys, "db")
    assert (shown["source"], shown["url"], shown["remembered"]) == ("remembered", display_url(c), display_url(c))
    monkeypatch.setenv("STRATA_DB", b)
    assert (run_json(capsys, "db")["source"], run_json(capsys, "db")["url"]) == ("$STRATA_DB", display_url(b))
    assert main(["db", "--db", a]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"database: {display_url(a)} given by --db" in out
    assert f"remembered default: {display_url(c)}" in out


def test_the_workbench_opens_what_the_commands_open(tmp_path, capsys, monkeypatch):
    import workbench.app
    from workbench.cli import ui

    a, b, c = (make_store(tmp_path, capsys, name) for name in ("a", "b", "c"))
    urls = []
    monkeypatch.setattr(ui, "in_terminal", lambda: True)
    monkeypatch.setattr(workbench.app, "run_app", lambda **kw: urls.append(kw["db_url"]) or 0)
    assert main(["db", "use", c]) == 0
    assert main([]) == 0 and main(["ui"]) == 0
    monkeypatch.setenv("STRATA_DB", b)
    assert main([]) == 0
    assert main(["--db", a]) == 0 and main(["ui", "--db", a]) == 0
    assert urls == [c, c, b, a, a]


def test_writing_into_the_remembered_default_names_it(tmp_path, capsys):
    c = make_store(tmp_path, capsys, "c")
    assert main(["db", "use", c]) == 0
    capsys.readouterr()
    more = tmp_path / "more.jsonl"
    said = {"thread": "t", "role": "user", "content": "one more", "created_at": "2024-01-02T00:00:00Z"}
    more.write_text(json.dumps(said) + "\n", encoding="utf-8")
    assert main(["ingest", "jsonl", str(more), "--namespace", "c"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert f"database: {display_url(c)} (the remembered default;" in err
    assert main(["ingest", "jsonl", str(more), "--namespace", "c", "--db", c]) == 0
    assert "remembered" not in capsys.readouterr().err  # named on the command line: nothing to add


@pytest.mark.sqlite_only(reason="SQLite files that are not there, and paths relative to the working directory")
def test_db_use_takes_only_a_database_that_exists_and_remembers_its_absolute_path(tmp_path, capsys, monkeypatch):
    c = make_store(tmp_path, capsys, "c")
    assert main(["db", "use", c]) == 0
    capsys.readouterr()

    assert main(["db", "use", str(tmp_path / "nope.db")]) == 2
    assert "no Strata database at" in capsys.readouterr().err
    assert remembered_url() == c and not (tmp_path / "nope.db").exists()
    assert main(["db", "use", " "]) == 2
    assert remembered_url() == c

    monkeypatch.chdir(tmp_path)
    assert main(["db", "use", "sqlite:///new.db", "--create"]) == 0
    capsys.readouterr()
    assert remembered_url() == f"sqlite:///{tmp_path / 'new.db'}"
    assert (tmp_path / "new.db").is_file() and os.stat(remembered_path()).st_mode & 0o077 == 0
    monkeypatch.chdir(tmp_path.parent)
    assert opened(capsys) == []  # the same file, from another directory


@pytest.mark.sqlite_only(reason="a remembered SQLite file that was removed")
def test_a_remembered_database_that_is_gone_is_refused_and_never_made_again(tmp_path, capsys, monkeypatch):
    import workbench.app
    from workbench.cli import ui

    c = make_store(tmp_path, capsys, "c")
    assert main(["db", "use", c]) == 0
    (tmp_path / "c.db").unlink()
    capsys.readouterr()
    lines = tmp_path / "c.jsonl"
    for argv in (["stats"], ["ingest", "jsonl", str(lines)], ["stats", "--create"]):
        assert main(argv) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert "the remembered default" in err and "`strata db forget`" in err and "`strata demo`" in err
    monkeypatch.setattr(ui, "in_terminal", lambda: True)
    monkeypatch.setattr(workbench.app, "run_app", lambda **_: pytest.fail("opened the workbench"))
    assert main([]) == 2
    assert not (tmp_path / "c.db").exists()


def test_demo_becomes_the_remembered_default_and_says_when_strata_db_hides_it(tmp_path, capsys, monkeypatch):
    other = make_store(tmp_path, capsys, "other")
    url = fresh_url(tmp_path, "demo.db")
    monkeypatch.setenv("STRATA_DB", other)
    assert main(["demo", "--no-ui", "--db", url]) == 0
    captured = capsys.readouterr()
    assert "`strata` now opens it by default" in " ".join(captured.out.split())
    assert "$STRATA_DB is set here" in captured.err and "unset STRATA_DB" in captured.err
    assert remembered_url() == url
    assert opened(capsys) == ["other"]
    monkeypatch.delenv("STRATA_DB")
    assert run_json(capsys, "stats")["messages"] == 272
    assert main(["stats"]) == 0
    assert capsys.readouterr().out.startswith(f"database: {display_url(url)}\n")


# ------------------------------------------------------------------ a fresh shell follows what `strata demo` prints

FRESH_PATH = "/usr/local/bin:/usr/bin:/bin"  # no virtual environment on it


def installed_strata() -> list[str]:
    """`strata` as the README runs it: the virtual environment's script by its path."""
    script = Path(os.path.abspath(sys.executable)).parent / "strata"
    return [str(script)] if script.is_file() else [os.path.abspath(sys.executable), "-m", "workbench"]


def run_in_terminal(argv: list[str], env: dict, cwd: Path, until: list[str], keys: bytes = b"q") -> str:
    """Run ``argv`` in a pseudo-terminal of 120x36 until everything in ``until`` has been drawn,
    then type ``keys``; what it drew (escape sequences and all)."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True)
    os.close(slave)
    drawn = b""

    def read(seconds: float) -> bool:
        nonlocal drawn
        ready, _, _ = select.select([master], [], [], seconds)
        if not ready:
            return True
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other side closed: the program ended
            return False
        drawn += chunk
        return bool(chunk)

    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(word.encode() in drawn for word in until):
            if not read(0.5):
                break
        os.write(master, keys)
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            if not read(0.2):
                break
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    return drawn.decode("utf-8", errors="replace")


@pytest.mark.sqlite_only(reason="the demo's own database is a SQLite file in the data directory")
def test_a_fresh_shell_follows_what_strata_demo_prints_into_the_populated_workbench(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    fresh = {"PATH": FRESH_PATH, "HOME": str(home)}  # nothing else: no venv, no $STRATA_DB, no config dir
    built = subprocess.run(
        [*installed_strata(), "demo"],
        env=fresh,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    shown = built.stdout.split("run in a terminal:\n", 1)[1]
    lines = [line[2:] for line in shown.splitlines() if line.startswith("  ")]
    demo = home / ".local" / "share" / "strata" / "demo.db"
    assert lines == [f"export STRATA_DB={shlex.quote(f'sqlite:///{demo}')}", shlex.join(installed_strata())]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def shell(script: str) -> dict:
        done = subprocess.run(
            ["/bin/bash", "-c", script], env=fresh, cwd=elsewhere, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    # Word for word, with a headless command after the printed one: it reads the demo.
    assert shell(f"{lines[0]}\n{lines[1]} stats --json")["messages"] == 272
    # Without the export too: the demo is the remembered default.
    assert shell(f"{lines[1]} stats --json")["messages"] == 272

    # In a terminal, the printed lines open the workbench on the demo: its header names the
    # database and the namespace, its first view lists the demo's threads; `q` leaves.
    drawn = run_in_terminal(
        ["/bin/bash", "-c", "\n".join(lines)],
        env={**fresh, "TERM": "xterm-256color"},
        cwd=elsewhere,
        until=["demo.db", "namespace", "work-planning"],
    )
    assert "demo.db" in drawn and "work-planning" in drawn, drawn[-2000:]
