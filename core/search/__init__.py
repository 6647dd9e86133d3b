"""Deterministic lexical ranking: tokenizer, BM25 and reciprocal-rank fusion."""
