"""Small helpers the test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_of(template: Path, target: Path) -> str:
    """A private copy of a closed template store (see the ``demo_template`` fixture); its URL."""
    shutil.copy(template, target)
    return f"sqlite:///{target}"
