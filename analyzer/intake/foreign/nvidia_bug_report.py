"""NVIDIA's ``nvidia-bug-report.log`` / ``.log.gz`` (written by ``nvidia-bug-report.sh``) as a node bundle.

The script writes one log, section by section: each section is piped through ``gzip -c >>`` onto the
same file, so the ``.gz`` is many gzip members one after another; a run that was killed (collectors
wrap it in ``timeout``) ends in a cut member.  Every member that decodes is kept, a cut last member is
recorded as a problem, and decoding stops at the safe reader's caps (:class:`Limits`: decoded size,
expansion ratio).

Sections are separated by a line of 44 underscores.  The first holds the header ("Start of NVIDIA bug
report log file", ``Date:``, ``uname:``); file sections start ``*** /path`` (then ``*** ls: ...``), or the
bare path in scripts before about 2011 (``/proc/driver/nvidia/version``); command sections start with
the command as run (``dmesg:``, ``/usr/bin/nvidia-smi --query``).  The nvidia-smi section holds several
outputs back to back, each starting with the command line (``--query``, ``--query --unit``,
``nvlink --status``...; ``-q`` and ``-q -u`` in older scripts).  When nvidia-smi fails, its answer
("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", "Failed to initialize
NVML: Driver/library version mismatch") is that output: it is kept as the ``nvidia-smi-q`` output, so
the catalogue of failure answers finds it there and the node never reads as healthy.

The report is written out as a node bundle (``meta.env``, ``manifest.tsv``, ``cmd/<kind>.txt``) so that
discovery, every parser and every rule read it unchanged.  Kinds the report cannot carry (EFA, fi_info,
file systems, I/O) get manifest rows with no file and the note ``not carried by nvidia-bug-report``.

The kernel-log scan ("Scanning kernel log files for NVIDIA kernel messages:", "... for NVRM messages:"
in older scripts) holds the NVRM lines of
``/var/log/messages``, ``kern.log``... (``  <path>:``) and of the journal per boot (``  journalctl -b -0:``,
``-1``, ``-2``).  An earlier boot's journal part is one more ``dmesg`` output (``cmd/dmesg-boot-1.txt``,
command ``journalctl -b -1 | grep ...``: the dmesg parser reads the boot from it).  The current boot's part
and the log files repeat the ``dmesg:`` section, so they are used only when it is missing: the journal's
``-b -0`` part, else a log file's lines since the driver's last load.  The versions table of newer scripts
(``Component | Details`` after the header) gives the driver, CUDA, Fabric Manager and kernel versions;
their "Summary of Skipped Sections" / "Summary of Errors" tables (and the ``Skipping: ...`` sections) say
what the script did not collect: a skipped nvidia-smi makes ``nvidia-smi-q`` absent with the script's
reason, the other skips one problem line.  A ``--safe-mode`` run (``command line flags:``) has no
nvidia-smi output; its problem says so.
"""

from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import BinaryIO

import analyzer.intake.foreign.boots as boots
from analyzer.intake.foreign.layout import Absent, Converted, NodeLayout, Output, write_node
from analyzer.intake.safe_read import Limits, Refusal, gunzip_members

SOURCE = "nvidia-bug-report"
#: the names such reports go by (a file named so but holding something else is refused with that reason)
NAMED = re.compile(r"nvidia-bug-report.*\.log(\.gz)*$", re.I)
SEPARATOR = "_" * 44
START = "Start of NVIDIA bug report log file"
GZIP_MAGIC = b"\x1f\x8b"
NOT_CARRIED_NOTE = "not carried by nvidia-bug-report"
#: kinds our bundles carry that the script never collects (shown as not examined, never as a pass)
NOT_CARRIED = (
    "fi-info",
    "efa-ports",
    "lfs-df",
    "df",
    "iostat",
    "mounts",
    "shm",
    "cpu-governor",
    "uptime",
    "nvidia-smi-csv",
    "nvidia-smi-topo",
    "placement",
)
_SNIFF_BYTES = 64 * 1024


@dataclass
class Block:
    """One section of the log: its first non-blank line (the command or ``*** /path``) and its text."""

    header: str
    text: str


def looks_like(head: bytes) -> bool:
    """The first decoded bytes of a report: the underscore line, then the script's opening sentence.

    >>> looks_like(b"_" * 44 + b"\\n\\nStart of NVIDIA bug report log file.  Please include")
    True
    >>> looks_like(b"Start of NVIDIA bug report log file"), looks_like(b"\\x1f\\x8b")
    (False, False)
    """
    text = head[:4096].decode("utf-8", "replace").lstrip("\ufeff \r\n")
    return text.startswith(SEPARATOR) and START in text[:1024]


def detect(path: Path) -> bool:
    """Whether a file is a bug report log, plain or gzipped, by its first bytes."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(_SNIFF_BYTES)
    except OSError:
        return False
    if raw.startswith(GZIP_MAGIC):
        try:
            raw = zlib.decompressobj(wbits=31).decompress(raw, 8192)
        except zlib.error:
            return False
    return looks_like(raw)


def decode(path: Path, limits: Limits, unread: list[Refusal] | None = None) -> tuple[str, list[str]]:
    """The report's text and the problems met reading it (a cut member, a cap reached); with ``unread``,
    the gzip member a cap stopped decoding in (``gzip member N``) is added to it.
    Raises OSError when the file cannot be read, ValueError when nothing of it decodes."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        return decode_stream(fh, size, limits, unread)


