"""NVIDIA's ``nvidia-bug-report.log`` / ``.log.gz`` (written by ``nvidia-bug-report.sh``) as a node bundle.

The script writes one log, section by section: each section is piped through ``gzip -c >>`` onto the
same file, so the ``.gz`` is many gzip members one after another; a run that was killed (collectors
wrap it in ``timeout``) ends in a cut member.  Every member that decodes is kept, a cut last member is
recorded as a problem, and decoding stops at the safe reader's caps (:class:`Limits`: decoded size,
expansion ratio).

Sections are separated by a line of 44 underscores.  The first holds the header ("Start of NVIDIA bug
report log file", ``Date:``, ``uname:``); file sections start ``*** /path`` (then ``*** ls: ...``);
command sections start with the command as run (``dmesg:``, ``/usr/bin/nvidia-smi --query``).  The
nvidia-smi section holds several outputs back to back, each starting with the command line
(``--query``, ``--query --unit``, ``nvlink --status``...).

The report is written out as a node bundle (``meta.env``, ``manifest.tsv``, ``cmd/<kind>.txt``) so that
discovery, every parser and every rule read it unchanged.  Kinds the report cannot carry (EFA, fi_info,
file systems, I/O) get manifest rows with no file and the note ``not carried by nvidia-bug-report``.
"""

from __future__ import annotations

import io
import re
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import BinaryIO

from analyzer.intake.foreign.layout import Converted, NodeLayout, Output, write_node
from analyzer.intake.safe_read import Limits, gunzip_members

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


