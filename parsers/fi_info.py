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
pastes), uniform indentation, markdown ``> ``, the verbose ``-v`` layout (YAML-like: ``---``, ``fi_info:``,
nested sections ``fi_tx_attr``, ``fi_ep_attr``, ``fi_domain_attr``, ``fi_fabric_attr``, ``nic`` /
``fi_device_attr`` / ``fi_bus_attr`` / ``fi_pci_attr`` / ``fi_link_attr``, read by indentation; a paste that
lost its indentation is read section by section), ``mpirun --tag-output`` lines (``[1,0]<stdout>:``, the
rank kept in ``host``) with ssh's "Warning: Permanently added" lines, a bare command echo.  Old EFA devices are named
``efa_N``, current ones ``rdmapXsY``; fabrics ``EFA-fe80::...`` (old), ``efa``, ``efa-direct``
(libfabric 2.x).  Newer libfabric prints up to three entries per device (efa-direct RDM, efa RDM,
efa DGRAM): count distinct ``device`` values, not rows, to count NICs.
``fi_getinfo: -61 (No data available)`` (FI_ENODATA: libfabric found no provider matching the
request, e.g. ``fi_info -p efa`` on a node without a usable EFA device) is an ANSWER, not a failed
tool: the result has no ``fi_provider`` row and one ``fi_info_status`` row ``no_provider`` (so the node
counts as examined and net.fi_info.no_efa can flag it).  Other ``fi_getinfo`` errors (``-22``, ...)
raise CollectorError.  Travel noise (launcher prefixes, prompts, fences, ``...``) is taken off by
``parsers._text.clean_lines``; a line that is not ``key: value`` is a ParseIssue.  Keys this parser has
no column for (``caps``, ``mode``, verbose attributes) are kept in ``extra``.

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
- ``extra`` str — JSON object of the entry's other keys as printed (verbose: ``section.key``), else null
- ``host`` str — launcher tag of the entry's first line (pdsh host, srun rank, pod, mpirun
  ``--tag-output`` rank ``1,0``), else null
- ``max_msg_size`` float, bytes — verbose ``fi_ep_attr`` (18446744073709551615 = 2^64-1: no limit)
- ``msg_prefix_size`` int, bytes — verbose ``fi_ep_attr`` (FI_MSG_PREFIX space the provider needs)
- ``inject_size`` int, bytes — verbose ``fi_tx_attr``
- ``mtu`` int, bytes — verbose ``nic`` / ``fi_link_attr``
- ``link_speed_gbps`` float, Gb/s — verbose ``fi_link_attr`` ``speed`` (printed in bits/s)
- ``link_state`` str — verbose ``fi_link_attr`` ``state`` (``FI_LINK_UP``, ``FI_LINK_DOWN``)
- ``nic_name``, ``driver`` str — verbose ``fi_device_attr`` ``name`` (``rdmap79s0``) and ``driver`` (``efa``)
- ``pci_bus_id`` str — verbose ``fi_bus_attr`` / ``fi_pci_attr`` (decimal ids) as ``dddd:bb:dd.f``

``fi_info_status`` (one row per file):

- ``line`` int — line of the ``fi_getinfo`` message, else of the first entry
- ``status`` str — ``providers`` (entries listed) or ``no_provider`` (``fi_getinfo: -61``)
- ``entries`` int — number of provider entries
- ``efa_listed`` bool — an ``efa`` provider entry is listed
- ``requested_provider`` str — ``-p NAME`` of a prompt line in the capture, else null
- ``message`` str — the ``fi_getinfo`` line as printed, else null

