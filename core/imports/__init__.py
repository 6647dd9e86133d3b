"""External-memory import: the file formats and the export prompt.

The flow itself (preview, decide, commit, undo) lives in ``core.services.imports``.
"""

from __future__ import annotations

from core.imports.formats import (
    FORMATS,
    MAX_BYTES,
    MAX_CANDIDATES,
    ParsedImport,
    parse_import,
    read_import_file,
)

__all__ = ["FORMATS", "MAX_BYTES", "MAX_CANDIDATES", "ParsedImport", "parse_import", "read_import_file"]
