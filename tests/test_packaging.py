"""The wheel ships both packages, the themes, the demo data and the lexicon files."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_themes_demo_data_and_lexicon(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "workbench/themes/strata-dark.yaml" in names and "workbench/themes/strata-light.yaml" in names
    assert "core/demo_data/demo.jsonl" in names
    # The offline rules read their word lists at import: a wheel without one fails on `import core`.
    lexicon = {f"core/lexicon/{path.name}" for path in (ROOT / "core" / "lexicon").glob("*.txt")}
    assert lexicon and lexicon <= set(names)
    assert any(n.startswith("core/") for n in names) and "workbench/cli/__init__.py" in names
