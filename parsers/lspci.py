"""PCI devices from ``lspci``: which NVIDIA GPUs (and NVSwitches) the PCI bus holds, whatever the driver says.

Command the collector runs::

    lspci -D -nnk

Sample (lines of tests/fixtures/lspci/stackhpc-appliance-mig-h100-sxm5-nn-root-prompt.txt)::

    [root@io-io-gpu-02 ~]# lspci -nn | grep -i nvidia
    06:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
    0c:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)

One row per device line, in any of lspci's layouts: named (``lspci``: ``07:00.0 Bridge: NVIDIA
Corporation Device 22a3 (rev a1)``), named with numbers (``-nn``: ``3D controller [0302]: ... [10de:2330]``),
numbers alone (``-n``: ``1b:00.0 0302: 10de:2330 (rev a1)``), with or without the domain (``-D``), and
``grep`` excerpts of them.  The indented lines ``-k`` and ``-v`` print under a device go to it:
``Kernel driver in use`` fills ``driver``, ``Kernel modules`` ``modules``, ``Subsystem`` ``subsystem``;
``-vv``'s ``LnkCap:`` (the link's maximum: ``Port #0, Speed 32GT/s, Width x16, ...``) and ``LnkSta:`` (the
link as trained: ``Speed 16GT/s (downgraded), Width x8 (downgraded)``) fill the link columns; other
indented lines are skipped, and so are ``-x``/``-xxxx``'s hex dump lines (``00: de 10 30 23 ...``: the
nvidia-bug-report's ``lspci -nnDvvvxxxx`` section holds one per 16 bytes of each device's
configuration space).  A GPU is an NVIDIA (vendor 10de, or a description that starts with
"NVIDIA Corporation") display controller: class 0300 "VGA compatible controller" or 0302 "3D
controller"; an NVSwitch is an NVIDIA class 0680 "Bridge" (HGX A100 and H100 boards list theirs; on
HGX B200 they are no PCI devices).  NVIDIA audio functions (0403) and USB controllers are neither.
``(rev ff)``: lspci read all ones from the device, which no longer answers on the bus.  Prompt and
``lspci`` command lines are skipped; another line holding a digit is a ParseIssue; ``lspci:`` and
``pcilib:`` warnings are skipped.  A capture with no device line is a ParseError (a shell's "command
not found" is a CollectorError).

Schema
------
``pci_device`` (one row per device line):

- ``line`` int — line of the device; ``address`` str — ``dddd:bb:dd.f`` (domain 0000 when not printed)
- ``class_name`` str — as printed (``3D controller``), null for ``-n``; ``class_code`` str — 4 hex
  digits (``0302``) when printed
- ``description`` str — vendor and device as printed, the ``[vvvv:dddd]`` ids and ``(rev ..)`` taken off
- ``vendor_id``, ``device_id`` str — 4 hex digits when printed (``-n``/``-nn``), else null
- ``rev`` str — revision as printed (``a1``; ``ff``: the device does not answer)
- ``nvidia`` bool — vendor 10de, or a description that starts with "NVIDIA Corporation"
- ``gpu`` bool — an NVIDIA display controller (class 0300/0302 or its name); ``nvswitch`` bool — an
  NVIDIA class 0680 "Bridge"
- ``driver`` str — ``Kernel driver in use`` (``nvidia``, ``vfio-pci``), null when not printed;
  ``modules`` str, ``subsystem`` str — as printed, when printed
- ``link_speed_gts``, ``link_width`` float GT/s, int lanes — ``LnkSta``: the link as trained (null when
  not printed, or ``Speed unknown``); ``link_speed_max_gts``, ``link_width_max`` — ``LnkCap``: the
  device's own maximum; ``link_line`` int — the line of ``LnkSta``
- ``host`` str — launcher tag of the line (pdsh host, srun rank, pod), else null

Examples
--------
>>> [(r["address"], r["class_code"], r["device_id"], r["gpu"]) for r in parse(SAMPLE).rows("pci_device")]
[('0000:06:00.0', '0302', '2330', True), ('0000:0c:00.0', '0302', '2330', True)]
>>> r = parse("0000:07:00.0 Bridge: NVIDIA Corporation Device 22a3 (rev ff)").rows("pci_device")[0]
>>> r["nvswitch"], r["gpu"], r["rev"], r["description"]
(True, False, 'ff', 'NVIDIA Corporation Device 22a3')
>>> v = parse("0000:8a:00.0 3D controller [0302]: NVIDIA Corporation GH100 [10de:2330]\\n"
...           "\\t\\tLnkCap:\\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\\n"
...           "\\t\\tLnkSta:\\tSpeed 16GT/s (downgraded), Width x8 (downgraded)\\n"
...           "00: de 10 30 23 07 04 10 00 a1 00 02 03 00 00 00 00\\n").rows("pci_device")[0]
>>> v["link_speed_gts"], v["link_width"], v["link_speed_max_gts"], v["link_width_max"], v["link_line"]
(16.0, 8, 32.0, 16, 3)
"""