``provider_attribute`` (one row per printed key of every entry, plain or verbose): ``entity`` str
(``provider/domain``: ``efa/rdmap79s0-rdm``, or ``provider/fabric`` without a domain); ``section`` str
(the verbose section path as printed, `` / `` between levels: ``nic / fi_link_attr``; ``''`` at the
entry's top); ``key``, ``value`` str as printed (a list printed over several lines joined with `` | ``);
``number`` float and ``unit`` str where the value is one number (hex too); ``line`` int; ``host`` str.

Examples
--------
>>> rows = parse(SAMPLE).rows("fi_provider")
>>> [(r["fabric"], r["device"], r["type"], r["version"]) for r in rows]
[('efa-direct', 'rdmap47s0', 'FI_EP_RDM', '201.0'), ('efa', 'rdmap47s0', 'FI_EP_DGRAM', '201.0')]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from parsers._base import (
    CollectorError,
    Column,
    ParseError,
    ParseResult,
    ParserInfo,
    long_columns,
    require_text,
    sample_of,
)
from parsers._text import Cleaned, LongTable, clean_head_text, clean_lines, key_value, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="fi-info",
    title="libfabric providers (fi_info)",
    commands=("fi_info -p efa", "fi_info", "fi_info --version", "fi_info -p efa -v"),
    tables=("fi_provider", "fi_info_status", "provider_attribute"),
    versions_seen=(
        "efa 2.0",
        "efa 111.0",
        "efa 121.0",
        "efa 201.0 (efa-direct)",
        "fi_getinfo: -61 (no provider)",
        "fi_info -v / --verbose (libfabric 1.x, 2.x: nic, fi_device_attr, fi_bus_attr, fi_link_attr)",
        "mpirun --tag-output ([1,0]<stdout>:)",
    ),
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
        Column("extra", "str", "JSON object of the entry's other keys as printed"),
        Column("host", "str", "launcher tag of the entry's first line"),
        Column("max_msg_size", "float", "fi_ep_attr max_msg_size, bytes (2^64-1: no limit)"),
        Column("msg_prefix_size", "int", "fi_ep_attr msg_prefix_size, bytes"),
        Column("inject_size", "int", "fi_tx_attr inject_size, bytes"),
        Column("mtu", "int", "nic fi_link_attr mtu, bytes"),
        Column("link_speed_gbps", "float", "nic fi_link_attr speed (bits/s) in Gb/s"),
        Column("link_state", "str", "nic fi_link_attr state (FI_LINK_UP, FI_LINK_DOWN, ...)"),
        Column("nic_name", "str", "nic fi_device_attr name (rdmap79s0)"),
        Column("driver", "str", "nic fi_device_attr driver (efa)"),
        Column("pci_bus_id", "str", "nic fi_bus_attr fi_pci_attr as a PCI address dddd:bb:dd.f"),
    ),
    "fi_info_status": (
        Column("line", "int", "line of the fi_getinfo message or of the first entry"),
        Column("status", "str", "providers or no_provider"),
        Column("entries", "int", "provider entries listed"),
        Column("efa_listed", "bool", "an efa provider entry is listed"),
        Column("requested_provider", "str", "-p NAME of a prompt line, else null"),
        Column("message", "str", "fi_getinfo line as printed"),
    ),
    "provider_attribute": (
        *long_columns(
            "the entry: 'provider/domain' (efa/rdmap79s0-rdm), or 'provider/fabric' without a domain"
        ),
        Column("host", "str", "launcher tag of the line (pdsh host, srun rank, mpirun rank), else null"),
    ),
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
#: verbose (section, key) -> number column and the factor from the printed unit (None: an integer)
_NUMBERS: dict[tuple[str, str], tuple[str, float | None]] = {
    ("fi_ep_attr", "max_msg_size"): ("max_msg_size", 1.0),
    ("fi_ep_attr", "msg_prefix_size"): ("msg_prefix_size", None),
    ("fi_tx_attr", "inject_size"): ("inject_size", None),
    ("fi_link_attr", "mtu"): ("mtu", None),
    ("fi_link_attr", "speed"): ("link_speed_gbps", 1e-9),
}
_TEXTS = {
    ("fi_link_attr", "state"): "link_state",
    ("fi_device_attr", "name"): "nic_name",
    ("fi_device_attr", "driver"): "driver",
}
_PCI_KEYS = ("domain_id", "bus_id", "device_id", "function_id")
#: an fi_info command line echoed without a prompt sign a cleaner knows ("$./fi_info -v", "# fi_info")
_COMMAND_ECHO = re.compile(r"^[$#>%]?\s*\S*fi_info(?:\s+-\S.*)?$")
_GETINFO_ERROR = re.compile(r"fi_getinfo:?\s*-?\d+|fi_getinfo failed", re.IGNORECASE)
#: FI_ENODATA: no provider matches the request (an answer: "none here").
_NO_PROVIDER = re.compile(r"fi_getinfo:?\s*-61\b|No data available|no provider found", re.IGNORECASE)
_REQUESTED = re.compile(r"\bfi_info\b.*?(?:-p|--provider)[= ]?\s*['\"]?([\w;-]+)")


def detect(text: str) -> int:
    """Confidence that text is fi_info output (launcher prefixes and prompts taken off first)."""
    text = clean_head_text(text)
    if re.search(r"^\W*provider: \S+\s*$", text, re.MULTILINE) and re.search(r"\bdomain: \S", text):
        return 85
    if "fi_fabric_attr:" in text:
        return 85
    return 70 if _GETINFO_ERROR.search(text) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    cleaned = clean_lines(text)
    reader = _Reader(cleaned, text.splitlines())
    for no, text_line, host in cleaned.numbered():
        reader.line(no, text_line, host)
    return reader.finish()


