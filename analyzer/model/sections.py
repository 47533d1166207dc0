"""The report sections a rule belongs to, for every renderer (and the rules doc).  An area is declared
once, with its section, in :data:`analyzer.judge.rules.AREAS`; this module only hands that on.
"""

from __future__ import annotations

from analyzer.judge.rules import AREAS, SECTIONS, section_of

#: Rule area (first part of the rule id) -> report section.
AREA_SECTION: dict[str, str] = AREAS

__all__ = ["AREA_SECTION", "SECTIONS", "section_of"]