from __future__ import annotations

import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines, pci_address

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="lspci",
    title="PCI devices (lspci): GPUs and NVSwitches on the bus",
    commands=(
        "lspci -D -nnk",
        "lspci -nn",
        "lspci -n",
        "lspci | grep -i nvidia",
        "lspci -nnk | grep -A3 ...",
    ),
    tables=("pci_device",),
    versions_seen=(
        "pciutils lspci (named)",
        "lspci -nn",
        "lspci -nnk (driver lines)",
        "HGX A100 / H100 / B200 (NVIDIA Fabric Manager user guide)",
    ),
)

SCHEMA = {
    "pci_device": (
        Column("line", "int", "line of the device"),
        Column("address", "str", "PCI address dddd:bb:dd.f"),
        Column("class_name", "str", "device class as printed"),
        Column("class_code", "str", "device class, 4 hex digits"),
        Column("description", "str", "vendor and device as printed"),
        Column("vendor_id", "str", "vendor id, 4 hex digits"),
        Column("device_id", "str", "device id, 4 hex digits"),
        Column("rev", "str", "revision as printed (ff: the device does not answer)"),
        Column("nvidia", "bool", "an NVIDIA device"),
        Column("gpu", "bool", "an NVIDIA display controller (class 0300/0302)"),
        Column("nvswitch", "bool", "an NVIDIA bridge (class 0680): an NVSwitch"),
        Column("driver", "str", "kernel driver in use"),
        Column("modules", "str", "kernel modules as printed"),
        Column("subsystem", "str", "subsystem as printed"),
        Column("link_speed_gts", "float", "LnkSta speed, GT/s: the link as trained"),
        Column("link_width", "int", "LnkSta width, lanes"),
        Column("link_speed_max_gts", "float", "LnkCap speed, GT/s: the device's maximum"),
        Column("link_width_max", "int", "LnkCap width, lanes: the device's maximum"),
        Column("link_line", "int", "line of LnkSta"),
        Column("host", "str", "launcher tag of the line"),
    )
}

_ADDR = r"(?P<addr>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
_NUMERIC = re.compile(
    _ADDR + r"\s+(?P<cls>[0-9a-fA-F]{4}):\s+(?P<ven>[0-9a-fA-F]{4}):(?P<dev>[0-9a-fA-F]{4})\b"
)
_NAMED = re.compile(_ADDR + r"\s+(?P<name>[^:\[]+?)(?:\s+\[(?P<cls>[0-9a-fA-F]{4})\])?:\s+(?P<desc>.*)$")
_IDS = re.compile(r"\s*\[(?P<ven>[0-9a-fA-F]{4}):(?P<dev>[0-9a-fA-F]{4})\]")
_REV = re.compile(r"\s*\(rev (?P<rev>[0-9a-fA-F]{2})\)")
_PROG_IF = re.compile(r"\s*\(prog-if [^)]*\)")
_SUB = re.compile(r"^(?P<key>Subsystem|Kernel driver in use|Kernel modules):\s*(?P<value>.*)$")
_COMMAND = re.compile(r"^\s*(?:[#$]\s*)?(?:sudo\s+)?(?:/\S*/)?lspci\b")
_WARNING = re.compile(r"^(?:lspci|pcilib|setpci):\s")
_NOT_FOUND = re.compile(r"lspci: (?:command )?not found|No such file or directory.*lspci", re.I)
#: ``-vv``: ``LnkCap:\tPort #0, Speed 32GT/s, Width x16, ...``, ``LnkSta:\tSpeed 16GT/s (downgraded), Width x8``
_LINK = re.compile(r"^Lnk(?P<which>Cap|Sta):\s+(?P<rest>.*)$")
_SPEED = re.compile(r"\bSpeed (?P<gts>\d+(?:\.\d+)?)GT/s")
_WIDTH = re.compile(r"\bWidth x(?P<lanes>\d+)")
#: ``-x``..``-xxxx``: one line per 16 bytes of configuration space
_HEX_DUMP = re.compile(r"^[0-9a-f]{2,3}: (?:[0-9a-f]{2} ){15}[0-9a-f]{2}\s*$")
_GPU_CLASSES = {"0300", "0302"}
_GPU_NAMES = {"vga compatible controller", "3d controller"}