def decode_bytes(data: bytes, limits: Limits, unread: list[Refusal] | None = None) -> tuple[str, list[str]]:
    """:func:`decode` of a report held in memory (a member of an archive)."""
    return decode_stream(io.BytesIO(data), len(data), limits, unread)


def decode_stream(
    fh: BinaryIO, size: int, limits: Limits, unread: list[Refusal] | None = None
) -> tuple[str, list[str]]:
    """:func:`decode` of an open binary stream of ``size`` bytes, read from its start."""
    first = fh.read(2)
    fh.seek(0)
    if first != GZIP_MAGIC:
        if size > limits.max_file_bytes:
            raise ValueError(f"{size} bytes, over the {limits.max_file_bytes}-byte cap per file")
        return fh.read().decode("utf-8", "replace"), []
    data, problems = gunzip_members(fh, size, limits, unread)
    return data.decode("utf-8", "replace"), problems


def split_blocks(text: str) -> list[Block]:
    """The sections of the log, in order (blank sections dropped).

    >>> [b.header for b in split_blocks("_" * 44 + "\\n\\ndmesg:\\n\\n[ 1.0] x\\n" + "_" * 44 + "\\n*** /etc/issue\\n")]
    ['dmesg:', '*** /etc/issue']
    """
    blocks: list[Block] = []
    lines: list[str] = []

    def flush() -> None:
        body = "".join(lines)
        header = next((ln.strip() for ln in lines if ln.strip()), "")
        if header:
            blocks.append(Block(header, body))
        lines.clear()

    for line in text.splitlines(keepends=True):
        if line.rstrip("\r\n ") == SEPARATOR:
            flush()
        else:
            lines.append(line)
    flush()
    return blocks


_UNAME = re.compile(r"^uname:\s*\S+\s+(\S+)", re.M)
_DATE = re.compile(r"^Date:\s*(.+?)\s*$", re.M)
_SMI = re.compile(r"^(?:\S*/)?nvidia-smi(?P<args>(?: +\S+)*)\s*$")


def header_facts(block: Block) -> dict[str, str]:
    """hostname (from the ``uname:`` line), report_date as written, and the collection time: collected_at
    (UTC) where the ``Date:`` line's zone says its offset, else collected_local (the local time as
    written) and collected_zone (the zone as printed, or '' where it prints none): the zone is unknown.

    >>> header_facts(Block("x", "Date: Thu Oct 27 08:50:11 PM -03 2022\\nuname: Linux nomade 6.0.1 #1 SMP"))
    {'hostname': 'nomade', 'report_date': 'Thu Oct 27 08:50:11 PM -03 2022', 'collected_at': '2022-10-27T23:50:11Z'}
    >>> header_facts(Block("x", "Date: 2019年 11月 16日 星期六 13:31:02 CST"))
    {'report_date': '2019年 11月 16日 星期六 13:31:02 CST', 'collected_local': '2019-11-16T13:31:02', 'collected_zone': 'CST'}
    """
    facts: dict[str, str] = {}
    if (m := _UNAME.search(block.text)) and re.search(r"[A-Za-z0-9]", m.group(1)):
        facts["hostname"] = m.group(1)  # a name masked before posting ('****-*****') is no name
    if m := _DATE.search(block.text):
        facts["report_date"] = m.group(1)
        read = read_date(m.group(1))
        if read is not None:
            local, zone, offset = read
            if offset is not None:
                facts["collected_at"] = (local - offset).strftime("%Y-%m-%dT%H:%M:%SZ")
            else:
                facts["collected_local"] = local.strftime("%Y-%m-%dT%H:%M:%S")
                facts["collected_zone"] = zone
    return facts


def zone_problem(facts: dict[str, str]) -> str | None:
    """What a report says of a collection time whose zone is unknown (None when it is known or absent)."""
    if "collected_local" not in facts:
        return None
    zone = facts.get("collected_zone", "")
    why = (
        f"its zone {zone!r} does not say one offset (it stands for several zones, or none hptriage knows)"
        if zone
        else "it prints no zone"
    )
    return (
        f"collection time {facts['collected_local']} (the Date: line {facts.get('report_date', '')!r}) is "
        f"local time and {why}: the zone is unknown, so the node's collection time (UTC) is left unknown"
    )


#: zone names ``date`` prints that stand for one offset only (CST, IST, BST stand for several: not read)
_ZONES = {"EST": -5, "EDT": -4, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7, "CET": 1, "CEST": 2, "JST": 9,
          "MEZ": 1, "MESZ": 2, "KST": 9, "HKT": 8, "SGT": 8, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
          "EET": 2, "EEST": 3, "WET": 0, "WEST": 1, "PKT": 5, "MSK": 3}  # fmt: skip