@dataclass
class _Reader:
    """The state of one fi_info capture, read line by line (plain or verbose entries)."""

    cleaned: Cleaned
    raw_lines: list[str]
    result: ParseResult = field(
        default_factory=lambda: ParseResult(tables={"fi_provider": [], "fi_info_status": []})
    )
    attributes: LongTable = field(default_factory=lambda: LongTable(("host",)))
    entry: dict[str, Any] | None = None
    #: id(entry) -> its keys without a column; the indexes of its provider_attribute rows (their entity
    #: is known at the end); its fi_pci_attr keys
    extras: dict[int, dict[str, str]] = field(default_factory=dict)
    rows_of: dict[int, list[int]] = field(default_factory=dict)
    pci: dict[int, dict[str, str]] = field(default_factory=dict)
    stack: list[tuple[int, str]] = field(
        default_factory=list
    )  # verbose: (indentation, name) of open sections
    verbose: bool = False
    flat: bool = False  # a verbose capture that lost its indentation (_flat)
    api_version: str | None = None
    errors: list[tuple[int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.result.column_table("provider_attribute", self.attributes)
        self.flat = _flat(self.cleaned.lines)

    def line(self, no: int, text_line: str, host: str | None) -> None:
        raw = self.raw_lines[no - 1]
        line = text_line.strip()
        if not line or line in ("...", "---", "…"):
            return
        if _GETINFO_ERROR.search(line) or _NO_PROVIDER.search(line):
            self.errors.append((no, raw))
            return
        if m := re.match(r"libfabric api:\s*(\S+)", line):
            self.api_version = m.group(1)
            return
        if line.startswith("Warning: Permanently added") or _COMMAND_ECHO.match(line):
            return  # ssh's known-hosts notice of an mpirun launch; a command line echoed
        kv = key_value(line)
        if kv is None:
            self._bare(no, raw, line)
            return
        key, value = kv
        if key in ("fi_info", "libfabric") and value[:1].isdigit():
            return  # the --version banner: "fi_info: 1.18.2amzn1.0", "libfabric: 1.18.2amzn1.0"
        indent = len(text_line) - len(text_line.lstrip())
        if key == "fi_info" and not value:  # a verbose entry starts
            self.verbose, self.stack = True, [(indent, "")]
            self.entry = _new_entry(self.result, no, host)
        elif not self._opens_section(indent, key, value):
            self._key(no, raw, key, value, host)

    def _bare(self, no: int, raw: str, line: str) -> None:
        """A line without 'key: value': a verbose list value on its own line ("FI_MSG", "[ ]"), else an issue."""
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*(?:\s*\|\s*[A-Z][A-Z0-9_]*)*|\[\s*\]", line):
            self.result.issue(no, raw, "not a 'key: value' line")
        elif self.entry is not None:
            _keep(
                self.extras.setdefault(id(self.entry), {}),
                ".".join(n for _, n in self.stack) or "value",
                line,
            )
            if kept := self.rows_of.get(id(self.entry)):
                printed = self.attributes.data["value"][kept[-1]]
                self.attributes.set_value(kept[-1], f"{printed} | {line}" if printed else line)

    def _opens_section(self, indent: int, key: str, value: str) -> bool:
        """Verbose layout: close the sections a line is no deeper than (a flat paste: a new section closes
        them) and open one for a key without a value; True when the line was a section."""
        if not self.verbose:
            return False
        stack = self.stack
        while len(stack) > 1 and (stack[-1][0] >= indent if not self.flat else not value):
            stack.pop()
        if not value:
            stack.append((indent, key))
        return not value

    def _key(self, no: int, raw: str, key: str, value: str, host: str | None) -> None:
        """A key with its value: a column of the entry, a number, a PCI part, else a key kept in extra."""
        path = [n for _, n in self.stack[1:]] if self.verbose else []
        section = path[-1] if path else None
        column = _KEYS.get((section, key))
        if column == "provider" and not self.verbose:
            self.entry = _new_entry(self.result, no, host)
        entry = self.entry
        if entry is None:
            if column is not None or not self.verbose:
                self.result.issue(no, raw, "value outside any provider entry")
            return
        self.rows_of.setdefault(id(entry), []).append(len(self.attributes))
        self.attributes.add(None, " / ".join(path), key, value, no, host)
        if column is not None and entry[column] is None:
            entry[column] = value
        else:
            _keep(self.extras.setdefault(id(entry), {}), ".".join([*path, key]), value)
        if section == "fi_pci_attr":
            self.pci.setdefault(id(entry), {})[key] = value
        elif (number := _NUMBERS.get((section or "", key))) is not None:
            read = to_int(value)
            if read is None:
                self.result.issue(no, raw, f"{key}: not a number")
            else:
                entry[number[0]] = read * number[1] if number[1] is not None else read
        elif (text_column := _TEXTS.get((section or "", key))) is not None:
            entry[text_column] = value

    def finish(self) -> ParseResult:
        result, cleaned = self.result, self.cleaned
        rows = result.rows("fi_provider")
        requested = next((m.group(1) for _, cmd in cleaned.commands if (m := _REQUESTED.search(cmd))), None)
        if not rows:
            return self._no_entries(requested)
        for row in rows:
            self._complete(row)
        for no, raw in self.errors:
            result.issue(no, raw, "fi_getinfo error next to provider entries")
        efa = any((r["provider"] or "").startswith("efa") for r in rows)
        status = {"line": rows[0]["line"], "status": "providers", "entries": len(rows), "efa_listed": efa}
        status.update(requested_provider=requested, message=None)
        result.add("fi_info_status", status)
        return result

    def _complete(self, row: dict[str, Any]) -> None:
        """What an entry's row takes from the whole capture: the API version, its device, extra keys, PCI
        address, and the entity of its provider_attribute rows."""
        row["api_version"] = row["api_version"] or self.api_version
        if row["domain"]:
            row["device"] = re.sub(r"-(?:rdm|dgrm|dgram|msg)$", "", row["domain"])
        extra = self.extras.get(id(row))
        row["extra"] = json.dumps(extra, sort_keys=False) if extra else None
        row["pci_bus_id"] = _pci(self.pci.get(id(row), {}))
        entity = f"{row['provider'] or ''}/{row['domain'] or row['fabric'] or ''}"
        for index in self.rows_of.get(id(row), []):
            self.attributes.data["entity"][index] = entity

    def _no_entries(self, requested: str | None) -> ParseResult:
        """No provider entry: fi_getinfo's "no provider" answer (a status row), else why this is no fi_info."""
        result, cleaned = self.result, self.cleaned
        no_provider = [(no, raw) for no, raw in self.errors if _NO_PROVIDER.search(raw)]
        if no_provider:
            no, _ = no_provider[0]
            result.issues = [i for i in result.issues if i.line_no != no]
            status = {"line": no, "status": "no_provider", "entries": 0, "efa_listed": False}
            status.update(requested_provider=requested, message=cleaned.lines[no - 1].strip()[:300])
            result.add("fi_info_status", status)
            return result
        if self.errors:
            raise CollectorError(self.errors[0][1].strip()[:300])
        if self.api_version is not None:
            raise ParseError("fi_info --version only: no provider entries")
        first = next((ln for _, ln, _ in cleaned.numbered()), "")
        raise ParseError(
            "expected fi_info provider entries ('provider: efa' then 'fabric:', 'domain:', ...) or a"
            f" 'fi_getinfo: -61' line; first line seen: {first.strip()[:120]!r}"
        )


def _flat(lines: list[str]) -> bool:
    """True when a verbose capture lost its indentation (every ``key:`` line starts at one column)."""
    indents = {len(line) - len(line.lstrip()) for line in lines[:400] if ":" in line and line.strip()}
    return len(indents) <= 1


def _pci(attrs: dict[str, str]) -> str | None:
    """The PCI address of ``fi_pci_attr`` (decimal domain_id, bus_id, device_id, function_id).

    >>> _pci({"domain_id": "0", "bus_id": "79", "device_id": "0", "function_id": "0"}), _pci({})
    ('0000:4f:00.0', None)
    """
    parts = [to_int(attrs.get(k)) for k in _PCI_KEYS]
    if any(p is None for p in parts):
        return None
    domain, bus, device, function = (int(p or 0) for p in parts)
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function}"


def _keep(extra: dict[str, str], key: str, value: str) -> None:
    """Keep a key with no column; a repeated key (verbose lists) joins its values with ' | '."""
    extra[key] = f"{extra[key]} | {value}" if key in extra else value


def _new_entry(result: ParseResult, no: int, host: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {c.name: None for c in SCHEMA["fi_provider"]}
    entry["line"], entry["host"] = no, host
    result.add("fi_provider", entry)
    return entry
