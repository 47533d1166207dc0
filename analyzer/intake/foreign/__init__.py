"""Inputs users already have, written by other tools, read as node bundles (see docs/inputs.md).

Each reader detects its input by content and lays it out as a node bundle under the analysis work
directory (``meta.env``, ``manifest.tsv``, ``cmd/<kind>.txt``), so every parser and rule reads it
unchanged: NVIDIA's ``nvidia-bug-report.log(.gz)`` and the EKS log collector's tarball.
"""

from __future__ import annotations

import re
from pathlib import Path

from analyzer.intake.foreign import eks_log_collector, nvidia_bug_report
from analyzer.intake.foreign.nvidia_bug_report import Converted
from analyzer.intake.safe_read import Limits

__all__ = ["Converted", "convert", "detect", "detect_tarball", "named_like"]

_NAMED = re.compile(r"nvidia-bug-report.*\.log(\.gz)*$", re.I)


def detect(path: Path) -> str | None:
    """The foreign input type of a file ('nvidia-bug-report'), or None."""
    if path.is_file() and not path.is_symlink() and nvidia_bug_report.detect(path):
        return nvidia_bug_report.SOURCE
    return None


def detect_tarball(path: Path) -> str | None:
    """The foreign input type of a tarball that is no bundle of ours ('eks-log-collector'), or None."""
    if path.is_file() and not path.is_symlink() and eks_log_collector.detect(path):
        return eks_log_collector.SOURCE
    return None


def named_like(path: Path) -> str | None:
    """The input type a file's name claims, whatever its content: to refuse it with a clear reason."""
    return nvidia_bug_report.SOURCE if _NAMED.search(path.name) else None


def convert(kind: str, path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the foreign input at ``path`` as a node bundle under ``dest``."""
    if kind == nvidia_bug_report.SOURCE:
        return nvidia_bug_report.convert(path, dest, limits)
    if kind == eks_log_collector.SOURCE:
        return eks_log_collector.convert(path, dest, limits)
    raise ValueError(f"unknown foreign input type {kind!r}")
