"""meta.env and manifest.tsv: the two small text files that describe a node bundle.

Both are untrusted: parsed line by line, never sourced or evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REQUIRED_META = ("bundle_format", "node", "collected_at")
KNOWN_META = REQUIRED_META + (
    "hostname",
    "instance_id",
    "instance_type",
    "availability_zone",
    "az_id",
    "placement_group",
    "cluster",
    "instance_group",
    "ultraserver_id",
    "network_node_layers",
    "collector_version",
    "kernel",
    "os_release",
    "nproc",
    "redacted",
)
MANIFEST_COLUMNS = ("path", "kind", "exit_code", "duration_s", "bytes", "sha256", "command", "note")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
MAX_VALUE = 4096


@dataclass
class Meta:
    values: dict[str, str] = field(default_factory=dict)
    problems: list[tuple[int, str]] = field(default_factory=list)

    def get(self, key: str) -> str | None:
        v = self.values.get(key)
        return v if v else None


def parse_meta(text: str) -> Meta:
    """Parse KEY=VALUE lines.

    >>> m = parse_meta("bundle_format=1\\nnode='node-1'\\n# c\\nbad line\\ncollected_at=2026-12-02T09:00:00Z")
    >>> m.values["node"], m.problems
    ('node-1', [(4, 'not a KEY=VALUE line')])
    """
    meta = Meta()
    for no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.match(key):
            meta.problems.append((no, "not a KEY=VALUE line"))
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        meta.values[key] = value[:MAX_VALUE]
    for key in REQUIRED_META:
        if key not in meta.values:
            meta.problems.append((0, f"required key {key!r} missing"))
    fmt = meta.values.get("bundle_format")
    if fmt is not None and fmt != "1":
        meta.problems.append((0, f"bundle_format={fmt!r}; this analyzer reads format 1"))
    return meta


@dataclass(frozen=True)
class ManifestRow:
    path: str
    kind: str | None
    exit_code: int | None
    duration_s: float | None
    bytes: int | None
    sha256: str | None
    command: str | None
    note: str | None
    line: int


def parse_manifest(text: str) -> tuple[dict[str, ManifestRow], list[tuple[int, str]]]:
    """Parse manifest.tsv into {path: row} and a list of (line, problem).

    >>> rows, problems = parse_manifest("path\\tkind\\texit_code\\tduration_s\\tbytes\\tsha256\\tcommand\\n"
    ...     "cmd/dmesg.txt\\tdmesg\\t0\\t0.05\\t120\\tab\\tdmesg -T\\n")
    >>> rows["cmd/dmesg.txt"].kind, rows["cmd/dmesg.txt"].exit_code, problems
    ('dmesg', 0, [])
    """
    rows: dict[str, ManifestRow] = {}
    problems: list[tuple[int, str]] = []
    lines = text.splitlines()
    if not lines or not lines[0].lower().startswith("path\t"):
        problems.append((1, "manifest.tsv has no 'path<TAB>kind<TAB>...' header line"))
        start = 0 if lines and "\t" in lines[0] and not lines[0].lower().startswith("path") else 1
    else:
        start = 1
    for no, raw in enumerate(lines[start:], start=start + 1):
        if not raw.strip():
            continue
        cells = raw.split("\t")
        if len(cells) < 2:
            problems.append((no, "manifest row has fewer than 2 columns"))
            continue
        cells += ["-"] * (len(MANIFEST_COLUMNS) - len(cells))
        path = cells[0].strip().removeprefix("./")
        kind_cell = cells[1].strip()
        rows[path] = ManifestRow(
            path=path,
            # '-' means "kept for people, not parsed"; an empty kind means "recognise by content"
            kind=kind_cell if kind_cell == "-" else (kind_cell or None),
            exit_code=_int(cells[2]),
            duration_s=_float(cells[3]),
            bytes=_int(cells[4]),
            sha256=_dash(cells[5]),
            command=_dash(cells[6]),
            note=_dash("\t".join(cells[7:])),
            line=no,
        )
    return rows, problems


def _dash(v: str) -> str | None:
    v = v.strip()
    return None if v in ("", "-") else v


def _int(v: str) -> int | None:
    try:
        return int(v.strip())
    except ValueError:
        return None


def _float(v: str) -> float | None:
    try:
        return float(v.strip())
    except ValueError:
        return None
