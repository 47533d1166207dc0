"""The majority value of a version column among comparable nodes, and the nodes that differ from it.

One implementation for the ``version.drift`` rule and the report's version table.  Nodes are
compared within a group (normally the instance type): the majority is the value most nodes of the
group report; a tie goes to the lowest value and is marked ``split`` (there is no real majority).
Nodes without a value (None or '') take no part.

>>> rows = [
...     {"node": "a", "instance_type": "p5", "nccl": "2.18.3", "kernel": "6.1"},
...     {"node": "b", "instance_type": "p5", "nccl": "2.18.3", "kernel": "6.1"},
...     {"node": "c", "instance_type": "p5", "nccl": "2.17.1", "kernel": None},
...     {"node": "d", "instance_type": "p4d", "nccl": "2.17.1"},
... ]
>>> found = majorities(rows, ("nccl", "kernel"))
>>> m = found[("p5", "nccl")]
>>> (m.value, m.holders, m.deviating, m.split)
('2.18.3', ('a', 'b'), {'c': '2.17.1'}, False)
>>> found[("p5", "kernel")].deviating, found[("p4d", "nccl")].deviating
({}, {})
>>> ("p4d", "kernel") in found
False
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Majority:
    """The majority of one column in one group."""

    value: Any  # the most common value (a tie: the lowest of the most common ones)
    holders: tuple[str, ...]  # the nodes that report it, by name
    deviating: dict[str, Any]  # node -> its value, for every node that reports another value, by name
    counts: dict[Any, int]  # value -> how many nodes report it, most common first (ties: lowest first)

    @property
    def split(self) -> bool:
        """Another value is as common as the majority: no value has a real majority."""
        ranked = list(self.counts.values())
        return len(ranked) > 1 and ranked[1] == ranked[0]

    @property
    def nodes(self) -> int:
        """How many nodes were compared (those with a value)."""
        return sum(self.counts.values())


def majority(values: Mapping[str, Any]) -> Majority:
    """The majority of ``node -> value`` (every node with a value; at least one).

    >>> m = majority({"n1": "535", "n2": "550", "n3": "550", "n4": "535"})
    >>> (m.value, m.split, m.deviating, m.counts, m.nodes)
    ('535', True, {'n2': '550', 'n3': '550'}, {'535': 2, '550': 2}, 4)
    """
    if not values:
        raise ValueError("no values")
    ranked = sorted(Counter(values.values()).items(), key=lambda kv: (-kv[1], kv[0]))
    top = ranked[0][0]
    by_node = sorted(values.items())
    return Majority(
        value=top,
        holders=tuple(node for node, v in by_node if v == top),
        deviating={node: v for node, v in by_node if v != top},
        counts=dict(ranked),
    )


def majorities(
    rows: Iterable[Mapping[str, Any]],
    columns: Iterable[str],
    *,
    group: str = "instance_type",
    node: str = "node",
) -> dict[tuple[Any, str], Majority]:
    """Per (group, column): the majority among the group's rows that have a value in the column.

    ``rows`` are one per node: ``row[node]`` names it, ``row[group]`` is its group (None is a group
    of its own), ``row[column]`` its value (missing, None or '' = no value).  A (group, column) where
    no node has a value is left out; one whose nodes all agree has an empty ``deviating``.
    """
    cols = tuple(columns)
    values: dict[tuple[Any, str], dict[str, Any]] = {}
    for row in rows:
        for column in cols:
            value = row.get(column)
            if value is not None and value != "":
                values.setdefault((row.get(group), column), {})[row[node]] = value
    return {key: majority(per_node) for key, per_node in values.items()}
