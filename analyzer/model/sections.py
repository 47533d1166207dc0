"""The report sections a rule belongs to: analysis, so every renderer (and the rules doc) reads it here."""

from __future__ import annotations

#: Report sections, in report order.
SECTIONS: dict[str, str] = {
    "A": "A. Uneven NCCL / topology",
    "B": "B. Filesystem",
    "C": "C. GPU and host health",
}

#: Rule area (first part of the rule id) -> report section.
AREA_SECTION: dict[str, str] = {
    "nccl": "A",
    "straggler": "A",
    "net": "A",
    "placement": "A",
    "version": "A",
    "fs": "B",
    "gpu": "C",
    "host": "C",
    "bundle": "C",
}


def section_of(rule_id: str) -> str:
    """The section key of a rule id; an area no section names (a plugin's) goes to C.

    >>> section_of("fs.iowait.high"), section_of("gpu.xid"), section_of("acme.custom")
    ('B', 'C', 'C')
    """
    return AREA_SECTION.get(rule_id.split(".", 1)[0], "C")
