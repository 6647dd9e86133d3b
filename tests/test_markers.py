"""The test tiers hold: no snapshot test runs in the fast tier (`pytest -m "not slow"`), and every test
tests/tiers.py names still exists, so a renamed slow test cannot slip into the fast tier unnoticed."""

from __future__ import annotations

import ast
from fnmatch import fnmatch

from tests import tiers


def _test_files():
    return sorted(p for p in tiers.TESTS.rglob("test_*.py") if "__snapshots__" not in p.parts)


def test_every_file_using_snap_compare_is_marked_snapshot():
    unmarked = [
        p.relative_to(tiers.TESTS).as_posix()
        for p in _test_files()
        if "snap_compare" in (text := p.read_text(encoding="utf-8")) and "pytest.mark.snapshot" not in text
    ]
    assert not unmarked, f"add `pytestmark = pytest.mark.snapshot` to {unmarked}"


def test_every_file_and_test_the_tiers_name_exists():
    files = {p.relative_to(tiers.TESTS).as_posix(): p for p in _test_files()}
    missing = []
    for table in (tiers.SLOW, tiers.BENCH):
        for pattern, names in table.items():
            matched = [f for f in files if fnmatch(f, pattern)]
            if not matched:
                missing.append(pattern)
            if names == tiers.ALL:
                continue
            defined = {
                node.name
                for f in matched
                for node in ast.walk(ast.parse(files[f].read_text(encoding="utf-8")))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
            missing += [f"{pattern}::{name}" for name in sorted(names - defined)]
    assert not missing, f"tests/tiers.py names what is not there (renamed or moved?): {missing}"


def test_the_tier_markers_are_registered(pytestconfig):
    registered = {line.split(":")[0].split("(")[0] for line in pytestconfig.getini("markers")}
    assert {"slow", "snapshot", "bench", "sqlite_only"} <= registered