#: month names ``date`` prints in the C, German and French locales (``Okt``, ``déc.``), lower case, and
#: a number followed by 月 (Chinese, Japanese)
_MONTH_NAMES = {
    **{m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct",
                                   "nov", "dec"), 1)},
    "mär": 3, "mrz": 3, "mai": 5, "okt": 10, "dez": 12,
    "janv": 1, "févr": 2, "fév": 2, "mars": 3, "avr": 4, "juin": 6, "juil": 7, "août": 8, "sept": 9, "déc": 12,
}  # fmt: skip


def read_date(text: str) -> tuple[datetime, str, timedelta | None] | None:
    """``date``'s output as (local time, zone as printed, its offset or None when the zone does not say
    one), in the C locale and the German, French and Chinese layouts of the real reports (the clock,
    the year, a month name or ``N月``, the day, the zone); None when a part is missing.

    >>> read_date("Tue Oct 27 14:31:54 EDT 2009")[2], read_date("Thu Jul 14 14:11:55 IST 2011")[1:]
    (datetime.timedelta(days=-1, seconds=72000), ('IST', None))
    >>> read_date("Fr 10. Sep 04:31:01 CEST 2010")[0].isoformat(), read_date("Sep 10 2010") is None
    ('2010-09-10T04:31:01', True)
    """
    parts = text.split()
    clock = next((i for i, p in enumerate(parts) if re.fullmatch(r"\d{1,2}:\d\d:\d\d", p)), None)
    if clock is None:
        return None
    hh, mm, ss = (int(x) for x in parts[clock].split(":"))
    rest = parts[:clock] + parts[clock + 1 :]
    if clock + 1 < len(parts) and parts[clock + 1].upper() in ("AM", "PM"):
        hh = hh % 12 + (12 if parts[clock + 1].upper() == "PM" else 0)
        rest = parts[:clock] + parts[clock + 2 :]
    year = month = day = None
    zone = ""
    for token in rest:
        bare = token.rstrip(".,")
        if m := re.fullmatch(r"(\d{4})年?", bare):
            year = int(m.group(1))
        elif m := re.fullmatch(r"(\d{1,2})月", bare):
            month = int(m.group(1))
        elif m := re.fullmatch(r"(\d{1,2})日?", bare):
            day = int(m.group(1))
        elif bare.lower() in _MONTH_NAMES:
            month = _MONTH_NAMES[bare.lower()]
        elif re.fullmatch(r"[+-]\d\d(?:\d\d)?|[A-Z]{2,5}", bare) and bare not in ("AM", "PM"):
            zone = bare
    if year is None or month is None or day is None:
        return None
    try:
        local = datetime(year, month, day, hh, mm, ss)
    except ValueError:
        return None
    offset: timedelta | None = None
    if zone in ("UTC", "GMT"):
        offset = timedelta(0)
    elif zone in _ZONES:
        offset = timedelta(hours=_ZONES[zone])
    elif m := re.fullmatch(r"([+-])(\d\d)(\d\d)?", zone):
        sign = -1 if m.group(1) == "-" else 1
        offset = sign * timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
    return local, zone, offset


def _parse_date(text: str) -> datetime | None:
    """:func:`read_date` as a UTC time, None where the zone does not say its offset.

    >>> _parse_date("Tue Oct 27 14:31:54 EDT 2009").isoformat(), _parse_date("Thu Jul 14 14:11:55 IST 2011")
    ('2009-10-27T18:31:54+00:00', None)
    """
    read = read_date(text)
    if read is None or read[2] is None:
        return None
    return (read[0] - read[2]).replace(tzinfo=timezone.utc)


def smi_outputs(block: Block) -> list[tuple[str, str]]:
    """The outputs held back to back in the nvidia-smi section: (command line, output) each."""
    outs: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines(keepends=True):
        if _SMI.match(line.strip()) and line[:1] not in (" ", "\t"):
            outs.append((line.strip(), []))
        elif outs:
            outs[-1][1].append(line)
    return [(cmd, "".join(body)) for cmd, body in outs]


#: the driver's version file: ``*** /proc/driver/nvidia/./version`` or, in older scripts, the bare path
_VERSION_FILE = re.compile(r"^(?:\*\*\* )?/proc/driver/nvidia/(?:\./)?version$")


def file_body(block: Block) -> str:
    """The content of a file section: its lines after the path line, without the ``*** ls:`` lines.

    >>> file_body(Block("/proc/driver/nvidia/version", "\\n/proc/driver/nvidia/version\\nNVRM version: x\\n"))
    'NVRM version: x\\n'
    >>> file_body(Block("*** /etc/issue", "*** /etc/issue\\n*** ls: -rw-r--r-- 1 root\\nUbuntu\\n"))
    'Ubuntu\\n'
    """
    lines = block.text.splitlines(keepends=True)
    at = next((i for i, ln in enumerate(lines) if ln.strip() == block.header), -1)
    return "".join(ln for ln in lines[at + 1 :] if not ln.startswith("*** "))


#: the lspci sections: ``/usr/bin/lspci -nnDvvvxxxx`` (newer scripts, after ``-nntv`` and ``-nn``),
#: ``lspci -d "10de:*" -v -xxx`` and ``lspci -nn`` (older ones); ``-t`` trees are not device lists
_LSPCI = re.compile(r"^(?:\S*/)?lspci(?P<args>(?: +\S+)*)\s*$")
_LSPCI_TREE = re.compile(r"(?:^|\s)-\w*t")
#: ``/usr/sbin/ibstat`` as ``report_command`` prints it; the per-device commands follow in the section
_IBSTAT = re.compile(r"^(?:\S*/)?ibstat\s*$")
_IB_DEVICE_LOOP = "Running InfiniBand commands for device:"


