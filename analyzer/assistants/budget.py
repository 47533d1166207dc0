"""Fit a JSON document into a model's context: cut its longest lists, and say what was cut.

>>> doc = {"nodes": [{"node": f"n{i}", "findings": list(range(50))} for i in range(40)], "snapshots": [1]}
>>> small, cut = fit(doc, 2_000)
>>> len(json.dumps(small)) <= 2_000, cut["nodes"]
(True, 40)
>>> fit({"a": [1, 2]}, 1_000)
({'a': [1, 2]}, {})
"""

from __future__ import annotations

import copy
import json
from typing import Any

#: Characters a tool answer may take (about 12,000 tokens); what is over is cut from the longest lists.
BUDGET = 48_000


def fit(doc: Any, budget: int = BUDGET) -> tuple[Any, dict[str, int]]:
    """A copy of ``doc`` whose JSON is at most ``budget`` characters, and ``{path: length before}`` of
    every list that was shortened (``nodes``, ``nodes[0].findings``).  Lists lose their tail: a list the
    producer sorted worst first keeps its worst entries."""
    doc = copy.deepcopy(doc)
    cut: dict[str, int] = {}
    while _size(doc) > budget:
        lists = [(p, items) for p, items in _lists(doc, "") if len(items) > 1]
        if not lists:
            break
        path, items = max(lists, key=lambda pl: _size(pl[1]))
        cut.setdefault(path, len(items))
        del items[max(1, len(items) // 2) :]
    return doc, cut


def _size(value: Any) -> int:
    return len(json.dumps(value, default=str))


def _lists(value: Any, path: str) -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, list):
        found.append((path, value))
        for i, item in enumerate(value):
            found += _lists(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _lists(item, f"{path}.{key}" if path else str(key))
    return found
