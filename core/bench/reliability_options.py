"""The reliability bench's sections and default sizes, apart from the bench: `strata --help`
builds the bench's options from them without loading what a run drives (the services, numpy)."""

from __future__ import annotations

SECTIONS = ("kills", "concurrency", "fuzz", "round_trips", "isolation")
DEFAULTS = {"kills": 24, "fuzz": 20_000, "round_trips": 100, "turns": 400}