def _after_header(block: Block) -> str:
    """A command section's output: its lines after the command line (and the blank line after it)."""
    lines = block.text.splitlines(keepends=True)
    at = next((i for i, ln in enumerate(lines) if ln.strip() == block.header), -1)
    rest = lines[at + 1 :]
    while rest and not rest[0].strip():
        rest.pop(0)
    return "".join(rest)


def pick(blocks: list[Block]) -> dict[str, tuple[str, str]]:
    """kind -> (command as run, text) for the sections hptriage reads."""
    found: dict[str, tuple[str, str]] = {}
    lspci_rank = 0
    for block in blocks:
        head = block.header
        if head == "dmesg:" and "dmesg" not in found:
            found["dmesg"] = ("dmesg", block.text.split("dmesg:", 1)[1].lstrip("\r\n"))
        elif _VERSION_FILE.match(head):
            found.setdefault("versions", ("cat /proc/driver/nvidia/version", file_body(block)))
        elif _SMI.match(head):
            for cmd, text in smi_outputs(block):
                args = cmd.split()[1:]
                if args in (["--query"], ["-q"], ["-a"]):
                    found.setdefault("nvidia-smi-q", (cmd, text))
                elif not args:
                    found.setdefault("nvidia-smi", (cmd, text))
                elif args[:1] == ["nvlink"] and args[1:] in (["--status"], ["-s"]):
                    found.setdefault("nvidia-smi-nvlink", (cmd, text))
        elif (m := _LSPCI.match(head)) and not _LSPCI_TREE.search(m.group("args")):
            rank = 2 if "vv" in m.group("args") else 1  # -nnDvvvxxxx holds each link's state
            if rank > lspci_rank:
                lspci_rank = rank
                found["lspci"] = (head, _after_header(block))
        elif _IBSTAT.match(head) and "efa-ports" not in found:
            body = _after_header(block).split(_IB_DEVICE_LOOP, 1)[0]
            if body.strip():
                found["efa-ports"] = (head, body)
        elif "fabricmanager" in head and (
            "systemctl status" in head or head.startswith("*** /var/log/fabricmanager")
        ):
            body = "".join(
                ln for ln in block.text.splitlines(keepends=True)[1:] if not ln.startswith("*** ls:")
            )
            found.setdefault("fabricmanager", (head.removeprefix("*** "), body))
    return found


_SCAN = "Scanning kernel log files for NVIDIA kernel messages:"
#: the scan's title over the years (scripts before about 2011 grepped NVRM only)
SCAN_TITLES = (_SCAN, "Scanning kernel log files for NVRM messages:")
#: a part of the scan: ``  /var/log/kern.log:`` (with a host-root prefix on Bottlerocket), ``  journalctl -b -1:``
_SCAN_PART = re.compile(r"^  (?P<name>\S*/var/log/\S+?|journalctl -b (?P<boot>[+-]?\d+)):\s*$")
#: the scan's own sentences, no log lines
_SCAN_NOTES = re.compile(
    r"^(?:\S+ is not readable|No NVIDIA kernel messages found in recent systemd journal entries\.|"
    r"No suitable log found\.)\s*$"
)
_GREP = "grep -e NVRM -e nvidia-"


@dataclass(frozen=True)
class ScanPart:
    """One part of the kernel-log scan: a log file's NVRM lines, or one boot's journal lines."""

    name: str  # '/var/log/kern.log' or 'journalctl -b -1'
    boot: int | None  # the journal's boot (0, -1, -2); None for a log file
    text: str


def kernel_scan(block: Block) -> list[ScanPart]:
    """The parts of the "Scanning kernel log files" section, each with its lines (empty parts dropped).

    >>> b = Block(_SCAN, _SCAN + "\\n\\n  /var/log/kern.log:\\nk1\\n\\n  journalctl -b -1:\\nj1\\nj2\\n")
    >>> [(p.name, p.boot, p.text) for p in kernel_scan(b)]
    [('/var/log/kern.log', None, 'k1\\n'), ('journalctl -b -1', -1, 'j1\\nj2\\n')]
    """
    parts: list[tuple[str, int | None, list[str]]] = []
    for line in block.text.splitlines(keepends=True):
        if m := _SCAN_PART.match(line.rstrip("\r\n")):
            boot = m.group("boot")
            parts.append((m.group("name"), int(boot) if boot is not None else None, []))
        elif parts and line.strip() and not _SCAN_NOTES.match(line.strip()):
            parts[-1][2].append(line)
    return [ScanPart(name, boot, "".join(lines)) for name, boot, lines in parts if lines]


def since_last_driver_load(text: str) -> str:
    """A log file's lines of its last boot (the current one, as far as the file says: see
    :mod:`analyzer.intake.foreign.boots`); the whole text when it holds one boot."""
    return boots.by_boot(text).current or text


