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

Device names: ``efa_N`` (old kernels) or ``rdmapXsY`` (current).  ibstat indentation may be
collapsed by a paste; ``ibv_devinfo`` is TAB-indented.  Lines that belong to none of the three formats
(a prompt, dmesg lines) are skipped.  ``No IB devices found`` raises CollectorError.

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

Examples
--------
>>> rows = parse(SAMPLE).rows("efa_port")
>>> [(r["device"], r["port"], r["state"], r["phys_state"], r["rate_gbps"], r["source"]) for r in rows]
[('rdmap79s0', 1, 'ACTIVE', 'LINK_UP', 100.0, 'sysfs'), ('efa_0', 1, 'ACTIVE', 'LINK_UP', 100.0, 'ibstat')]
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import key_value, leading_number, strip_prefix

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="efa-ports",
    title="EFA / RDMA port state (sysfs, ibstat, ibv_devinfo)",
    commands=("grep -H . /sys/class/infiniband/*/ports/*/state ...", "ibstat", "ibv_devinfo"),
    tables=("efa_port",),
    versions_seen=("rdma-core 25 (efa_N)", "current kernels (rdmapXsY)"),
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
    )
}

_SYSFS = re.compile(
    r"/sys/class/infiniband/(?P<dev>[^/\s]+)/ports/(?P<port>\d+)/(?:counters/)?"
    r"(?P<attr>state|phys_state|rate|link_layer|port_rcv_errors|port_xmit_discards)\s*:\s*(?P<value>.*)"
)
_SYSFS_FW = re.compile(r"/sys/class/infiniband/(?P<dev>[^/\s]+)/fw_ver\s*:\s*(?P<value>\S*)")
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
    """Confidence that text is EFA port state."""
    if re.search(r"/sys/class/infiniband/[^/\s]+/ports/\d+/(?:state|phys_state|rate)", text):
        return 85
    if re.search(r"^\W*CA '[^']+'", text, re.MULTILINE) and re.search(r"Port \d+:", text):
        return 80
    if re.search(r"^\W*hca_id:", text, re.MULTILINE) and re.search(r"\bport:\s+\d+", text):
        return 80
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult(tables={"efa_port": []})
    ports: dict[tuple[str, str, int], dict[str, Any]] = {}
    device: str | None = None
    current: dict[str, Any] | None = None
    source = ""
    firmware: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw.strip()).strip()
        if m := _SYSFS_FW.search(line):
            firmware[m["dev"]] = m["value"]
            continue
        if m := _SYSFS.search(line):
            row = _port(result, ports, "sysfs", m["dev"], int(m["port"]), no)
            _set(result, row, m["attr"], m["value"], no, raw)
            continue
        if m := re.match(r"CA '([^']+)'", line):
            device, current, source = m.group(1), None, "ibstat"
            continue
        if m := re.match(r"Port (\d+):$", line):
            if device is None or source != "ibstat":
                result.issue(no, raw, "port outside a CA block")
            else:
                current = _port(result, ports, source, device, int(m.group(1)), no)
            continue
        kv = key_value(line)
        if kv is None:
            continue
        key, value = kv
        if key in ("fw_ver", "Firmware version") and device:
            firmware[device] = value
            continue
        if key == "hca_id":
            device, current, source = value, None, "ibv_devinfo"
        elif key == "port" and source == "ibv_devinfo" and device and value.isdigit():
            current = _port(result, ports, source, device, int(value), no)
        elif (attr := (_IBSTAT if source == "ibstat" else _DEVINFO).get(key)) or key in _DEVINFO_RATE:
            if current is None:
                result.issue(no, raw, f"{key} outside a port block")
            else:
                _set(result, current, attr or key, value, no, raw)
    rows = result.rows("efa_port")
    if not rows:
        if re.search(r"No IB devices found|ibpanic|cannot access '?/sys/class/infiniband", text):
            raise CollectorError(text.strip().splitlines()[0][:300])
        raise ParseError("no sysfs port lines, ibstat CA block or ibv_devinfo hca_id found")
    for row in rows:
        row["fw_ver"] = firmware.get(row["device"]) or None
        width, speed = row.pop("active_width", None), row.pop("active_speed", None)
        if row["rate_gbps"] is None and width and speed:
            row["rate_gbps"] = leading_number(width) * speed  # "4X (2)" x "25.0 Gbps (32)"
    return result


def _port(
    result: ParseResult,
    ports: dict[tuple[str, str, int], dict[str, Any]],
    source: str,
    dev: str,
    port: int,
    no: int,
) -> dict[str, Any]:
    key = (source, dev, port)
    if key not in ports:
        ports[key] = {c.name: None for c in SCHEMA["efa_port"]}
        ports[key].update(line=no, device=dev, port=port, source=source)
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
