"""libfabric providers and domains seen by ``fi_info`` (the EFA devices libfabric can use).

Commands whose output it reads (collector.sh runs the first)::

    fi_info -p efa          # one entry per endpoint type and device
    fi_info                 # all providers (efa, tcp, shm, ...)
    fi_info --version       # "libfabric api: 1.18" sets api_version
    fi_info -p efa -v       # verbose: fi_fabric_attr / fi_domain_attr / fi_ep_attr sections

Sample (lines of tests/fixtures/fi-info/eks-pod-kr-201.0-efa-direct.txt)::

    provider: efa
        fabric: efa-direct
        domain: rdmap47s0-rdm
        version: 201.0
        type: FI_EP_RDM
        protocol: FI_PROTO_EFA
    provider: efa
        fabric: efa
        domain: rdmap47s0-dgrm
        version: 201.0
        type: FI_EP_DGRAM
        protocol: FI_PROTO_EFA

Styles accepted: sub-keys indented under ``provider:`` or flattened to the same indentation (doc
pastes), uniform indentation, markdown ``> ``, the verbose ``-v`` layout.  Old EFA devices are named
``efa_N``, current ones ``rdmapXsY``; fabrics ``EFA-fe80::...`` (old), ``efa``, ``efa-direct``
(libfabric 2.x).  Newer libfabric prints up to three entries per device (efa-direct RDM, efa RDM,
efa DGRAM): count distinct ``device`` values, not rows, to count NICs.
``fi_getinfo: -61 (No data available)`` (no provider found) raises CollectorError.

Schema
------
``fi_provider`` (one row per entry):

- ``line`` int — line of the entry's ``provider:`` (or verbose ``fi_info:``)
- ``provider`` str — ``efa``, ``tcp;ofi_rxm``, ...
- ``fabric`` str — fabric name as printed
- ``domain`` str — ``rdmap47s0-rdm``, ``efa_0-rdm``
- ``version`` str — provider version (``111.0``, ``201.0``)
- ``api_version`` str — libfabric API version when printed (``-v`` or ``--version``), else null
- ``protocol`` str — ``FI_PROTO_EFA``, ...
- ``type`` str — endpoint type ``FI_EP_RDM`` / ``FI_EP_DGRAM`` / ``FI_EP_MSG``
- ``device`` str — the domain without its ``-rdm`` / ``-dgrm`` suffix (``rdmap47s0``)

Examples
--------
>>> rows = parse(SAMPLE).rows("fi_provider")
>>> [(r["fabric"], r["device"], r["type"], r["version"]) for r in rows]
[('efa-direct', 'rdmap47s0', 'FI_EP_RDM', '201.0'), ('efa', 'rdmap47s0', 'FI_EP_DGRAM', '201.0')]
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import key_value, strip_prefix

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="fi-info",
    title="libfabric providers (fi_info)",
    commands=("fi_info -p efa", "fi_info", "fi_info --version", "fi_info -p efa -v"),
    tables=("fi_provider",),
    versions_seen=("efa 2.0", "efa 111.0", "efa 121.0", "efa 201.0 (efa-direct)"),
)

SCHEMA = {
    "fi_provider": (
        Column("line", "int", "line of the entry's first line"),
        Column("provider", "str", "libfabric provider"),
        Column("fabric", "str", "fabric name"),
        Column("domain", "str", "domain name"),
        Column("version", "str", "provider version"),
        Column("api_version", "str", "libfabric API version"),
        Column("protocol", "str", "endpoint protocol"),
        Column("type", "str", "endpoint type"),
        Column("device", "str", "domain without -rdm/-dgrm"),
    )
}

#: (verbose section, key) -> column; the plain layout has no section.
_KEYS = {
    (None, "provider"): "provider",
    (None, "fabric"): "fabric",
    (None, "domain"): "domain",
    (None, "version"): "version",
    (None, "type"): "type",
    (None, "protocol"): "protocol",
    ("fi_fabric_attr", "prov_name"): "provider",
    ("fi_fabric_attr", "name"): "fabric",
    ("fi_fabric_attr", "prov_version"): "version",
    ("fi_fabric_attr", "api_version"): "api_version",
    ("fi_domain_attr", "name"): "domain",
    ("fi_ep_attr", "type"): "type",
    ("fi_ep_attr", "protocol"): "protocol",
}
_GETINFO_ERROR = re.compile(r"fi_getinfo:?\s*-?\d+|fi_getinfo failed", re.IGNORECASE)


def detect(text: str) -> int:
    """Confidence that text is fi_info output."""
    if re.search(r"^\W*provider: \S+\s*$", text, re.MULTILINE) and re.search(r"\bdomain: \S", text):
        return 85
    if "fi_fabric_attr:" in text:
        return 85
    return 70 if _GETINFO_ERROR.search(text) else 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult(tables={"fi_provider": []})
    entry: dict[str, Any] | None = None
    section: str | None = None
    verbose = False
    api_version: str | None = None
    errors: list[tuple[int, str]] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw.strip()).strip()
        if not line or line in ("...", "---", "…"):
            continue
        if _GETINFO_ERROR.search(line):
            errors.append((no, raw))
            continue
        if m := re.match(r"libfabric api:\s*(\S+)", line):
            api_version = m.group(1)
            continue
        kv = key_value(line)
        if kv is None:
            result.issue(no, raw, "not a 'key: value' line")
            continue
        key, value = kv
        if key in ("fi_info", "libfabric") and value[:1].isdigit():
            continue  # the --version banner: "fi_info: 1.18.2amzn1.0", "libfabric: 1.18.2amzn1.0"
        if key == "fi_info" and not value:  # a verbose entry starts
            verbose, section = True, None
            entry = _new_entry(result, no)
            continue
        if verbose and not value:
            section = key
            continue
        column = _KEYS.get((section if verbose else None, key))
        if column == "provider" and not verbose:
            entry = _new_entry(result, no)
        if entry is None:
            if column is not None or not verbose:
                result.issue(no, raw, "value outside any provider entry")
            continue
        if column is not None and entry[column] is None:
            entry[column] = value
    rows = result.rows("fi_provider")
    if not rows:
        if errors:
            raise CollectorError(errors[0][1].strip()[:300])
        if api_version is not None:
            raise ParseError("fi_info --version only: no provider entries")
        raise ParseError("no fi_info provider entries found")
    for row in rows:
        row["api_version"] = row["api_version"] or api_version
        if row["domain"]:
            row["device"] = re.sub(r"-(?:rdm|dgrm|dgram|msg)$", "", row["domain"])
    for no, raw in errors:
        result.issue(no, raw, "fi_getinfo error next to provider entries")
    return result


def _new_entry(result: ParseResult, no: int) -> dict[str, Any]:
    entry: dict[str, Any] = {c.name: None for c in SCHEMA["fi_provider"]}
    entry["line"] = no
    result.add("fi_provider", entry)
    return entry
