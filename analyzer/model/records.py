"""The records renderers read, as the judge made them: findings, their evidence and routes, outcomes;
and, as intake made them, the inputs that were not read.

Renderers import them from here (the model they are given), never from the judge itself.
"""

from __future__ import annotations

from analyzer.intake.records import UnreadInput
from analyzer.judge.findings import OWNERS, Evidence, Finding, Outcome, Route, Severity

__all__ = ["OWNERS", "Evidence", "Finding", "Outcome", "Route", "Severity", "UnreadInput"]
