"""Small text helpers shared by the parsers: prefixes, numbers, units, key/value blocks."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from parsers._base import Columns

_NUMBER = re.compile(r"^[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?$")

#: Values NVIDIA tools print where a number is not available.
NOT_AVAILABLE = frozenset(
    {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "unknown", "-"}
)


def to_float(value: str | None) -> float | None:
    """Parse a number written with a dot or a locale comma; None when not a number.

    >>> to_float("223974,00"), to_float(" 5e-07 "), to_float("N/A"), to_float("1,234.5")
    (223974.0, 5e-07, None, 1234.5)
    """
    if value is None:
        return None
    v = value.strip()
    if v.lower() in NOT_AVAILABLE:
        return None
    if "," in v and "." in v:  # thousands separator: 1,234.5
        v = v.replace(",", "")
    elif "," in v:
        v = v.replace(",", ".")
    if not _NUMBER.match(v):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def to_int(value: str | None) -> int | None:
    """Parse an integer (decimal or 0x hex); None when not a number.

    >>> to_int("42"), to_int("0x1f"), to_int("[N/A]"), to_int("3.0")
    (42, 31, None, 3)
    """
    if value is None:
        return None
    v = value.strip()
    if v.lower().startswith("0x"):
        try:
            return int(v, 16)
        except ValueError:
            return None
    f = to_float(v)
    if f is None or not math.isfinite(f) or f != int(f):  # 1e999 is inf: no integer
        return None
    return int(f)


def leading_number(value: str | None) -> float | None:
    """The number at the start of a value that carries a unit.

    >>> leading_number("592.74 W"), leading_number("81559 MiB"), leading_number("Disabled")
    (592.74, 81559.0, None)
    """
    if value is None:
        return None
    m = re.match(r"\s*([-+]?\d+(?:[.,]\d+)?)", value)
    return to_float(m.group(1)) if m else None


def percent(value: str | None) -> float | None:
    """Parse '85%' or '85 %' into 85.0.

    >>> percent("85%"), percent(" 7 %"), percent("-")
    (85.0, 7.0, None)
    """
    if value is None:
        return None
    return to_float(value.strip().rstrip("%").strip())


def key_value(line: str, sep: str = ":") -> tuple[str, str] | None:
    """Split 'Key   : value' into ('Key', 'value'), keeping an empty value.

    >>> key_value("    Bus Id                            : 00000000:19:00.0")
    ('Bus Id', '00000000:19:00.0')
    >>> key_value("    MIG Mode") is None
    True
    """
    if sep not in line:
        return None
    key, _, value = line.partition(sep)
    key = key.strip()
    if not key:
        return None
    return key, value.strip()


def snake(name: str) -> str:
    """Make a column name from a label.

    >>> snake("Volatile DRAM Uncorrectable"), snake("pcie.link.gen.current"), snake("%util")
    ('volatile_dram_uncorrectable', 'pcie_link_gen_current', 'util_pct')
    """
    n = name.strip().replace("%", "_pct_" if not name.strip().startswith("%") else "pct_")
    if name.strip().startswith("%"):
        n = name.strip()[1:] + "_pct"
    n = re.sub(r"[^0-9A-Za-z]+", "_", n).strip("_").lower()
    return re.sub(r"_+", "_", n)


_PCI = re.compile(
    r"(?:(?P<domain>[0-9A-Fa-f]{4,8}):)?(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2})(?:\.(?P<fn>[0-7]))?"
)


def pci_address(value: str | None) -> str | None:
    """Normalise a PCI address to 'dddd:bb:dd.f', lower case, 4-digit domain.

    nvidia-smi prints '00000000:19:00.0', dmesg Xid lines 'PCI:0000:cb:00'.

    >>> pci_address("00000000:19:00.0"), pci_address("0000:cb:00"), pci_address("3E3F8E05:00:00.0")
    ('0000:19:00.0', '0000:cb:00.0', '3e3f8e05:00:00.0')
    """
    if not value:
        return None
    m = _PCI.search(value)
    if not m:
        return None
    domain = int(m.group("domain") or "0", 16)
    return f"{domain:04x}:{m.group('bus').lower()}:{m.group('dev').lower()}.{m.group('fn') or '0'}"


# --- one normalisation of how outputs travel: launchers, prompts, pastes ------------------------------

#: ``srun -l`` rank tags ("0: ", "  12: "), mpirun tags ("[1,0]<stdout>:"), kubectl --prefix tags
#: ("[pod/trainer-0/main] "), pdsh/clush host tags ("ip-10-1-2-3: ", "node001: ").
_SRUN = re.compile(r"^\s{0,4}(\d{1,5}): ")
_MPIRUN = re.compile(r"^\[(\d+,\d+)\]<std(?:out|err)>: ?")
_KUBECTL = re.compile(r"^\[((?:pod/)?[a-z0-9][a-z0-9.-]*/[A-Za-z0-9._-]+)\] ")
_PDSH = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*[0-9.-][A-Za-z0-9._-]*|[A-Za-z][A-Za-z0-9-]*\d): ")
#: Names that look like a host tag but are what a kernel or a tool itself prints first.
_NOT_HOST = re.compile(
    r"^(?:nv|NV|mlx|efa|ena|eth|ens|enp|eno|ib|bond|rdma|lo\d|xhci|usb|pci|acpi|sd[a-z]|nvme|md\d|dm-|"
    r"kernel|systemd|audit|cgroup|(?:CPU|cpu|GPU|gpu)\d*$|avg-cpu$|Xid|NCCL|libfabric|\d+\.\d+)",
)
_ANY_TAG = re.compile("|".join(f"(?:{p.pattern})" for p in (_SRUN, _MPIRUN, _KUBECTL, _PDSH)))
_MARKDOWN_QUOTE = re.compile(r"^> ?")
_PROMPT = re.compile(
    r"^\s*(?:\$|[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s?[$#]|\[[\w.-]+@[\w.-]+[^\]]*\]\s?[$#]|\(\S+\)\s*\$"
    r"|(?:ba|z|k|c|tc)?sh-\d+(?:\.\d+)*[$#]|╰─[$#]|➜\s+\S+)(?:\s+(?P<cmd>\S.*))?\s*$"
)
_JOB_NOISE = re.compile(r"^\s*(?:\^[A-Z\\]|\[\d+\][+-]?\s+(?:Stopped|Done|Killed|Terminated|Running)\b.*)$")
_FENCE = re.compile(r"^\s*(?:```|~~~)\s*[\w+-]*\s*$")
_ELISION = re.compile(r"^\s*(?:\.{3,}|…+|\[\s*(?:\.{3,}|…|snip\w*|truncated|cut)\s*\]|<snip\w*>)\s*$", re.I)
_ANNOTATION = re.compile(r"\s+(?:<-{2,}|<={2,}|←).*$")


#: What may stand before every line of a pasted block: indentation, comment marks (``# ``, ``// ``)
#: and quote marks (``> ``, ``>> ``, ``> > ``), in any order.  A mark counts when a blank or the line's
#: end follows it (``#define``, ``>>>`` prompts and ``//host/share`` are text, not marks).
_LEAD = re.compile(r"(?:[ \t]+|(?:#|>{1,3}|//)(?=[ \t]|$))*")
_LEAD_FIRST = frozenset(" \t#>/")


def common_prefix(lines: list[str]) -> str:
    """The indentation and comment or quote marks that EVERY non-blank line starts with (a block pasted
    indented, commented out or quoted), so that taking it off gives the output as the tool printed it.

    Only what all lines share goes: an nvidia-smi -q dump indented by four more spaces keeps its own
    indentation.  A line that is the marks alone (``#``, ``>``) is a blank line of the block.  One line
    alone has no common prefix (``# dmesg`` is a root prompt), and a first line that starts with none of
    indentation, ``#``, ``>`` or ``/`` ends the search at once (a kernel log costs one test).

    >>> common_prefix(["    # [ 1.0] NVRM: x", "    #", "    #   GPU 0"])
    '    # '
    >>> common_prefix(["\\tGPU 0", "\\t    Bus Id : 00000000:19:00.0"]), common_prefix(["[ 1.0] a", "  b"])
    ('\\t', '')
    >>> common_prefix([">> Filesystem Size", ">> /dev/root 2G"]), common_prefix(["#define A", "#define B"])
    ('>> ', '')
    """
    prefix: str | None = None
    count = 0
    for line in lines:
        if not line or line.isspace():
            continue
        if prefix is None:
            if line[0] not in _LEAD_FIRST:
                return ""
            prefix = _LEAD.match(line).group(0)  # type: ignore[union-attr]  # matches the empty string
            if not prefix:
                return ""
        elif not line.startswith(prefix):
            bare = line.rstrip()
            if prefix.startswith(bare) and bare.strip() and not prefix[len(bare) :].strip():
                continue  # the marks alone: a blank line of the block
            n = 0
            while n < len(prefix) and n < len(line) and prefix[n] == line[n]:
                n += 1
            prefix = _LEAD.match(prefix[:n]).group(0)  # type: ignore[union-attr]
            if not prefix:
                return ""
        count += 1
    return "" if prefix is None or count < 2 else prefix


def unprefixed(text: str) -> str:
    """A text with its ``common_prefix`` taken off every line (the text itself when it has none); line
    numbers stay, marks-only lines become empty.

    >>> unprefixed("    Filesystem Size\\n    /dev/root 2G\\n")
    'Filesystem Size\\n/dev/root 2G\\n'
    """
    lines = text.splitlines()
    prefix = common_prefix(lines)
    if not prefix:
        return text
    out = [_unprefix(line, prefix) for line in lines]
    return "\n".join(out) + ("\n" if text.endswith(("\n", "\r")) else "")


def _unprefix(line: str, prefix: str) -> str:
    if line.startswith(prefix):
        return line[len(prefix) :]
    return "" if not line.strip() or prefix.startswith(line.rstrip()) else line


@dataclass
class Cleaned:
    """A capture with the travel noise taken off, line for line.

    ``lines[i]`` is input line ``i + 1`` (so evidence line numbers stay those of the file): CR and
    trailing blanks gone, a launcher tag, a markdown quote or glued backticks taken off, an annotation
    after a row (``<-----``) cut; prompt lines, job-control noise, markdown fences and author elisions
    (``...``) become empty.  ``hosts[i]`` is the launcher's tag of that line (a pdsh host, an srun
    rank, a pod) or None; ``hosts`` is None when the file has no tags at all.  ``commands`` are the
    command lines of the prompts seen, with their line numbers; ``noise`` the numbers of the lines
    blanked; ``prefix`` the indentation or comment/quote marks every line of a pasted block carried
    (``common_prefix``), taken off every line first.
    """

    lines: list[str]
    hosts: list[str | None] | None = None
    commands: list[tuple[int, str]] = field(default_factory=list)
    noise: list[int] = field(default_factory=list)
    prefix: str = ""

    def numbered(self) -> Iterator[tuple[int, str, str | None]]:
        """(line number, cleaned line, host tag) of every line that is not empty."""
        hosts = self.hosts
        for i, line in enumerate(self.lines):
            if line:
                yield i + 1, line, hosts[i] if hosts else None


def _tag_kind(lines: list[str]) -> re.Pattern[str] | None:
    """The launcher tag most lines of the file carry, when at least half of the lines that are not
    blank do (tags are a property of the capture, never of one line: ``Driver Version: 535`` alone
    is not a host tag)."""
    sample = [line for line in lines[:400] if line.strip()]
    if not sample:
        return None
    # Most captures carry no tag: every 8th line of the sample, against any tag, says so cheaply.
    probe = sample[::8]
    if len(probe) >= 8 and sum(1 for line in probe if _ANY_TAG.match(line)) * 5 < len(probe) * 2:
        return None
    for pattern in (_MPIRUN, _KUBECTL, _SRUN, _PDSH):
        hits = [m.group(1) for line in sample if (m := pattern.match(line))]
        if pattern is _PDSH:
            hits = [h for h in hits if not _NOT_HOST.match(h)]
        if len(hits) * 2 >= len(sample) and len(hits) >= 2:
            return pattern
        if len(hits) == len(sample) == 1 and pattern is not _PDSH:
            return pattern
    return None


_QUICK = ("\r", "`", "<-", "<=", "←", "$ ", "# ", "$\n", "...", "…", "^", "]+", "]-", "> ")


def _noise(line: str) -> bool:
    """A line that travelled with the output and says nothing of it: a Markdown fence, a job-control
    line, an elision ("...", "[snip]")."""
    stripped = line.lstrip() if line[:1] in (" ", "\t") else line
    first = stripped[:1]
    return bool(
        (("```" in line or "~~~" in line) and _FENCE.match(line))
        or ((first == "^" or (first == "[" and stripped[1:2].isdigit())) and _JOB_NOISE.match(line))
        or (first in (".", "…", "<", "[") and (first != "[" or len(stripped) <= 24) and _ELISION.match(line))
    )


class LineCleaner:
    """Cleans one line at a time, with the launcher tag of its file (see ``clean_lines``).

    For parsers that look at a few lines of a big file only (a kernel log's candidate lines): the tag
    is decided once from the file's first lines, then each line costs a few character tests unless it
    can be noise.

    >>> cleaner = LineCleaner("n1: a\\nn1: b\\n")
    >>> cleaner.clean("n1: [ 1.0] NVRM: GPU 0000:01:00.0"), cleaner.clean("n1: $ dmesg -T")
    (('[ 1.0] NVRM: GPU 0000:01:00.0', 'n1', None, False), ('', 'n1', 'dmesg -T', True))
    >>> cleaner.clean("n1: ")  # the tag alone: an empty line of that host
    ('', 'n1', None, False)
    """

    def __init__(self, text: str, *, tags: bool = True) -> None:
        first = text[:1] if text[:1] not in ("\n", "\r") else text.lstrip("\r\n")[:1]
        self.prefix = common_prefix(text.splitlines()) if first in _LEAD_FIRST else ""
        head = text[:65536].splitlines()
        if self.prefix:
            head = [_unprefix(line, self.prefix) for line in head]
        self.pattern = _tag_kind(head) if tags else None

    def _untagged(self, line: str) -> tuple[str, str | None]:
        """The line without the capture's common prefix, a Markdown quote, its launcher tag (returned) or
        an mpirun tag."""
        if self.prefix:
            line = _unprefix(line, self.prefix)
        host = None
        pattern = self.pattern
        if line.startswith(">"):
            line = _MARKDOWN_QUOTE.sub("", line, count=1)
        if pattern is not None and (
            m := pattern.match(line) or (line[-1:] in (":", "]") and pattern.match(line + " "))
        ):
            if pattern is not _PDSH or not _NOT_HOST.match(m.group(1)):
                host, line = m.group(1), line[m.end() :]
        elif line.startswith("[") and (m := _MPIRUN.match(line)):
            line = line[m.end() :]
        return line, host

    def clean(self, line: str) -> tuple[str, str | None, str | None, bool]:
        """(cleaned line, launcher tag, command of a prompt line, whether the line was noise blanked)."""
        line, host = self._untagged(line.rstrip())
        if "`" in line:
            line = line.strip("`").rstrip() if not _FENCE.match(line) else line
        if _noise(line):
            return "", host, None, True
        if ("$" in line or "#" in line or "➜" in line) and (m := _PROMPT.match(line)):
            return "", host, (m.group("cmd") or "").strip() or None, True
        if "<" in line or "←" in line:
            line = _ANNOTATION.sub("", line)
        return line, host, None, False


def clean_lines(text: str, *, tags: bool = True) -> Cleaned:
    """Take the noise of how an output travelled off a capture, once per file (see ``Cleaned``).

    >>> c = clean_lines("0: GPU 0\\n1: GPU 1   <----- slow\\n$ nvidia-smi -L\\n...\\n")
    >>> c.lines, c.hosts, c.commands
    (['GPU 0', 'GPU 1', '', ''], ['0', '1', None, None], [(3, 'nvidia-smi -L')])
    >>> clean_lines("NVRM: Xid (PCI:0000:cb:00): 79\\nNVRM: GPU at PCI:0000:cb:00").hosts is None
    True
    """
    raw = text.splitlines()
    cleaner = LineCleaner(text, tags=tags)
    head = text[:65536]
    if (
        cleaner.pattern is None
        and not cleaner.prefix
        and not any(q in head for q in _QUICK)
        and not any(q in text for q in _QUICK[:3])
    ):
        return Cleaned([line.rstrip() for line in raw])  # the common case: nothing travelled with it
    out: list[str] = []
    hosts: list[str | None] | None = [] if cleaner.pattern is not None else None
    cleaned = Cleaned(out, hosts, prefix=cleaner.prefix)
    clean = cleaner.clean
    for no, line in enumerate(raw, start=1):
        line, host, command, blanked = clean(line)
        out.append(line)
        if hosts is not None:
            hosts.append(host)
        if blanked:
            cleaned.noise.append(no)
            if command is not None:
                cleaned.commands.append((no, command))
    return cleaned


@functools.lru_cache(maxsize=4)
def clean_head(text: str) -> Cleaned:
    """``clean_lines`` of a text's first 64 KB, worked out once for all the detectors that look at the
    same text in turn (``parsers.detect_kind``).  Read it, never change it: it is shared."""
    return clean_lines(text[:65536])


@functools.lru_cache(maxsize=4)
def clean_head_text(text: str) -> str:
    """The cleaned first 64 KB of a text as one string (see ``clean_head``)."""
    return "\n".join(clean_head(text).lines)


def keep_value(extra: dict[str, Any], key: str, value: Any) -> None:
    """Keep a printed key's value in an ``extra`` dict; a key printed again holds the list of its values,
    in order (processes, MIG devices, repeated ``alias:`` lines).

    >>> d: dict[str, Any] = {}
    >>> keep_value(d, "a", "1"); keep_value(d, "a", "2"); keep_value(d, "a", "3"); d
    {'a': ['1', '2', '3']}
    """
    if key not in extra:
        extra[key] = value
    elif isinstance(extra[key], list):
        extra[key].append(value)
    else:
        extra[key] = [extra[key], value]


# -- long tables: one row per printed key ----------------------------------------------------------

#: The columns of every long table of a key-value tool (``gpu_attribute`` of nvidia-smi -q,
#: ``port_attribute`` of ibv_devinfo, ``provider_attribute`` of fi_info -v, ...): the entity the key
#: belongs to (a GPU's bus id, ``device/port``, ``provider/domain``), the section path as printed
#: (`` / `` between levels: ``Clocks / Applications Clocks``), the key, the value as printed, and
#: the number and unit where the value is one number with an optional unit.
LONG_COLUMNS = ("entity", "section", "key", "value", "number", "unit", "line")
_VALUE_UNIT = re.compile(
    r"^\s*(?P<n>[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<u>[A-Za-z%°µ/][\w%°µ/.\- ]{0,15})?\s*$"
)


def number_and_unit(value: str) -> tuple[float | None, str | None]:
    """The number a printed value holds and its unit, when it is one number with an optional unit
    (hex is a number; a list, a range or a version is not).

    >>> number_and_unit("700.00 W"), number_and_unit("80 %"), number_and_unit("0x10de"), number_and_unit("4096")
    ((700.0, 'W'), (80.0, '%'), (4318.0, None), (4096.0, None))
    >>> number_and_unit("535.104.05"), number_and_unit("N/A"), number_and_unit("25.78125 Gb/sec (4X EDR)")
    ((None, None), (None, None), (None, None))
    >>> number_and_unit("1,980 MHz"), number_and_unit("2.50 V")
    ((1980.0, 'MHz'), (2.5, 'V'))
    """
    v = value.strip()
    if v[:2].lower() == "0x" and len(v) > 2:
        try:
            return float(int(v, 16)), None
        except ValueError:
            return None, None
    m = _VALUE_UNIT.match(v)
    if m is None:
        return None, None
    digits = m.group("n")
    if digits.count(",") and "." not in digits and not re.fullmatch(r"\d{1,3}(?:,\d{3})+", digits):
        return None, None  # "1,2" is a list, not a number
    number = to_float(digits.replace(",", "") if re.fullmatch(r"[\d,]+(?:\.\d*)?", digits) else digits)
    unit = (m.group("u") or "").strip() or None
    return number, unit


class LongTable(Columns):
    """A long table (``LONG_COLUMNS``, then any ``extra`` columns) built a column at a time.

    The number and unit of each value are read once per distinct value of the table (a dump of eight
    GPUs prints "N/A", "0", "Enabled" and "1980 MHz" over and over): benchmarks/bench_long_tables.py
    measured this against pyarrow's and DuckDB's string functions over the value column.

    >>> t = LongTable(("host",))
    >>> t.add("0000:18:00.0", "Power Readings", "Power Draw", "71.14 W", 40, None)
    >>> t.rows()
    [{'entity': '0000:18:00.0', 'section': 'Power Readings', 'key': 'Power Draw', 'value': '71.14 W', 'number': 71.14, 'unit': 'W', 'line': 40, 'host': None}]
    >>> t.set_value(0, "71.14 W | 75 W"); t.data["value"], t.data["number"]
    (['71.14 W | 75 W'], [71.14])
    """

    __slots__ = ("_read", "_lists", "_extra")

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        super().__init__((*LONG_COLUMNS, *extra))
        self._read: dict[str, tuple[float | None, str | None]] = {}
        self._lists = tuple(self.data[name] for name in LONG_COLUMNS)
        self._extra = tuple(self.data[name] for name in extra)

    def add(
        self, entity: str | None, section: str, key: str, value: str, line: int | None, *extra: Any
    ) -> None:
        read = self._read.get(value)
        if read is None:
            read = self._read[value] = number_and_unit(value)
        entities, sections, keys, values, numbers, units, lines = self._lists
        entities.append(entity)
        sections.append(section)
        keys.append(key)
        values.append(value)
        numbers.append(read[0])
        units.append(read[1])
        lines.append(line)
        if extra or self._extra:
            for column, v in zip(self._extra, extra, strict=True):
                column.append(v)

    def set_value(self, index: int, value: str) -> None:
        """Change the value of row ``index`` (a list value continued on the next line); its number and
        unit stay those of the value as first printed."""
        self.data["value"][index] = value


def long_row(entity: str | None, section: str, key: str, value: str, line: int | None) -> dict[str, Any]:
    """One row of a long table (``LONG_COLUMNS``).

    >>> long_row("0000:18:00.0", "Power Readings", "Power Draw", "71.14 W", 40)["number"]
    71.14
    """
    number, unit = number_and_unit(value)
    return {
        "entity": entity,
        "section": section,
        "key": key,
        "value": value,
        "number": number,
        "unit": unit,
        "line": line,
    }


# -- text taken out of PDFs: tables that lost their newlines -------------------------------------


def split_flat_table(line: str, header: re.Pattern[str], *, min_cells: int = 5) -> list[str] | None:
    """The lines of a table whose newlines were lost (text taken out of a PDF, a paste into one line):
    ``df``-shaped tables, whose every row ends with a use% cell (``12%`` or ``-``) and a mount point
    (``/...``).  ``header`` finds the header wherever it is repeated; each row is cut after its mount
    point.  None unless the shape is unambiguous: at least two rows, each of at least ``min_cells``
    cells, nothing left over.

    >>> hdr = re.compile(r"Filesystem\\s+Size\\s+Used\\s+Avail\\s+Use%\\s+Mounted on")
    >>> split_flat_table("Filesystem Size Used Avail Use% Mounted on /dev/root 7.7G 1.5G 6.3G 19% / "
    ...                  "tmpfs 3.9G 0 3.9G 0% /dev/shm", hdr)
    ['Filesystem Size Used Avail Use% Mounted on', '/dev/root 7.7G 1.5G 6.3G 19% /', 'tmpfs 3.9G 0 3.9G 0% /dev/shm']
    >>> split_flat_table("/dev/root 7.7G 1.5G 6.3G 19% /", hdr) is None
    True
    """
    out: list[str] = []
    rows = 0
    at = 0
    for m in [*header.finditer(line), None]:
        segment = line[at : m.start() if m else len(line)].split()
        row: list[str] = []
        for token in segment:
            row.append(token)
            if len(row) >= min_cells and token.startswith("/") and _is_use(row[-2]):
                out.append(" ".join(row))
                rows += 1
                row = []
        if row:
            return None
        if m:
            out.append(" ".join(m.group(0).split()))
            at = m.end()
    return out if rows >= 2 else None


def _is_use(token: str) -> bool:
    return token == "-" or (token.endswith("%") and token[:-1].isdigit())
