"""Inputs users already have, written by other tools, read as node bundles (see docs/inputs.md).

Each reader detects its input by content and lays it out as a node bundle under the analysis work
directory (``meta.env``, ``manifest.tsv``, ``cmd/<kind>.txt``), so every parser and rule reads it
unchanged.  Only NVIDIA's ``nvidia-bug-report.log(.gz)`` so far.
"""

from __future__ import annotations

import re
from pathlib import Path

from analyzer.intake.foreign import nvidia_bug_report
from analyzer.intake.foreign.nvidia_bug_report import Converted
from analyzer.intake.safe_read import Limits

__all__ = ["Converted", "convert", "detect", "named_like"]

_NAMED = re.compile(r"nvidia-bug-report.*\.log(\.gz)*$", re.I)


def detect(path: Path) -> str | None:
    """The foreign input type of a file ('nvidia-bug-report'), or None."""
    if path.is_file() and not path.is_symlink() and nvidia_bug_report.detect(path):
        return nvidia_bug_report.SOURCE
    return None


def named_like(path: Path) -> str | None:
    """The input type a file's name claims, whatever its content: to refuse it with a clear reason."""
    return nvidia_bug_report.SOURCE if _NAMED.search(path.name) else None


def convert(kind: str, path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the foreign input at ``path`` as a node bundle under ``dest``."""
    if kind != nvidia_bug_report.SOURCE:
        raise ValueError(f"unknown foreign input type {kind!r}")
    return nvidia_bug_report.convert(path, dest, limits)