def kernel_outputs(blocks: list[Block], have_dmesg: bool) -> tuple[list[Output], list[str]]:
    """The dmesg outputs the kernel-log scan adds, and what it says about them.

    Earlier boots always: the journal's parts (``cmd/dmesg-boot-1.txt``...) and each log file's lines
    before its last boot (``cmd/dmesg-boot-1-kern.log.txt``..., the file cut at each boot by
    :func:`analyzer.intake.foreign.boots.by_boot`); the current boot's journal part, else a log file's
    lines of its last boot, only without a ``dmesg:`` section (they repeat it)."""
    parts = [p for b in blocks if b.header in SCAN_TITLES for p in kernel_scan(b)]
    grep = _GREP if any(b.header == _SCAN for b in blocks) else "grep NVRM"  # what the older scan ran
    outputs: list[Output] = []
    notes: list[str] = []
    files: list[tuple[ScanPart, boots.Earlier]] = []
    #: each kernel line already read (the journal's parts, an earlier log file's boots) and its boot: a
    #: log file's boot whose lines the journal holds is that boot of the journal, not read twice
    seen = boots.Seen()
    for part in parts:
        if part.boot is not None and part.boot <= 0:
            seen.add(boots.line_keys(part.text), part.boot)
        if part.boot is not None and part.boot < 0:
            outputs.append(
                Output(
                    "dmesg",
                    part.text,
                    f"journalctl -b {part.boot} | {grep}",
                    name=f"dmesg-boot{part.boot}.txt",
                    note=f"{SOURCE}: the journal's NVIDIA kernel messages of boot {part.boot}",
                )
            )
    for part in parts:
        if part.boot is not None:
            continue
        cut = boots.by_boot(part.text)
        files.append((part, cut))
        shift = seen.boot_of(boots.line_keys(cut.current)) or 0  # its last boot is the journal's -1: shift
        read, held = [], 0
        for boot, _first, text in cut.earlier:
            keys = boots.line_keys(text)
            journal = seen.boot_of(keys)
            if journal is not None:
                shift, held = journal - boot, held + 1
                continue
            read.append(boot + shift)
            seen.add(keys, boot + shift)
            outputs.append(
                Output(
                    "dmesg",
                    text,
                    f"{grep} {part.name}",
                    name=boots.output_name(boot + shift, part.name),
                    note=f"{SOURCE}: the NVIDIA lines of {part.name} in boot {boot + shift}",
                )
            )
        if cut.earlier:
            notes.append(
                f"the kernel-log scan's {part.name} holds {len(cut.earlier) + cut.dropped} boots before "
                f"its last one (told by {boots.how_words(cut.how)}): "
                + (f"read as boots {', '.join(str(b) for b in read)}" if read else "none read")
                + (f"; {held} of them as the journal's parts, which hold the same lines" if held else "")
                + (f"; {cut.dropped} older boots not read" if cut.dropped else "")
            )
    if not have_dmesg:
        current = next((p for p in parts if p.boot == 0), None)
        if current is not None:
            outputs.insert(
                0,
                Output(
                    "dmesg", current.text, f"journalctl -b -0 | {grep}", note=f"{SOURCE}: no dmesg section"
                ),
            )
            notes.append(
                "no 'dmesg:' section: the kernel log is the journal's NVIDIA lines of the current boot"
            )
        elif files:
            logfile, cut = files[0]
            outputs.insert(
                0,
                Output(
                    "dmesg",
                    cut.current or logfile.text,
                    f"{grep} {logfile.name}",
                    note=f"{SOURCE}: no dmesg section; the lines of the file's last boot",
                ),
            )
            notes.append(
                f"no 'dmesg:' section: the kernel log is the NVIDIA lines of {logfile.name} of its last boot "
                "(the running one, as far as the file says; their boot is not known for certain)"
            )
    return outputs, notes


#: the versions table of newer scripts: ``<component padded to 35> | <details>``
_TABLE_ROW = re.compile(r"^(?P<name>.{35}) \| ?(?P<value>.*?)\s*$")
_TABLE_RULE = re.compile(r"^(?:=+|-+)\s*$")


def table_rows(lines: list[str], columns: int = 2) -> list[list[str]]:
    """The rows of one of the script's tables (``print_versions_table``, ``print_skips_table``,
    ``print_errors_table``): cells split at `` | ``, wrapped lines (blank first cell or between two
    rule lines) joined, the header row dropped.

    >>> table_rows(["Skipped Component                   | Details", "=" * 80,
    ...             "nvidia-smi output                   | nvidia-smi not found", "-" * 80])
    [['nvidia-smi output', 'nvidia-smi not found']]
    """
    rows: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    past_header = False  # the header row ends at the first ===== line
    for line in lines:
        text = line.rstrip("\r\n")
        if _TABLE_RULE.match(text):
            past_header = past_header or text.startswith("=")
            current = None  # a rule line ends a row
            continue
        if " | " not in text and not text.endswith(" |"):
            if text.strip():
                break  # the table ended
            continue
        if not past_header:
            continue
        if current is None:
            current = [[] for _ in range(columns)]
            rows.append(current)
        cells = [c.strip() for c in (text + " ").split(" | ", columns - 1)]
        for i, cell in enumerate(cells):
            if cell:
                current[i].append(cell)
    return [[" ".join(parts) for parts in row] for row in rows]


