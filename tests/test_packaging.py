"""The wheel ships both packages, the themes and the demo data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_themes_and_demo_data(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    wheel = next(tmp_path.glob("*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "workbench/themes/strata-dark.yaml" in names and "workbench/themes/strata-light.yaml" in names
    assert "core/demo_data/demo.jsonl" in names
    assert any(n.startswith("core/") for n in names) and "workbench/cli/__init__.py" in names
