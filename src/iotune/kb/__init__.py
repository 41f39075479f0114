"""Remembered settings: motif signatures (signature.py), the knowledge base of finished studies
(store.py), the nearest motifs' settings for a new run (match.py), warm starts and filing
(seeds.py), and site-wide defaults tuned on proxy kernels (iotune.defaults). docs/kb.md
describes all of it.

The names below are loaded on first use, so that `iotune --help` does not pay for them."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Entry": "store",
    "KBError": "store",
    "KnowledgeBase": "store",
    "resolve_url": "store",
    "Match": "match",
    "Suggestion": "match",
    "SEEDS": "match",
    "entry_from_summary": "match",
    "nearest": "match",
    "suggest": "match",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'iotune.kb' has no attribute {name!r}")
    return getattr(importlib.import_module(f"iotune.kb.{_WHERE[name]}"), name)
