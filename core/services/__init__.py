"""Service layer: synchronous functions that take and return plain dataclasses."""