def _table_after(text: str, title: str, columns: int) -> list[list[str]] | None:
    """The rows of the table that follows the line ``title`` (None when there is no such line)."""
    at = text.find(title)
    if at < 0:
        return None
    lines = text[at + len(title) :].splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    return table_rows(lines, columns)


def versions_table(header: Block) -> str:
    """The driver, CUDA, Fabric Manager and kernel versions of the versions table that newer scripts
    print after the header, as ``key=value`` lines the versions parser reads ('' when there is none)."""
    lines = header.text.splitlines()
    start = next((i for i, ln in enumerate(lines) if re.match(r"^Component\s+\| Details\s*$", ln)), None)
    if start is None:
        return ""
    rows: dict[str, list[str]] = {}
    current = ""
    for line in lines[start + 1 :]:
        if _TABLE_RULE.match(line):
            continue
        m = _TABLE_ROW.match(line)
        if m is None:
            if line.strip():
                break
            continue
        if m.group("name").strip():
            current = m.group("name").strip()
        rows.setdefault(current, []).append(m.group("value"))
    found: dict[str, str] = {}
    patterns = (
        ("NVIDIA SMI", r"^DRIVER version\s*:\s*(\d[\w.-]*)", "nvidia_driver"),
        ("NVIDIA SMI", r"^Driver version \(from modinfo\):\s*(\d[\w.-]*)", "nvidia_driver"),
        ("NVIDIA SMI", r"^CUDA Version\s*:\s*(\d[\w.]*)", "cuda_driver_max"),
        ("NVIDIA GPU Details", r"^[^,]+,\s*(\d+\.\d+(?:\.\d+)?)\s*,", "nvidia_driver"),
        ("NVIDIA Fabric Manager", r"version is\s*:\s*(\d[\w.-]*)", "fabricmanager"),
        ("OS Details", r"^Kernel\s*:\s*(\S+)", "kernel"),
    )
    for component, pattern, key in patterns:
        for value in rows.get(component, []):
            if key not in found and (m := re.search(pattern, value)):
                found[key] = m.group(1)
    if not found:
        return ""
    head = "# the versions table at the head of the nvidia-bug-report (Component | Details)\n"
    return head + "".join(f"{k}={v}\n" for k, v in found.items())


#: what a skipped or failed section of the script stands for among our kinds
_SKIP_KINDS: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"nvidia-smi", re.I), ("nvidia-smi-q", "nvidia-smi-nvlink")),
    (re.compile(r"fabric ?manager", re.I), ("fabricmanager",)),
    (re.compile(r"^(?:ibstat|infiniband)\b", re.I), ("efa-ports",)),
    (re.compile(r"^lspci\b", re.I), ("lspci",)),
)
#: the older scripts' one-line notes: "Skipping nvidia-smi output (nvidia-smi not found)"
_OLD_SKIP = re.compile(r"^Skipping (?P<what>\S.*? output) \((?P<why>[^)]*)\)\s*$", re.M)
_EXIT = re.compile(r"\b(?:exit(?:ed)?(?: with)?(?: code| status)?|returned|rc[=:]?)\s*(\d{1,3})\b", re.I)
SAFE_MODE_NOTE = f"{SOURCE}: skipped in --safe-mode (the script does not run nvidia-smi then)"


def skipped_sections(text: str, blocks: list[Block]) -> list[tuple[str, str]]:
    """(section, why) for what the script skipped or failed to collect: its "Summary of Skipped
    Sections" and "Summary of Errors" tables, else its ``Skipping: ...`` sections and older scripts'
    "Skipping ... output (...)" lines, in order, each once."""
    found: dict[str, str] = {}
    skips = _table_after(text, "Summary of Skipped Sections:", 2)
    errors = _table_after(text, "Summary of Errors:", 3)
    for row in skips or []:
        found.setdefault(row[0], row[1])
    for row in errors or []:
        found.setdefault(row[0], "; ".join(c for c in row[1:] if c))
    if skips is None:
        for block in blocks:
            if block.header.startswith("Skipping: "):
                rest = [ln.strip() for ln in block.text.splitlines() if ln.strip()][1:2]
                found.setdefault(block.header.removeprefix("Skipping: ").strip(), rest[0] if rest else "")
        for m in _OLD_SKIP.finditer(text):
            found.setdefault(m.group("what"), m.group("why"))
    return [(k, v) for k, v in found.items() if k]


def safe_mode(header: Block, text: str) -> bool:
    """Whether the report was written by ``nvidia-bug-report.sh --safe-mode`` (its header's ``command
    line flags:``, or its "Skipping due to --safe-mode-argument" notes)."""
    flags = re.search(r"^command line flags:(.*)$", header.text, re.M)
    if flags is not None and "--safe-mode" in flags.group(1).split():
        return True
    return "Skipping due to --safe-mode-argument" in text


