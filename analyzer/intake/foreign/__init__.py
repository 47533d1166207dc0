"""Inputs users already have, written by other tools, read as node bundles (see docs/inputs.md).

Each reader is a module with ``SOURCE`` (the input type's name), ``detect(path) -> bool`` (by content:
a file, a directory or an archive, whatever shape its input has) and ``convert(path, dest, limits) ->
Converted``, which lays the input out under ``dest`` (a new private work directory) as node bundles
and cluster-wide extra/ folders (:mod:`analyzer.intake.foreign.layout`), so every parser and rule
reads it unchanged.  A reader may also have ``NAMED``, a pattern of the file names its input goes by,
so a file named like one but holding something else is refused with a clear reason.

Readers are tried in :data:`READERS` order; an input that holds others (an EKS collector tarball holds
an nvidia-bug-report) is detected by its own layout before the reader of what it holds.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from analyzer.intake.foreign import (
    dcgm_mndiag,
    eks_log_collector,
    hyperpod_issue_report,
    nvidia_bug_report,
    sos_report,
)
from analyzer.intake.foreign.layout import Converted
from analyzer.intake.safe_read import Limits

__all__ = ["READERS", "Converted", "convert", "describe", "detect", "named_like", "sources"]

#: every reader, in the order they are tried
READERS: tuple[ModuleType, ...] = (
    eks_log_collector,
    hyperpod_issue_report,
    nvidia_bug_report,
    sos_report,
    dcgm_mndiag,
)


def detect(path: Path) -> str | None:
    """The foreign input type of a file, directory or archive ('nvidia-bug-report', ...), or None.
    Links are never followed."""
    if path.is_symlink() or not path.exists():
        return None
    for reader in READERS:
        if reader.detect(path):
            return str(reader.SOURCE)
    return None


def named_like(path: Path) -> str | None:
    """The input type a file's name claims, whatever its content: to refuse it with a clear reason."""
    for reader in READERS:
        pattern: re.Pattern[str] | None = getattr(reader, "NAMED", None)
        if pattern is not None and pattern.search(path.name):
            return str(reader.SOURCE)
    return None


def sources() -> list[str]:
    """The foreign input types read, in the order they are tried."""
    return [str(reader.SOURCE) for reader in READERS]


def describe() -> list[str]:
    """The ``hptriage parse --list`` entries of the foreign inputs: type, then its reader's title.

    >>> describe()[0].split()[0] in sources()
    True
    """
    out = []
    for reader in READERS:
        title = (reader.__doc__ or "").strip().splitlines()[0].rstrip(".").replace("``", "")
        out.append(f"{reader.SOURCE:24} {title}")
    return out


def convert(kind: str, path: Path, dest: Path, limits: Limits) -> Converted:
    """Lay the foreign input at ``path`` out under ``dest`` (created; must not exist yet)."""
    for reader in READERS:
        if kind == reader.SOURCE:
            converted: Converted = reader.convert(path, dest, limits)
            return converted
    raise ValueError(f"unknown foreign input type {kind!r}")
