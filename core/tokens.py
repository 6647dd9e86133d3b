"""A cheap, dependency-free token estimate used to order the transcript layers.

The figure only has to be stable and monotone enough to compare renderings of the
same block (L3 <= L4 <= L5); it is not meant to match any model's tokenizer.
"""

from __future__ import annotations

import re

# English-like text averages about four characters per token, while CJK and other
# non-ASCII scripts tend to spend roughly one token per character.
_ASCII_RUN = re.compile(r"[\x00-\x7f]+")
_CHARS_PER_ASCII_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimate tokens: ceil(len/4) per maximal ASCII run plus 1 per non-ASCII character."""
    if not text:
        return 0
    ascii_chars = 0
    ascii_tokens = 0
    for run in _ASCII_RUN.findall(text):
        ascii_chars += len(run)
        ascii_tokens += -(-len(run) // _CHARS_PER_ASCII_TOKEN)
    return ascii_tokens + (len(text) - ascii_chars)