#: the report's own words that no NVIDIA kernel module is loaded: newer scripts' driver type detection
#: (``detect_driver_type``: lsmod lists neither ``nvidia`` nor ``mods``), and the file section of the
#: driver's version file, which every script appends and ``report_file`` answers so when it is not there
_NO_DRIVER_DETECTED = re.compile(r"^Detected driver type: GPU Driver not installed\?\s*$")
_NO_DRIVER_MODULES = "No NVIDIA driver modules detected."
_NO_VERSION_FILE = re.compile(r"^\*\*\* /proc/driver/nvidia/(?:\./)?version does not exist\s*$")
DRIVER_NOT_LOADED_NOTE = f"{SOURCE}: no nvidia-smi output; the report says no NVIDIA driver is loaded"


def driver_not_loaded(blocks: list[Block]) -> tuple[str, str] | None:
    """The report's lines that say no NVIDIA kernel module is loaded, and how the script learned it;
    None when it says no such thing.

    >>> driver_not_loaded([Block("NVIDIA Driver Type Detection:", "NVIDIA Driver Type Detection:\\n\\n"
    ...     "Detected driver type: GPU Driver not installed?\\nNo NVIDIA driver modules detected.\\n")])
    ('Detected driver type: GPU Driver not installed?\\nNo NVIDIA driver modules detected.\\n', 'lsmod')
    """
    for block in blocks:
        if block.header != "NVIDIA Driver Type Detection:":
            continue
        lines = block.text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            if _NO_DRIVER_DETECTED.match(line.strip()):
                more = (
                    lines[i + 1] if i + 1 < len(lines) and lines[i + 1].strip() == _NO_DRIVER_MODULES else ""
                )
                return line + more, "lsmod"
    for block in blocks:
        if _NO_VERSION_FILE.match(block.header):
            line = next(ln for ln in block.text.splitlines(keepends=True) if ln.strip() == block.header)
            return line, "/proc/driver/nvidia/version"
    return None


@dataclass
class ReportContent:
    """What hptriage reads of one report: the header's facts, the outputs, the kinds the script did not
    collect (with its reason), what it could not hold."""

    facts: dict[str, str] = field(default_factory=dict)  # hostname, report_date, collected_at
    outputs: list[Output] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: kinds the script skipped or failed to collect (nvidia-smi not found, --safe-mode), with its reason
    absent: list[Absent] = field(default_factory=list)
    #: the gzip member a cap stopped decoding in (``gzip member N``): an unread member of the report
    unread: list[Refusal] = field(default_factory=list)

    def beside(self, layout: NodeLayout, note: str) -> None:
        """Add to ``layout`` (the node of an input that holds this report, with outputs of its own)
        what the report has and the node lacks: each kind it has no output of, and always the earlier
        boots' kernel logs and the versions table (other times and facts than the node's own); and
        the kinds the script could not collect, where the node has none either."""
        for output in self.outputs:
            earlier_boot = output.kind == "dmesg" and output.name.startswith("dmesg-boot")
            if earlier_boot or output.name == "versions-table.txt" or not layout.has(output.kind):
                output.note = note
                layout.add(output)
        for absent in self.absent:
            if not layout.has(absent.kind) and all(a.kind != absent.kind for a in layout.absent):
                layout.absent.append(absent)


def read_text(text: str, origin: str = "") -> ReportContent | str:
    """The outputs of a decoded report, or a sentence saying why it holds none hptriage reads.
    With ``origin`` (how evidence names the report: its file, or ``archive!member``), each output that
    is a stretch of the report's own lines is tied to it and to the line it starts at, so findings
    cite the report's lines (outputs put together from several places, such as the versions table,
    keep their own)."""
    blocks = split_blocks(text)
    if not blocks or START not in blocks[0].text:
        return "nvidia-bug-report without its header section"
    content = ReportContent(facts=header_facts(blocks[0]))
    if zone := zone_problem(content.facts):
        content.problems.append(zone)
    if "hostname" not in content.facts and (m := _UNAME.search(blocks[0].text)):
        content.problems.append(
            f"the uname line's host name {m.group(1)!r} is masked: the node is named after the file"
        )
    found = pick(blocks)
    kernel, notes = kernel_outputs(blocks, "dmesg" in found)
    table = versions_table(blocks[0])
    if not found and not kernel and not table:
        return (
            "looks like an nvidia-bug-report log but holds none of the sections hptriage reads "
            "(nvidia-smi --query, dmesg, the kernel-log scan, /proc/driver/nvidia/version, the versions "
            "table, nvlink --status, Fabric Manager)"
        )
    for kind, (command, body) in sorted(found.items()):
        content.outputs.append(Output(kind, body, command, note=SOURCE))
    content.outputs.extend(kernel)
    if table:
        content.outputs.append(
            Output(
                "versions",
                table,
                "nvidia-bug-report.sh versions table",
                name="versions-table.txt",
                note=SOURCE,
            )
        )
    content.problems.extend(notes)
    no_driver = driver_not_loaded(blocks) if "nvidia-smi-q" not in found else None
    if no_driver is not None:
        # the report's own words stand where nvidia-smi's answer would: a failed probe of the node,
        # which the catalogue of failure answers reads (gpu.smi.unreachable), never 'not examined'
        said, how = no_driver
        content.outputs.append(
            Output(
                "nvidia-smi-q",
                said,
                f"nvidia-bug-report.sh ({how}): no NVIDIA driver loaded",
                exit_code="-",
                note=DRIVER_NOT_LOADED_NOTE,
            )
        )
    safe = safe_mode(blocks[0], text)
    unread = _absent(content, text, blocks, safe)
    _no_query_said(content, no_driver, safe)
    if unread:
        content.problems.append(
            "the script skipped or failed sections hptriage does not read: " + "; ".join(unread)
        )
    if origin:
        locate(text, content.outputs, origin)
    return content


