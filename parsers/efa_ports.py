"""EFA (RDMA) port state: sysfs, ``ibstat`` and ``ibv_devinfo``.

Commands whose output it reads (any of them; outputs may be concatenated)::

    grep -H . /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}
    # collector.sh writes the same as "path: value" lines, with */fw_ver and the ports'
    # counters/port_rcv_errors and counters/port_xmit_discards
    ibstat
    ibv_devinfo            # -v adds phys_state, active_width, active_speed

Sample (hand-written: sysfs lines, then ibstat lines of the amzn-drivers-114 fixture)::

    /sys/class/infiniband/rdmap79s0/ports/1/state: 4: ACTIVE
    /sys/class/infiniband/rdmap79s0/ports/1/phys_state: 5: LinkUp
    /sys/class/infiniband/rdmap79s0/ports/1/rate: 100 Gb/sec (4X EDR)
    CA 'efa_0'
     Port 1:
     State: Active
     Physical state: LinkUp
     Rate: 100

Device names: ``efa_N`` (old kernels) or ``rdmapXsY`` (current).  Other RDMA devices (soft-RoCE
``rxe0``, Mellanox ``mlx5_0``/``mlx4_0``, ``irdma``, ...) are read too, with ``provider`` naming the
driver family and ``is_efa`` false: a node whose only RDMA devices are those has no EFA device.  ibstat
indentation may be collapsed by a paste; ``ibv_devinfo`` is TAB-indented (``-v`` adds device
attributes, flag lists on their own lines, ``key = value`` and tab-separated ``key<TAB>value`` lines).
``grep . /sys/class/infiniband/*/ports/*/state`` lines (``path:4: ACTIVE``) are sysfs lines.  Travel
noise (launcher prefixes, prompts, fences, ``<---`` annotations, CRLF) is taken off by
``parsers._text.clean_lines``; a shell loop's ``mlx5_0 Ethernet   4: ACTIVE`` lines (device, sysfs
link_layer, state) and the content of one sysfs ``link_layer`` file (``Ethernet``, ``InfiniBand``,
``Unspecified``: device and port from the file name's path, else unknown with a ParseIssue) are ports
too; dmesg lines and prompts are skipped; any other line that looks like
data is a ParseIssue.  Every key printed for a device or port that has no column is kept in
``extra``.  ``No IB devices found`` raises CollectorError.  The efa driver version (``modinfo efa``,
``/sys/module/efa/version``) and installed packages are the ``versions`` kind.

Schema
------
``efa_port`` (one row per device port and source):

- ``line`` int — first line of the port
- ``device`` str — ``rdmap79s0``, ``efa_0``
- ``port`` int — port number (EFA has one: 1)
- ``state`` str — normalised upper case: ``ACTIVE``, ``DOWN``, ``INIT``, ``ARMED``, ``ACTIVE_DEFER``
- ``phys_state`` str — normalised upper case: ``LINK_UP``, ``POLLING``, ``DISABLED``, ``SLEEP``, ...
- ``rate_gbps`` float, Gb/s — link rate (``ibv_devinfo -v``: active_width × active_speed)
- ``link_layer`` str — as printed (``Unknown``, ``InfiniBand``, ``Ethernet``)
- ``source`` str — ``sysfs``, ``ibstat`` or ``ibv_devinfo``
- ``rcv_errors``, ``xmit_discards`` int — sysfs ``counters/port_rcv_errors`` / ``port_xmit_discards``
- ``fw_ver`` str — the device's firmware (sysfs ``fw_ver``, ibstat "Firmware version", ibv_devinfo ``fw_ver``)
- ``provider`` str — driver family from the device name or vendor id: ``efa``, ``rxe`` (soft-RoCE),
  ``mlx5``, ``mlx4``, ``irdma``, ... (the name's letters)
- ``is_efa`` bool — an EFA device (``efa_N``, ``rdmapXsY`` not of another vendor, vendor_id 0x1d0f)
- ``extra`` str — JSON object of every other key printed for the device and the port, as printed
  (``transport``, ``vendor_id``, ``max_mtu``, ``Base lid``, ``state`` as printed ``PORT_ACTIVE (4)``, ...)
- ``host`` str — launcher tag of the port's first line (pdsh host, srun rank, pod), else null

``port_attribute`` (one row per printed key, the long table): ``entity`` str (``device/port`` for a
port's key, the device for a device's key: ``vendor_id``, ``fw_ver``, ``node_guid``, ``max_mtu``...);
``section`` str (the sysfs sub-folder, ``counters``, else ``''``); ``key``, ``value`` str as printed (a
flag list over several lines joined with `` | ``); ``number`` float, ``unit`` str where the value is one
number (``0x1d0f`` too); ``line`` int; ``source`` str; ``host`` str.

Examples
--------
>>> rows = parse(SAMPLE).rows("efa_port")
>>> [(r["device"], r["port"], r["state"], r["phys_state"], r["rate_gbps"], r["source"]) for r in rows]
[('rdmap79s0', 1, 'ACTIVE', 'LINK_UP', 100.0, 'sysfs'), ('efa_0', 1, 'ACTIVE', 'LINK_UP', 100.0, 'ibstat')]
>>> rows[0]["is_efa"], rows[0]["extra"]
(True, '{"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "100 Gb/sec (4X EDR)"}')
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
from parsers._text import LongTable, clean_head_text, clean_lines, key_value, leading_number

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="efa-ports",
    title="EFA / RDMA port state (sysfs, ibstat, ibv_devinfo)",
    commands=("grep -H . /sys/class/infiniband/*/ports/*/state ...", "ibstat", "ibv_devinfo"),
    tables=("efa_port", "port_attribute"),
    versions_seen=(
        "rdma-core 25 (efa_N)",
        "current kernels (rdmapXsY)",
        "soft-RoCE rxe0 (ibv_devinfo)",
        "Mellanox mlx4 (ibv_devinfo, -v)",
    ),
)

SCHEMA = {
    "efa_port": (
        Column("line", "int", "first line of the port"),
        Column("device", "str", "RDMA device name"),
        Column("port", "int", "port number"),
        Column("state", "str", "ACTIVE/DOWN/INIT/ARMED/..."),
        Column("phys_state", "str", "LINK_UP/POLLING/DISABLED/..."),
        Column("rate_gbps", "float", "link rate, Gb/s"),
        Column("link_layer", "str", "link layer as printed"),
        Column("source", "str", "sysfs, ibstat or ibv_devinfo"),
        Column("rcv_errors", "int", "sysfs counters/port_rcv_errors"),
        Column("xmit_discards", "int", "sysfs counters/port_xmit_discards"),
        Column(
            "fw_ver", "str", "device firmware (sysfs fw_ver, ibstat Firmware version, ibv_devinfo fw_ver)"
        ),
        Column("provider", "str", "driver family: efa, rxe, mlx5, mlx4, irdma, ..."),
        Column("is_efa", "bool", "an EFA device"),
        Column("extra", "str", "JSON object of the other keys printed for the device and port"),
        Column("host", "str", "launcher tag of the port's first line"),
    ),
    "port_attribute": (
        *long_columns("'device/port' for a port's key (rdmap79s0/1), the device name for a device's key"),
        Column("source", "str", "sysfs, ibstat or ibv_devinfo"),
        Column("host", "str", "launcher tag of the line, else null"),
    ),
}
#: the content of one sysfs link_layer file (``cat /sys/class/infiniband/DEV/ports/N/link_layer``)
_LINK_LAYERS = {"ethernet", "infiniband", "unspecified", "unknown"}
#: a shell loop over the sysfs ports: "mlx5_0 Ethernet   4: ACTIVE" (device, link_layer, state)
_LOOP = re.compile(
    r"^(?P<dev>[A-Za-z][\w-]*)\s+(?P<ll>Ethernet|InfiniBand|Unspecified|Unknown)(?:\s+(?P<state>\d+:\s*\w+))?\s*$"
)
_SYSFS_PATH = re.compile(r"/sys/class/infiniband/(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/link_layer")

_SYSFS = re.compile(
    r"/sys/class/infiniband/(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/(?P<path>(?:[\w-]+/)*)"
    r"(?P<attr>[\w-]+)\s*:\s*(?P<value>.*)"
)
_SYSFS_KNOWN = {"state", "phys_state", "rate", "link_layer", "port_rcv_errors", "port_xmit_discards"}
_SYSFS_FW = re.compile(r"/sys/class/infiniband/(?P<dev>[^/\s]+)/fw_ver\s*:\s*(?P<value>\S*)")
_SYSFS_DEV = re.compile(r"/sys/class/infiniband/(?P<dev>[^/\s]+)/(?P<attr>[\w-]+)\s*:\s*(?P<value>.*)")
_DMESG = re.compile(r"^\[\s*\d+\.\d+\]|^\[\w{3} \w{3} [ \d]\d ")
#: "ip-172-30-4-150:~ # ibstat", "#ibv_devinfo", a bare "grep . /sys/..." echo: prompts and command
#: lines clean_lines leaves (no user@, no space after '#', no prompt at all).
_HOST_PROMPT = re.compile(
    r"^[\w.-]+:[~/][^\s#$]*\s?[#$]\s+\S|^#?\s?(?:sudo\s+)?(?:ibv_devinfo|ibstat|grep|cat|ls|for)(?:\s|$)"
)
_LOOKS_LIKE_DATA = re.compile(r"\d|infiniband|\b(?:efa|rdmap|mlx|rxe|port|state|ACTIVE|DOWN)", re.I)
#: vendor_id (ibv_devinfo) -> driver family, where the device name does not say.
_VENDORS = {"0x1d0f": "efa", "0x02c9": "mlx", "0x15b3": "mlx", "0x8086": "irdma", "0x14e4": "bnxt_re"}
_IBSTAT = {"State": "state", "Physical state": "phys_state", "Rate": "rate", "Link layer": "link_layer"}
_DEVINFO = {"state": "state", "phys_state": "phys_state", "link_layer": "link_layer"}
_DEVINFO_RATE = ("active_width", "active_speed")
_PHYS = {
    "linkup": "LINK_UP",
    "polling": "POLLING",
    "disabled": "DISABLED",
    "sleep": "SLEEP",
    "portconfigurationtraining": "PORT_CONFIGURATION_TRAINING",
    "linkerrorrecovery": "LINK_ERROR_RECOVERY",
    "phytest": "PHY_TEST",
}


def detect(text: str) -> int:
    """Confidence that text is EFA/RDMA port state (launcher prefixes and prompts taken off first)."""
    text = clean_head_text(text)
    if re.search(r"/sys/class/infiniband/[^/\s]+/ports/\d+/(?:state|phys_state|rate)", text):
        return 85
    if re.search(r"^\W*CA '[^']+'", text, re.MULTILINE) and re.search(r"Port \d+:", text):
        return 80
    if re.search(r"^\W*hca_id:", text, re.MULTILINE) and re.search(r"\bport:\s+\d+", text):
        return 80
    if (
        len(
            re.findall(
                r"^[A-Za-z][\w-]*\s+(?:Ethernet|InfiniBand|Unspecified)\s+\d+:\s*[A-Z_]+\s*$", text, re.M
            )
        )
        >= 1
    ):
        return 70  # a shell loop printing device, link_layer and state of each port
    if text.strip() in ("Ethernet", "InfiniBand", "Unspecified"):
        return 40  # one sysfs link_layer file
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    cleaned = clean_lines(text)
    if (single := _link_layer_file(cleaned.lines, filename)) is not None:
        return single
    reader = _Reader(_result(), text.splitlines())
    for no, line, host in cleaned.numbered():
        reader.line(no, line.strip(), host)
    if not reader.result.rows("efa_port"):
        if re.search(r"No IB devices found|ibpanic|cannot access '?/sys/class/infiniband", text):
            raise CollectorError(text.strip().splitlines()[0][:300])
        first = next((ln for _, ln, _ in cleaned.numbered()), "")
        raise ParseError(
            "expected sysfs port lines (/sys/class/infiniband/DEV/ports/N/state: 4: ACTIVE), an ibstat"
            f" CA block or an ibv_devinfo hca_id; first line seen: {first.strip()[:120]!r}"
        )
    return reader.finish()


@dataclass
class _Reader:
    """The state of one capture: sysfs lines, ibstat CA blocks, ibv_devinfo hca_id blocks."""

    result: ParseResult
    raw_lines: list[str]
    ports: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    extras: dict[int, dict[str, str]] = field(default_factory=dict)  # id(port row) -> printed keys
    devices: dict[str, dict[str, str]] = field(default_factory=dict)  # device -> printed device-level keys
    firmware: dict[str, str] = field(default_factory=dict)
    device: str | None = None
    current: dict[str, Any] | None = None
    source: str = ""
    last: tuple[dict[str, str], str] | None = None  # where a continuation line (a flag list) goes

    def line(self, no: int, line: str, host: str | None) -> None:
        raw = self.raw_lines[no - 1]
        if _DMESG.match(line) or _HOST_PROMPT.match(line) or self._sysfs(no, raw, line, host):
            return
        if m := re.match(r"CA '([^']+)'", line):
            self.device, self.current, self.source, self.last = m.group(1), None, "ibstat", None
            return
        if m := re.match(r"Port (\d+):$", line):
            if self.device is None or self.source != "ibstat":
                self.result.issue(no, raw, "port outside a CA block")
            else:
                self.current = _port(
                    self.result, self.ports, self.source, self.device, int(m.group(1)), no, host
                )
            return
        kv = key_value(line) or key_value(line, "=")
        if kv is None and "\t" in line:  # ibv_devinfo -v: "log max atomic inline\t\t3"
            name, _, value = line.partition("\t")
            kv = (name.strip(), value.strip())
        if kv is None:
            self._bare(no, raw, line)
        else:
            self._key(no, raw, line, kv[0], kv[1], host)

    def _sysfs(self, no: int, raw: str, line: str, host: str | None) -> bool:
        """A line of a sysfs listing (firmware, a port's file, a device's file, a loop's echo); True when
        it was one."""
        result = self.result
        if m := _SYSFS_FW.search(line):
            self.firmware[m["dev"]] = m["value"]
            _attribute(result, m["dev"], "", "fw_ver", m["value"], no, "sysfs", host)
        elif m := _SYSFS.search(line):
            row = _port(result, self.ports, "sysfs", m["dev"], int(m["port"]), no, host)
            attr, value = m["attr"], m["value"].strip()
            self.extras.setdefault(id(row), {})[m["path"] + attr] = value
            section = m["path"].rstrip("/").replace("/", " / ")
            _attribute(result, f"{m['dev']}/{m['port']}", section, attr, value, no, "sysfs", host)
            if attr in _SYSFS_KNOWN and (m["path"] in ("", "counters/")):
                _set(result, row, attr, value, no, raw)
        elif m := _SYSFS_DEV.search(line):
            self.devices.setdefault(m["dev"], {})[m["attr"]] = m["value"].strip()
            _attribute(result, m["dev"], "", m["attr"], m["value"].strip(), no, "sysfs", host)
        elif m := _LOOP.match(line):
            row = _port(result, self.ports, "sysfs", m["dev"], 1, no, host)
            _set(result, row, "link_layer", m["ll"], no, raw)
            self.extras.setdefault(id(row), {})["link_layer"] = m["ll"]
            _attribute(result, f"{m['dev']}/1", "", "link_layer", m["ll"], no, "sysfs", host)
            if m["state"]:
                _set(result, row, "state", m["state"], no, raw)
                self.extras[id(row)]["state"] = m["state"]
                _attribute(result, f"{m['dev']}/1", "", "state", m["state"], no, "sysfs", host)
        else:
            return False
        return True

    def _bare(self, no: int, raw: str, line: str) -> None:
        """A line without a key: a flag on its own line (BAD_PKEY_CNTR, NO SUPPORT) or a note continuing the
        last key, else an issue when it looks like data."""
        if self.last is not None and self.device is not None and not re.search(r"\d", line):
            store, key = self.last
            store[key] = f"{store[key]} | {line}" if store.get(key) else line
            if attributes := len(self.result.columns["port_attribute"]):
                _attributes(self.result).set_value(attributes - 1, store[key])
        elif _LOOKS_LIKE_DATA.search(line):
            self.result.issue(no, raw, "not a sysfs, ibstat or ibv_devinfo line")

    def _key(self, no: int, raw: str, line: str, key: str, value: str, host: str | None) -> None:
        """A key of an ibstat or ibv_devinfo block: a new device or port, firmware, a port's column."""
        result, device = self.result, self.device
        if key == "hca_id":
            self.device, self.current, self.source, self.last = value, None, "ibv_devinfo", None
            return
        if device is None:
            if _LOOKS_LIKE_DATA.search(line):
                result.issue(no, raw, f"{key} outside a device block")
            return
        entity = device if self.current is None else f"{device}/{self.current['port']}"
        if key in ("fw_ver", "Firmware version"):
            self.firmware[device] = value
            _attribute(result, device, "", key, value, no, self.source, host)
            return
        if key == "port" and self.source == "ibv_devinfo" and value.isdigit():
            self.current = _port(result, self.ports, self.source, device, int(value), no, host)
            self.last = None
            _attribute(result, f"{device}/{value}", "", key, value, no, self.source, host)
            return
        attr = (_IBSTAT if self.source == "ibstat" else _DEVINFO).get(key)
        if self.current is None:
            if attr is not None or key in _DEVINFO_RATE:
                result.issue(no, raw, f"{key} outside a port block")
            store = self.devices.setdefault(device, {})
        else:
            store = self.extras.setdefault(id(self.current), {})
            if attr or key in _DEVINFO_RATE:
                _set(result, self.current, attr or key, value, no, raw)
        if key != "Device ports":
            store[key] = value
            self.last = (store, key)
        _attribute(result, entity, "", key, value, no, self.source, host)

    def finish(self) -> ParseResult:
        """Each port row completed from its device: firmware, rate, provider, the keys without a column."""
        for row in self.result.rows("efa_port"):
            row["fw_ver"] = self.firmware.get(row["device"]) or None
            width, speed = row.pop("active_width", None), row.pop("active_speed", None)
            if row["rate_gbps"] is None and width and speed:
                row["rate_gbps"] = leading_number(width) * speed  # "4X (2)" x "25.0 Gbps (32)"
            dev = self.devices.get(row["device"], {})
            row["provider"] = _provider(row["device"], dev.get("vendor_id"))
            row["is_efa"] = row["provider"] == "efa"
            extra = {**dev, **self.extras.get(id(row), {})}
            row["extra"] = json.dumps(extra) if extra else None
        return self.result


def _attribute(
    result: ParseResult,
    entity: str,
    section: str,
    key: str,
    value: str,
    no: int,
    source: str,
    host: str | None,
) -> None:
    _attributes(result).add(entity, section, key, value, no, source, host)


def _result() -> ParseResult:
    result = ParseResult(tables={"efa_port": []})
    result.column_table("port_attribute", LongTable(("source", "host")))
    return result


def _attributes(result: ParseResult) -> LongTable:
    table = result.columns["port_attribute"]
    assert isinstance(table, LongTable)
    return table


def _link_layer_file(lines: list[str], filename: str | None) -> ParseResult | None:
    """The content of one sysfs ``link_layer`` file (``Ethernet``, ``InfiniBand``, ``Unspecified``): one
    port row, its device and port from the file's path when the name carries it, else unknown."""
    words = [line.strip() for line in lines if line.strip()]
    if len(words) != 1 or words[0].lower() not in _LINK_LAYERS:
        return None
    no = next(i + 1 for i, line in enumerate(lines) if line.strip())
    m = _SYSFS_PATH.search(filename or "")
    device, port = (m["dev"], int(m["port"])) if m else (None, None)
    result = _result()
    row: dict[str, Any] = {c.name: None for c in SCHEMA["efa_port"]}
    row.update(line=no, device=device, port=port, link_layer=words[0], source="sysfs")
    if device is not None:
        row["provider"] = _provider(device, None)
        row["is_efa"] = row["provider"] == "efa"
    else:
        result.issue(no, words[0], "a link_layer file without its path: device and port unknown")
    row["extra"] = json.dumps({"link_layer": words[0]})
    result.add("efa_port", row)
    _attribute(result, f"{device}/{port}" if device else "", "", "link_layer", words[0], no, "sysfs", None)
    return result


def _provider(device: str, vendor_id: str | None) -> str:
    """Driver family of an RDMA device: efa, rxe, mlx5, ...; the vendor id wins over a renamed device."""
    vendor = _VENDORS.get((vendor_id or "").lower())
    name = re.match(r"[A-Za-z]+(?:_re)?", device)
    family = name.group(0).lower() if name else device
    if re.fullmatch(r"efa_?\d+", device) or (family == "rdmap" and vendor in (None, "efa")):
        return "efa"
    if vendor == "efa":
        return "efa"
    if vendor == "mlx" and not family.startswith("mlx"):
        return "mlx"
    if family.startswith("mlx") and (m := re.match(r"mlx\d", device)):
        return m.group(0)
    return family


def _port(
    result: ParseResult,
    ports: dict[tuple[str, str, int], dict[str, Any]],
    source: str,
    dev: str,
    port: int,
    no: int,
    host: str | None = None,
) -> dict[str, Any]:
    key = (source, dev, port)
    if key not in ports:
        ports[key] = {c.name: None for c in SCHEMA["efa_port"]}
        ports[key].update(line=no, device=dev, port=port, source=source, host=host)
        result.add("efa_port", ports[key])
    return ports[key]


def _set(result: ParseResult, row: dict[str, Any], attr: str, value: str, no: int, raw: str) -> None:
    # "4: ACTIVE" (sysfs), "PORT_ACTIVE (4)" (ibv_devinfo), "Active" (ibstat) -> the word
    word = re.sub(r"^\d+:\s*|\s*\(\d+\)$", "", value.strip()).strip()
    if attr == "state":
        state = re.sub(r"^PORT_", "", word.upper().replace(" ", "_"))
        row["state"] = "INIT" if state == "INITIALIZING" else state or None
    elif attr == "phys_state":
        key = re.sub(r"[^a-z]", "", word.lower())
        row["phys_state"] = _PHYS.get(key, word.upper().replace(" ", "_")) or None
    elif attr == "link_layer":
        row["link_layer"] = word or None
    elif attr == "active_width":
        row["active_width"] = word if re.match(r"\d+X", word) else None
    else:
        number = leading_number(value)
        if number is None:
            result.issue(no, raw, f"unreadable {attr}")
        elif attr == "rate":
            row["rate_gbps"] = number
        elif attr == "port_rcv_errors":
            row["rcv_errors"] = int(number)
        elif attr == "port_xmit_discards":
            row["xmit_discards"] = int(number)
        else:
            row["active_speed"] = number
