"""External-memory import: the file formats and the export prompt.

The flow itself lives in ``core.services.import_*``: batches (the rows every step returns), preview,
choices, commit and undo.
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