def _absent(content: ReportContent, text: str, blocks: list[Block], safe: bool) -> list[str]:
    """The outputs the script skipped or failed, as absent probes of their kinds (a --safe-mode run skips
    nvidia-smi); the skipped sections of no kind hptriage reads are returned, to be named."""
    have = {o.kind for o in content.outputs}
    unread: list[str] = []
    for section, why in skipped_sections(text, blocks):
        kinds = next((k for pattern, k in _SKIP_KINDS if pattern.search(section)), ())
        if not kinds:
            unread.append(f"{section} ({why})" if why else section)
        for kind in kinds:
            if kind not in have and all(a.kind != kind for a in content.absent):
                code = m.group(1) if (m := _EXIT.search(why)) else "-"
                content.absent.append(
                    Absent(kind, f"{SOURCE}: {why or section + ' skipped'}", exit_code=code)
                )
    if safe:
        for kind in ("nvidia-smi-q", "nvidia-smi-nvlink"):
            if kind not in have and all(a.kind != kind for a in content.absent):
                content.absent.append(Absent(kind, SAFE_MODE_NOTE))
    return unread


def _no_query_said(content: ReportContent, no_driver: tuple[str, str] | None, safe: bool) -> None:
    """Why the report holds no 'nvidia-smi --query' output, when it holds none."""
    if no_driver is not None:
        first = no_driver[0].splitlines()[0].strip()
        content.problems.append(
            f"no 'nvidia-smi --query' output: the report says no NVIDIA driver is loaded ({first!r}); read "
            "as nvidia-smi's answer, so the node is judged by it"
        )
        return
    if "nvidia-smi-q" in {o.kind for o in content.outputs}:
        return
    skipped = next((a.note for a in content.absent if a.kind == "nvidia-smi-q"), "")
    skipped = skipped.removeprefix(f"{SOURCE}: ")
    if safe:
        content.problems.append(
            "no 'nvidia-smi --query' output: the report was written with --safe-mode, which skips "
            "nvidia-smi (and the GPUs' information files and InfiniBand)"
        )
    elif skipped:
        content.problems.append(f"no 'nvidia-smi --query' output: the script skipped it ({skipped})")
    else:
        content.problems.append(
            "no 'nvidia-smi --query' output in the report (a --safe-mode run, nvidia-smi failed, or a "
            "script that did not run it)"
        )


def locate(text: str, outputs: list[Output], origin: str) -> None:
    """Tie each output that is a stretch of whole lines of ``text`` to ``origin`` and its first line.

    >>> outs = [Output("dmesg", "[ 1.0] b\\n"), Output("versions", "made up\\n")]
    >>> locate("a\\n[ 1.0] b\\nc\\n", outs, "r.log")
    >>> [(o.origin, o.first_line) for o in outs]
    [('r.log', 2), ('', 1)]
    """
    for output in outputs:
        body = output.text
        at = text.find(body) if body.strip() else -1
        while at > 0 and text[at - 1] != "\n":  # a match inside a line is no stretch of lines
            at = text.find(body, at + 1)
        if at >= 0:
            output.origin = origin
            output.first_line = text.count("\n", 0, at) + 1


def read_bytes(data: bytes, limits: Limits, origin: str = "") -> ReportContent | str:
    """:func:`read_text` of a report held in memory, plain or gzipped (a member of another archive);
    decoding problems are among the content's problems."""
    unread: list[Refusal] = []
    try:
        text, problems = decode_bytes(data, limits, unread)
    except ValueError as exc:
        return f"nvidia-bug-report not readable: {exc}"
    content = read_text(text, origin)
    if isinstance(content, ReportContent):
        content.problems[:0] = problems
        content.unread = unread
    return content


def convert(path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the report at ``path`` as a node bundle under ``dest`` (a new private work directory)."""
    unread: list[Refusal] = []  # the gzip member a cap stopped in: an unread member of the report
    try:
        text, problems = decode(path, limits, unread)
    except (OSError, ValueError) as exc:
        return Converted(reason=f"nvidia-bug-report not readable: {exc}")
    content = read_text(text, origin=path.name)
    if isinstance(content, str):
        return Converted(problems=problems, reason=content, refusals=unread)
    layout = NodeLayout(
        node=content.facts.get("hostname") or _name_of(path),
        source=SOURCE,
        source_file=path.name,
        facts=content.facts,
        outputs=content.outputs,
        absent=list(content.absent),
    )
    layout.not_carried(NOT_CARRIED + ("nvidia-smi-nvlink", "fabricmanager"), NOT_CARRIED_NOTE)
    return Converted(
        [write_node(dest / "node", layout)], problems=problems + content.problems, refusals=unread
    )


def _name_of(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".log"):
        name = name.removesuffix(suffix)
    return name or "nvidia-bug-report"