def decode(path: Path, limits: Limits) -> tuple[str, list[str]]:
    """The report's text and the problems met reading it (a cut member, a cap reached).
    Raises OSError when the file cannot be read, ValueError when nothing of it decodes."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        return decode_stream(fh, size, limits)


def decode_bytes(data: bytes, limits: Limits) -> tuple[str, list[str]]:
    """:func:`decode` of a report held in memory (a member of an archive)."""
    return decode_stream(io.BytesIO(data), len(data), limits)


def decode_stream(fh: BinaryIO, size: int, limits: Limits) -> tuple[str, list[str]]:
    """:func:`decode` of an open binary stream of ``size`` bytes, read from its start."""
    first = fh.read(2)
    fh.seek(0)
    if first != GZIP_MAGIC:
        if size > limits.max_file_bytes:
            raise ValueError(f"{size} bytes, over the {limits.max_file_bytes}-byte cap per file")
        return fh.read().decode("utf-8", "replace"), []
    data, problems = gunzip_members(fh, size, limits)
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
    """hostname (from the ``uname:`` line), report_date as written, collected_at when it can be read.

    >>> header_facts(Block("x", "Date: Thu Oct 27 08:50:11 PM -03 2022\\nuname: Linux nomade 6.0.1 #1 SMP"))
    {'hostname': 'nomade', 'report_date': 'Thu Oct 27 08:50:11 PM -03 2022', 'collected_at': '2022-10-27T23:50:11Z'}
    """
    facts: dict[str, str] = {}
    if m := _UNAME.search(block.text):
        facts["hostname"] = m.group(1)
    if m := _DATE.search(block.text):
        facts["report_date"] = m.group(1)
        when = _parse_date(m.group(1))
        if when is not None:
            facts["collected_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    return facts


def _parse_date(text: str) -> datetime | None:
    """``date`` output in the C locale with a zone that says its offset (UTC, GMT, +0800, -03);
    other locales and named zones (CST is three different zones) are not guessed."""
    parts = text.split()
    if len(parts) == 7 and parts[4] in ("AM", "PM"):  # Thu Oct 27 08:50:11 PM -03 2022
        parts = [parts[0], parts[1], parts[2], parts[3] + parts[4], parts[5], parts[6]]
        clock = "%I:%M:%S%p"
    else:
        clock = "%H:%M:%S"
    if len(parts) != 6:
        return None
    zone = parts[4]
    if zone in ("UTC", "GMT"):
        offset = timedelta(0)
    elif m := re.fullmatch(r"([+-])(\d\d)(\d\d)?", zone):
        sign = -1 if m.group(1) == "-" else 1
        offset = sign * timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
    else:
        return None
    try:
        local = datetime.strptime(" ".join(parts[1:4] + parts[5:]), f"%b %d {clock} %Y")
    except ValueError:
        return None
    return (local - offset).replace(tzinfo=timezone.utc)


def smi_outputs(block: Block) -> list[tuple[str, str]]:
    """The outputs held back to back in the nvidia-smi section: (command line, output) each."""
    outs: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines(keepends=True):
        if _SMI.match(line.strip()) and line[:1] not in (" ", "\t"):
            outs.append((line.strip(), []))
        elif outs:
            outs[-1][1].append(line)
    return [(cmd, "".join(body)) for cmd, body in outs]


def pick(blocks: list[Block]) -> dict[str, tuple[str, str]]:
    """kind -> (command as run, text) for the sections hptriage reads."""
    found: dict[str, tuple[str, str]] = {}
    for block in blocks:
        head = block.header
        if head == "dmesg:" and "dmesg" not in found:
            found["dmesg"] = ("dmesg", block.text.split("dmesg:", 1)[1].lstrip("\r\n"))
        elif head.startswith("*** /proc/driver/nvidia/") and head.replace("/./", "/").endswith(
            "/nvidia/version"
        ):
            body = "".join(ln for ln in block.text.splitlines(keepends=True) if not ln.startswith("*** "))
            found.setdefault("versions", ("cat /proc/driver/nvidia/version", body))
        elif _SMI.match(head):
            for cmd, text in smi_outputs(block):
                args = cmd.split()[1:]
                if args == ["--query"] or args == ["-q"]:
                    found.setdefault("nvidia-smi-q", (cmd, text))
                elif args[:1] == ["nvlink"] and args[1:] in (["--status"], ["-s"]):
                    found.setdefault("nvidia-smi-nvlink", (cmd, text))
        elif "fabricmanager" in head and (
            "systemctl status" in head or head.startswith("*** /var/log/fabricmanager")
        ):
            body = "".join(
                ln for ln in block.text.splitlines(keepends=True)[1:] if not ln.startswith("*** ls:")
            )
            found.setdefault("fabricmanager", (head.removeprefix("*** "), body))
    return found


@dataclass
class ReportContent:
    """What hptriage reads of one report: the header's facts, the outputs, what it could not hold."""

    facts: dict[str, str] = field(default_factory=dict)  # hostname, report_date, collected_at
    outputs: list[Output] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def read_text(text: str) -> ReportContent | str:
    """The outputs of a decoded report, or a sentence saying why it holds none hptriage reads."""
    blocks = split_blocks(text)
    if not blocks or START not in blocks[0].text:
        return "nvidia-bug-report without its header section"
    content = ReportContent(facts=header_facts(blocks[0]))
    found = pick(blocks)
    if not found:
        return (
            "looks like an nvidia-bug-report log but holds none of the sections hptriage reads "
            "(nvidia-smi --query, dmesg, /proc/driver/nvidia/version, nvlink --status, Fabric Manager)"
        )
    if "nvidia-smi-q" not in found:
        content.problems.append(
            "no 'nvidia-smi --query' output in the report (a --safe-mode run, or nvidia-smi failed)"
        )
    for kind, (command, body) in sorted(found.items()):
        content.outputs.append(Output(kind, body, command, note=SOURCE))
    return content


def read_bytes(data: bytes, limits: Limits) -> ReportContent | str:
    """:func:`read_text` of a report held in memory, plain or gzipped (a member of another archive);
    decoding problems are among the content's problems."""
    try:
        text, problems = decode_bytes(data, limits)
    except ValueError as exc:
        return f"nvidia-bug-report not readable: {exc}"
    content = read_text(text)
    if isinstance(content, ReportContent):
        content.problems[:0] = problems
    return content


def convert(path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the report at ``path`` as a node bundle under ``dest`` (a new private work directory)."""
    try:
        text, problems = decode(path, limits)
    except (OSError, ValueError) as exc:
        return Converted(reason=f"nvidia-bug-report not readable: {exc}")
    content = read_text(text)
    if isinstance(content, str):
        return Converted(problems=problems, reason=content)
    layout = NodeLayout(
        node=content.facts.get("hostname") or _name_of(path),
        source=SOURCE,
        source_file=path.name,
        facts=content.facts,
        outputs=content.outputs,
    )
    layout.not_carried(NOT_CARRIED + ("nvidia-smi-nvlink", "fabricmanager"), NOT_CARRIED_NOTE)
    return Converted([write_node(dest / "node", layout)], problems=problems + content.problems)


def _name_of(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".log"):
        name = name.removesuffix(suffix)
    return name or "nvidia-bug-report"
