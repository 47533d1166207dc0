"""The kernel-log signature catalog (``parsers/kernel_signatures.toml``) as typed records.

The catalog is data: each signature is one row (pattern, family, what it extracts, severity with its
reason, the public sources); each family names the rule that judges it and its route; the noise rows say
which error-level lines of healthy nodes are no fault.  The kernel-log parser reads the patterns; the host
rules read families, severities and routes; ``hptriage rules`` and docs/rules.md list it.

>>> sig = signature("nvme_io_timeout")
>>> sig.family, sig.event_type, sig.severity
('nvme', 'nvme_timeout', 'warning')
>>> FAMILIES["lustre"].owner, FAMILIES["lustre"].rule
('filesystem-capacity', 'host.kernel.fault')
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PATH = Path(__file__).resolve().parent / "kernel_signatures.toml"
SEVERITIES = ("critical", "warning", "info")
#: the named groups a pattern may extract (alternatives of one group end in a digit: ``device2``)
GROUPS = ("pci", "device", "process", "pid", "severity", "src", "srcid")


@dataclass(frozen=True)
class Family:
    id: str
    title: str
    rule: str
    owner: str
    target: str
    action: str


@dataclass(frozen=True)
class Signature:
    id: str
    family: str
    event_type: str  # "-": the line is claimed (known) and is no event of its own
    keys: tuple[str, ...]
    pattern: re.Pattern[str]
    severity: str
    reason: str
    sources: tuple[str, ...]
    example: str | None
    severity_text: str | None = None

    @property
    def claims_only(self) -> bool:
        return self.event_type == "-"


@dataclass(frozen=True)
class Noise:
    id: str
    keys: tuple[str, ...]
    pattern: re.Pattern[str]
    reason: str


class CatalogError(ValueError):
    """The catalog file is malformed (a test and the import say which row)."""


def _load(path: Path = PATH) -> tuple[dict[str, Family], tuple[Signature, ...], tuple[Noise, ...]]:
    doc: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    families = {
        fid: Family(fid, f["title"], f["rule"], f["owner"], f["target"], f["action"])
        for fid, f in doc["family"].items()
    }
    signatures = []
    seen: set[str] = set()
    for row in doc["signature"]:
        sid = row["id"]
        if sid in seen or row["family"] not in families or row["severity"] not in SEVERITIES:
            raise CatalogError(f"{path.name}: signature {sid!r}: duplicate id, unknown family or severity")
        if not row["keys"]:
            raise CatalogError(f"{path.name}: signature {sid!r} has no keys")
        try:
            pattern = re.compile(row["pattern"])
        except re.error as exc:
            raise CatalogError(f"{path.name}: signature {sid!r}: pattern: {exc}") from exc
        unknown = {g.rstrip("0123456789") for g in pattern.groupindex} - set(GROUPS)
        if unknown:
            raise CatalogError(f"{path.name}: signature {sid!r} extracts unknown groups {sorted(unknown)}")
        seen.add(sid)
        signatures.append(
            Signature(
                sid,
                row["family"],
                row["event_type"],
                tuple(row["keys"]),
                pattern,
                row["severity"],
                row["reason"],
                tuple(row["sources"]),
                row.get("example"),
                row.get("severity_text"),
            )
        )
    noise = tuple(
        Noise(n["id"], tuple(n["keys"]), re.compile(n["pattern"]), n["reason"]) for n in doc.get("noise", [])
    )
    return families, tuple(signatures), noise


FAMILIES, SIGNATURES, NOISE = _load()
BY_ID = {s.id: s for s in SIGNATURES}


def signature(sid: str) -> Signature:
    return BY_ID[sid]


def families_of_rule(rule: str) -> tuple[str, ...]:
    """The families a rule judges (``rule`` of ``[family.X]``)."""
    return tuple(f.id for f in FAMILIES.values() if f.rule == rule)


def event_types_of(families: tuple[str, ...]) -> tuple[str, ...]:
    """The ``kernel_event.event_type`` values of the signatures of these families."""
    return tuple(
        dict.fromkeys(s.event_type for s in SIGNATURES if s.family in families and not s.claims_only)
    )


def extract(sig: Signature, m: re.Match[str]) -> dict[str, str | None]:
    """What a match extracts, by group name (alternatives ``device2``, ``device3`` fill ``device``)."""
    out: dict[str, str | None] = dict.fromkeys(GROUPS)
    for name, value in m.groupdict().items():
        base = name.rstrip("0123456789")
        if value is not None and out[base] is None:
            out[base] = value
    return out