def detect(text: str) -> int:
    """Confidence that text is lspci output: most lines that are not blank are device lines."""
    lines = [line for line in clean_lines(text[:20000]).lines if line.strip() and not _COMMAND.match(line)]
    devices = sum(1 for line in lines if _NUMERIC.match(line) or _NAMED.match(line))
    if not devices:
        return 0
    indented = sum(1 for line in lines if line[:1] in (" ", "\t"))
    return 75 if (devices + indented) * 10 >= len(lines) * 9 else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    result = ParseResult(tables={"pci_device": []})
    raw = text.splitlines()
    current: dict[str, Any] | None = None
    for no, line, host in clean_lines(text).numbered():
        if line[:1] in (" ", "\t"):  # a -k / -v line of the device above
            sub = _SUB.match(line.strip())
            if current is not None and sub is not None:
                column = {"Subsystem": "subsystem", "Kernel driver in use": "driver"}.get(
                    sub["key"], "modules"
                )
                current[column] = sub["value"].strip()
            elif current is not None and (link := _LINK.match(line.strip())):
                _link(current, link["which"], link["rest"], no)
            continue
        if _HEX_DUMP.match(line) or _HEX_DUMP.match(
            raw[no - 1].strip()
        ):  # a "00: " offset looks like a host tag
            continue
        if (row := _device(line, no, host)) is not None:
            result.add("pci_device", row)
            current = row
        elif _COMMAND.match(line) or _WARNING.match(line):
            current = None
        elif re.search(r"\d", line):
            result.issue(no, raw[no - 1], "not an lspci device line")
    if not result.rows("pci_device"):
        if _NOT_FOUND.search(text):
            raise CollectorError(text.strip().splitlines()[0][:300])
        first = next((line.strip()[:80] for line in raw if line.strip()), "")
        raise ParseError(f"no lspci device line ('bb:dd.f class: vendor device'); first line: {first!r}")
    return result


def _device(line: str, no: int, host: str | None) -> dict[str, Any] | None:
    """The row of one device line, or None when the line is none."""
    row: dict[str, Any] = {c.name: None for c in SCHEMA["pci_device"]}
    if m := _NUMERIC.match(line):
        row.update(class_code=m["cls"].lower(), vendor_id=m["ven"].lower(), device_id=m["dev"].lower())
        rest = line[m.end() :]
    elif m := _NAMED.match(line):
        desc = m["desc"]
        if ids := _IDS.search(desc):
            row.update(vendor_id=ids["ven"].lower(), device_id=ids["dev"].lower())
            desc = desc[: ids.start()] + desc[ids.end() :]
        rest = desc
        row.update(class_name=m["name"].strip(), class_code=m["cls"].lower() if m["cls"] else None)
    else:
        return None
    if rev := _REV.search(rest):
        row["rev"] = rev["rev"].lower()
        rest = rest[: rev.start()] + rest[rev.end() :]
    if row["class_name"] is not None:
        row["description"] = _PROG_IF.sub("", rest).strip() or None
    row.update(line=no, address=pci_address(m["addr"]), host=host)
    nvidia = row["vendor_id"] == "10de" or (row["description"] or "").startswith("NVIDIA Corporation")
    name = (row["class_name"] or "").lower()
    code = row["class_code"]
    row["nvidia"] = nvidia
    row["gpu"] = nvidia and (code in _GPU_CLASSES if code else name in _GPU_NAMES)
    row["nvswitch"] = nvidia and (code == "0680" if code else name == "bridge")
    return row


def _link(row: dict[str, Any], which: str, rest: str, no: int) -> None:
    """A device's ``LnkCap`` (its maximum) or ``LnkSta`` (as trained) line into its row; the first of
    each counts (a device has one PCI Express capability)."""
    speed_key, width_key = (
        ("link_speed_gts", "link_width") if which == "Sta" else ("link_speed_max_gts", "link_width_max")
    )
    if (which == "Sta" and row["link_line"] is not None) or (which == "Cap" and row[width_key] is not None):
        return
    speed, width = _SPEED.search(rest), _WIDTH.search(rest)
    row[speed_key] = float(speed["gts"]) if speed else None
    row[width_key] = int(width["lanes"]) if width else None
    if which == "Sta":
        row["link_line"] = no
