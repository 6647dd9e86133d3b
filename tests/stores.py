"""Small helpers the test modules share (fixtures live in conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_of(template: Path, target: Path) -> str:
    """A private copy of a closed template store (see the ``demo_template`` fixture); its URL."""
    shutil.copy(template, target)
    return f"sqlite:///{target}"


def say_and_derive(namespace: str, said: list[tuple[str, str]], *, first_day: str = "2026-01-10",
                   close_turn: bool = False) -> None:
    """Store ``said`` ((role, text) pairs: Maya the user, the Assistant) in thread "t", one day apart
    from ``first_day``, close the thread and derive it offline (with no failed job)."""
    from datetime import date, timedelta

    from core.services.capture import append_messages, close_thread
    from core.services.derive import run_pending

    start = date.fromisoformat(first_day)
    append_messages(namespace, "t", [
        {"role": role, "content": text, "speaker": "Maya" if role == "user" else "Assistant",
         "created_at": f"{start + timedelta(days=i)}T10:00:00+00:00"} for i, (role, text) in enumerate(said)],
        close_turn=close_turn)
    close_thread(namespace, "t")
    assert run_pending(namespace, provider="offline").failed == 0
