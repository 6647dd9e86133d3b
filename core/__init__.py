"""Strata core: the memory engine agent harnesses load. Never imports textual or rich."""

__version__ = "0.1.0"
