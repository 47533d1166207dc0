"""Block-device and CPU statistics from sysstat ``iostat`` (old and new column layouts).

Commands the collector runs::

    iostat -c -d -x -k 2 3

Sample (lines of tests/fixtures/iostat/aks-node-xy-old-format.txt)::

    Linux 4.15.0-1064-azure (aks-main-10212767-vmss000001)  02/10/20        _x86_64_        (8 CPU)

    avg-cpu:  %user   %nice %system %iowait  %steal   %idle
               3.42    0.00    2.92    1.90    0.00   91.76

    Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util
    sda               0.00    56.00    0.00   65.00     0.00   504.00    15.51     0.01    3.02    0.00    3.02   0.12   0.80

All device layouts are read by column name: sysstat <= 11.4 (``Device:`` with a colon,
``rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util``, or
``rsec/s``/``rMB/s``), the 11.5/11.6 interim one (``%rrqm %wrqm r_await w_await aqu-sz rareq-sz wareq-sz
svctm``), 12.x (``Device``, ``r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s ... d/s ... f/s f_await aqu-sz
%util``), any subset of them, ``-s``, and the plain device report (``tps kB_read/s kB_wrtn/s kB_dscd/s
kB_read kB_wrtn kB_dscd``, ``MB_*`` with ``-m``, ``Blk_*``).  Decimal commas, locale banner dates, ``-t``
timestamp lines, ``-p`` partitions, ``-N`` mapper names, -z reports without device rows, an avg-cpu
value row whose header was cut off (six numbers alone) and ``[...]``/``^C`` lines are accepted, and
``-o JSON`` is read too.  ``--human`` (``-h`` of sysstat >= 12: the device name last, sizes with the
suffixes of sysstat's cprintf_unit, ``s`` sectors, ``B``, ``k``, ``M``, ``G``, ``T`` in powers of 1024,
percents with ``%``) is converted to each column's own unit (``2.1M`` under ``dkB/s`` is 2150.4 kB/s,
``70.4M`` under ``kB_read`` 72090 kB, rounded to a whole kB for the totals); ``-x --pretty`` column
groups (r, w, d, f: one header each, ``Device`` last) join into one row per device and report; the
``-h`` of sysstat < 12 (the device name alone on its line, its numbers on the next) is read too.

Lossless: every printed value is kept under the tool's own column name and unit, snake-cased
(``%rrqm`` -> ``pct_rrqm``, ``kB_read/s`` -> ``kb_read_s``, ``avgrq-sz`` -> ``avgrq_sz``, ``%iowait`` ->
``pct_iowait``); the normalised columns rules use (``rkb_s`` in kB/s, ``r_await_ms``, ``util_pct``,
``iowait_pct``, ...) are filled beside them.  A column this parser does not know goes, under its
snake-cased name, into ``extra`` (a JSON object).  A device line whose cells are not all numbers, or
whose count columns (``kB_read`` ...) are not integers, is skipped as a ParseIssue with its line.

How the output travelled is taken off first by ``parsers._text.clean_lines``: launcher tags (kept in
``host``, each host read on its own), prompts, ``^Z``, fences, glued backticks, ``...`` elisions,
``<-----`` annotations, CRLF.  An iostat command line pasted with the output (``$ iostat -xy 1 1``,
``# iostat /dev/sd[a-d]``, ``./iostat -mt 1``) is read for ``-y``.  The proposed ``-T`` layout
(``Datetime`` before each header, a date and time before each row) is read, the stamp in ``ts_raw``.
A line that looks like data but does not read is an issue at its line; no row from input with headers
is a ParseError saying what was expected and what was seen.

Reports are numbered from 1 in the order printed; a new report starts at a timestamp line, at a banner,
or when an avg-cpu or Device block comes again.  After a banner, the first report holds the averages
since boot, unless a pasted command line shows ``-y``; without a banner (a cut excerpt)
``since_boot`` is null.  ``-o JSON`` from sysstat < 12.1.5 with ``-y`` (``"statistics": [`` then a lone
``,``) is repaired and read as ``-y`` (no report since boot); JSON cut short (iostat interrupted) is read
line by line, with an issue for the cut.

Schema
------
``iostat_host`` (one row, from the banner ``Linux <kernel> (<host>) <date> _<arch>_ (<n> CPU)``):
``line`` int; ``kernel`` str; ``hostname`` str; ``date`` str (as printed, locale format);
``arch`` str; ``ncpu`` int; ``host`` str (launcher tag of the line, null without one; every table has it).

``iostat_cpu`` (one row per avg-cpu block): ``line`` int; ``report_no`` int; ``since_boot`` bool
(null when unknown); ``ts_raw`` str (``-t`` timestamp as printed, or null); ``user_pct``,
``nice_pct``, ``system_pct``, ``iowait_pct``, ``steal_pct``, ``idle_pct`` float, percent.

``iostat_device`` (one row per device per report): ``line`` int; ``report_no`` int; ``since_boot``
bool; ``ts_raw`` str; ``device`` str; ``tps`` float (plain ``-d`` only); ``r_s``, ``w_s``, ``d_s``,
``f_s`` float, requests/s; ``rkb_s``, ``wkb_s``, ``dkb_s`` float, kB/s; ``rrqm_s``, ``wrqm_s``
float, merges/s; ``r_await_ms``, ``w_await_ms``, ``d_await_ms``, ``f_await_ms``, ``await_ms``
float, ms (``await_ms`` is printed by the old layout only); ``aqu_sz`` float (avg queue length);
``rareq_sz_kb``, ``wareq_sz_kb``, ``areq_sz_kb`` float, kB (``areq_sz_kb`` from the old
``avgrq-sz``, sectors / 2); ``svctm_ms`` float, ms; ``util_pct`` float, percent.
Columns a layout does not print are null.  As printed (null when not printed): ``rmb_s``,
``wmb_s``, ``dmb_s`` MB/s; ``rsec_s``, ``wsec_s`` sectors/s; ``kb_read_s``, ``kb_wrtn_s``,
``kb_dscd_s``, ``mb_read_s``, ``mb_wrtn_s``, ``mb_dscd_s``, ``blk_read_s``, ``blk_wrtn_s``,
``blk_dscd_s`` float; ``kb_read``, ``kb_wrtn``, ``kb_dscd``, ``mb_read``, ``mb_wrtn``, ``mb_dscd``,
``blk_read``, ``blk_wrtn``, ``blk_dscd`` int (totals); ``drqm_s``, ``pct_rrqm``, ``pct_wrqm``,
``pct_drqm``, ``r_await``, ``w_await``, ``d_await``, ``f_await``, ``await`` (ms), ``avgqu_sz``,
``rareq_sz``, ``wareq_sz``, ``dareq_sz``, ``areq_sz`` (kB), ``avgrq_sz`` (sectors), ``svctm`` (ms),
``pct_util``, ``kb_s``, ``mb_s``, ``rqm_s`` (``-s``) float.  Where the printed name is the normalised
one (``tps``, ``r_s``, ``w_s``, ``d_s``, ``f_s``, ``rkb_s``, ``wkb_s``, ``dkb_s``, ``rrqm_s``,
``wrqm_s``, ``aqu_sz``) one column is both.  ``extra`` str: JSON object of unknown columns.

``iostat_cpu`` also has, as printed: ``pct_user``, ``pct_nice``, ``pct_system``, ``pct_sys`` (old
sysstat), ``pct_iowait``, ``pct_steal``, ``pct_idle`` float; ``extra`` str (JSON, unknown columns).

With ``-o JSON``, ``line`` is the line of the entry's ``nodename``, ``avg-cpu`` or ``disk_device``
key, and the JSON keys are mapped to the text header's names (``util`` -> ``pct_util``, ``rrqm`` ->
``pct_rrqm``, ``rkB/s`` -> ``rkb_s``).

Examples
--------
>>> r = parse(SAMPLE)
>>> r.rows("iostat_host")[0]["hostname"], r.rows("iostat_cpu")[0]["iowait_pct"]
('aks-main-10212767-vmss000001', 1.9)
>>> d = r.rows("iostat_device")[0]
>>> d["device"], d["w_s"], d["wkb_s"], d["await_ms"], d["aqu_sz"], d["util_pct"], d["since_boot"]
('sda', 65.0, 504.0, 3.02, 0.01, 0.8, True)
"""  # noqa: E501

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, cast

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import Cleaned, clean_lines, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="iostat",
    title="sysstat iostat (CPU and extended device statistics)",
    commands=("iostat -c -d -x -k 2 3",),
    tables=("iostat_host", "iostat_cpu", "iostat_device"),
    versions_seen=(
        "sysstat 10.x/11.x old layout",
        "sysstat 11.6 interim layout",
        "sysstat 12.x layout with d/s, f/s",
        "plain -d report (kB, -m MB)",
        "-o JSON",
    ),
)

_REPORT = (
    Column("line", "int", "line of the row"),
    Column("report_no", "int", "1-based report"),
    Column("since_boot", "bool", "report holds since-boot averages (null: unknown)"),
    Column("ts_raw", "str", "-t timestamp as printed"),
    Column("host", "str", "launcher tag of the line (pdsh host, srun rank, pod), null without one"),
)
_CPU = ("user_pct", "nice_pct", "system_pct", "iowait_pct", "steal_pct", "idle_pct")
#: avg-cpu labels as printed (``%sys``: sysstat < 5.0.5) -> normalised column.
_CPU_NORM = {"pct_user": "user_pct", "pct_nice": "nice_pct", "pct_system": "system_pct", "pct_sys": "system_pct",
             "pct_iowait": "iowait_pct", "pct_steal": "steal_pct", "pct_idle": "idle_pct"}  # fmt: skip
_CPU_RAW = ("pct_user", "pct_nice", "pct_system", "pct_sys", "pct_iowait", "pct_steal", "pct_idle")
_CPU_EMPTY = dict.fromkeys(_CPU + _CPU_RAW)
#: Device column as printed (snake-cased by _key) -> (normalised column, factor to kB/s, kB or ms).
_DEV_COLS: dict[str, tuple[str, float]] = {
    "tps": ("tps", 1), "r_s": ("r_s", 1), "w_s": ("w_s", 1), "d_s": ("d_s", 1), "f_s": ("f_s", 1),
    "rkb_s": ("rkb_s", 1), "wkb_s": ("wkb_s", 1), "dkb_s": ("dkb_s", 1),
    "rmb_s": ("rkb_s", 1024), "wmb_s": ("wkb_s", 1024), "dmb_s": ("dkb_s", 1024),
    "rsec_s": ("rkb_s", 0.5), "wsec_s": ("wkb_s", 0.5),
    "kb_read_s": ("rkb_s", 1), "kb_wrtn_s": ("wkb_s", 1), "kb_dscd_s": ("dkb_s", 1),
    "mb_read_s": ("rkb_s", 1024), "mb_wrtn_s": ("wkb_s", 1024), "mb_dscd_s": ("dkb_s", 1024),
    "blk_read_s": ("rkb_s", 0.5), "blk_wrtn_s": ("wkb_s", 0.5), "blk_dscd_s": ("dkb_s", 0.5),
    "rrqm_s": ("rrqm_s", 1), "wrqm_s": ("wrqm_s", 1),
    "r_await": ("r_await_ms", 1), "w_await": ("w_await_ms", 1), "d_await": ("d_await_ms", 1),
    "f_await": ("f_await_ms", 1), "await": ("await_ms", 1),
    "aqu_sz": ("aqu_sz", 1), "avgqu_sz": ("aqu_sz", 1),
    "rareq_sz": ("rareq_sz_kb", 1), "wareq_sz": ("wareq_sz_kb", 1), "areq_sz": ("areq_sz_kb", 1),
    "avgrq_sz": ("areq_sz_kb", 0.5), "svctm": ("svctm_ms", 1), "pct_util": ("util_pct", 1),
}  # fmt: skip
_DEV = ("device", "tps", "r_s", "w_s", "d_s", "f_s", "rkb_s", "wkb_s", "dkb_s", "rrqm_s", "wrqm_s",
        "r_await_ms", "w_await_ms", "d_await_ms", "f_await_ms", "await_ms", "aqu_sz",
        "rareq_sz_kb", "wareq_sz_kb", "areq_sz_kb", "svctm_ms", "util_pct")  # fmt: skip
#: Device columns under the tool's own name (and unit), as printed; names shared with _DEV are
#: the same column (same value, same unit).
_DEV_RAW: dict[str, tuple[str, str]] = {
    "rmb_s": ("float", "MB/s read"), "wmb_s": ("float", "MB/s written"), "dmb_s": ("float", "MB/s discarded"),
    "rsec_s": ("float", "sectors/s read"), "wsec_s": ("float", "sectors/s written"),
    "kb_read_s": ("float", "kB/s read (plain report)"), "kb_wrtn_s": ("float", "kB/s written"),
    "kb_dscd_s": ("float", "kB/s discarded"), "mb_read_s": ("float", "MB/s read (plain report, -m)"),
    "mb_wrtn_s": ("float", "MB/s written"), "mb_dscd_s": ("float", "MB/s discarded"),
    "blk_read_s": ("float", "blocks (sectors)/s read"), "blk_wrtn_s": ("float", "blocks/s written"),
    "blk_dscd_s": ("float", "blocks/s discarded"),
    "kb_read": ("int", "kB read in the interval (or since boot)"), "kb_wrtn": ("int", "kB written"),
    "kb_dscd": ("int", "kB discarded"), "mb_read": ("int", "MB read"), "mb_wrtn": ("int", "MB written"),
    "mb_dscd": ("int", "MB discarded"), "blk_read": ("int", "blocks read"), "blk_wrtn": ("int", "blocks written"),
    "blk_dscd": ("int", "blocks discarded"),
    "drqm_s": ("float", "discard merges/s"), "pct_rrqm": ("float", "percent of reads merged"),
    "pct_wrqm": ("float", "percent of writes merged"), "pct_drqm": ("float", "percent of discards merged"),
    "r_await": ("float", "ms"), "w_await": ("float", "ms"), "d_await": ("float", "ms"), "f_await": ("float", "ms"),
    "await": ("float", "ms"), "avgqu_sz": ("float", "avg queue length (old name)"),
    "rareq_sz": ("float", "kB"), "wareq_sz": ("float", "kB"), "dareq_sz": ("float", "kB"),
    "areq_sz": ("float", "kB (-s)"), "avgrq_sz": ("float", "sectors (old layout)"), "svctm": ("float", "ms"),
    "pct_util": ("float", "percent"), "kb_s": ("float", "kB/s (-s)"), "mb_s": ("float", "MB/s (-s -m)"),
    "rqm_s": ("float", "merges/s (-s)"),
}  # fmt: skip
_DEV_ALL = _DEV + tuple(c for c in _DEV_RAW if c not in _DEV)
_DEV_EMPTY = dict.fromkeys(_DEV_ALL)
#: an empty iostat_device row in schema order (report columns, device columns, extra)
_DEV_TEMPLATE: dict[str, Any] = {
    **dict.fromkeys(("line", "report_no", "since_boot", "ts_raw", "host")),
    **_DEV_EMPTY,
    "extra": "{}",
}
_DEV_INT = frozenset(c for c, (kind, _) in _DEV_RAW.items() if kind == "int")
_DEV_KNOWN = frozenset(_DEV_RAW) | frozenset(_DEV_COLS)
_EXTRA = Column("extra", "str", "JSON object of columns not known to this parser: printed name -> number")

SCHEMA = {
    "iostat_host": (
        Column("line", "int", "banner line"),
        Column("kernel", "str", "kernel release"),
        Column("hostname", "str", "host name"),
        Column("date", "str", "date as printed (locale format)"),
        Column("arch", "str", "machine architecture"),
        Column("ncpu", "int", "CPU count"),
        Column("host", "str", "launcher tag of the banner line (pdsh host, srun rank, pod)"),
    ),
    "iostat_cpu": _REPORT
    + tuple(Column(c, "float", "percent of CPU time") for c in _CPU)
    + tuple(Column(c, "float", "as printed (%" + c[4:] + ")") for c in _CPU_RAW)
    + (_EXTRA,),
    "iostat_device": _REPORT
    + (Column("device", "str", "device name"),)
    + tuple(Column(c, "float", "see module docstring") for c in _DEV[1:])
    + tuple(Column(c, *_DEV_RAW[c]) for c in _DEV_ALL[len(_DEV) :])
    + (_EXTRA,),
}

_BANNER = re.compile(
    r"^Linux\s+(?P<kernel>\S+)\s+(?:\((?P<host>[^)]*)\)\s+)?(?P<date>.*?)\s+"
    r"(?:_(?P<arch>\S+)_\s+)?\((?P<ncpu>\d+)\s+CPU\)\s*$"
)
_TS = re.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}[ T]\d{1,2}:\d\d:\d\d(?:\s*[AP]M)?(?:\s*[+-]\d{4}|Z)?$")
_NUM = re.compile(r"^-?\d+(?:[.,]\d+)?$")
_ARTEFACT = re.compile(r"^(?:\[\.\.\.\]|\.\.\.+|\^C|…)$")
_RANK = {"ts": 0, "cpu": 1, "dev": 2}
_KEYS: dict[str, str] = {}  # printed label -> column name, filled by _key
_NON_ALNUM = re.compile(r"[^a-z0-9]+")
#: str.translate table deleting what a plain number is made of (an empty result: all cells are numbers)
_PLAIN_NUMBER = str.maketrans("", "", "0123456789.-")
_JSON = re.compile(r'^\s*\{\s*"sysstat"\s*:')
_JSON_Y = re.compile(r"\[\s*,")  # sysstat < 12.1.5 with -y: "statistics": [\n,\n{...}
_JSON_ELIDED = re.compile(r"^\s*(?:\.{3}|…),?\s*$", re.MULTILINE)
_JSON_TRAILING = re.compile(r",(\s*[\]}])")
_JSON_FIELD = re.compile(
    r'"(nodename|sysname|release|machine|number-of-cpus|date|timestamp)"\s*:\s*("[^"]*"|\d+)'
)
_JSON_CPU = re.compile(r'"avg-cpu"\s*:\s*(\{[^{}]*\})')
_JSON_DISK = re.compile(r'\{\s*"disk_device"[^{}]*\}')
#: An iostat command line pasted with its output (``# iostat -xy 1 1``, ``./iostat -mt 1 sda``).
_IOSTAT_CMD = re.compile(r"(?:^|[\s/$#>|;&])iostat(?:\s|$)")
_DATE = re.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}$")
_CLOCK = re.compile(r"^\d{1,2}:\d\d:\d\d$")
#: ``-o JSON`` keys that differ from the snake-cased text header (``%util`` is ``util`` there).
_JSON_KEYS = {"util": "pct_util", "rrqm": "pct_rrqm", "wrqm": "pct_wrqm", "drqm": "pct_drqm"}


def detect(text: str) -> int:
    """Confidence that text is iostat output (a grep'd, prefixed or quoted excerpt too)."""
    if "avg-cpu" not in text and "Device" not in text and "disk_device" not in text:
        return 0
    head = "\n".join(_clean(text[:65536]).lines)
    if re.search(r"^\s*(?:Datetime\s+)?avg-cpu:\s+%user", head, re.MULTILINE):
        return 85
    if re.search(
        r"^[ \t]*(?:Datetime[ \t]+)?Device:?[ \t]+(?:\S+[ \t]+)*?(?:r/s|tps|rrqm/s)(?=\s)", head, re.M
    ):
        return 85
    if _JSON.match(head) and ('"avg-cpu"' in head or '"disk_device"' in head):
        return 85
    if re.search(r"^[ \t]*(?:r/s|w/s|tps|rrqm/s|d/s|f/s)[ \t]+(?:\S+[ \t]+)*?Device:?[ \t]*$", head, re.M):
        return 85  # --human / --pretty: the Device column last
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    cleaned = _clean(text)
    if "sysstat" in text[:4096] and _JSON.match("\n".join(cleaned.lines[:40])):
        return _parse_json(text, cleaned.lines)
    reader = _Reader(cleaned, _RawLines(text))
    for index, line in enumerate(cleaned.lines):
        if index >= reader.skip:
            reader.line(index, line)
    return reader.finish()


class _Reader:
    """One capture being read: a state per host (its report, headers, a wrapped device name), the device
    rows read ahead by the plain loop (``skip``), and the issues met."""

    def __init__(self, cleaned: Cleaned, raw_lines: _RawLines) -> None:
        self.cleaned = cleaned
        self.result = ParseResult()
        self.raw_lines = raw_lines  # the lines as printed, for issues: split when the first one is said
        self.noise = set(cleaned.noise)
        self.commands = dict(cleaned.commands)
        self.hosts = cleaned.hosts
        self.states: dict[str | None, dict[str, Any]] = {}
        # a double-spaced paste (a blank after every line): only two blanks in a row end a block
        self.spaced = _double_spaced(cleaned.lines)
        self.skip = 0  # lines before this one were read already, as device rows of one block (_more_rows)
        self.met = _Seen()  # cells and device names met by _more_rows

    def line(self, index: int, line: str) -> None:
        no = index + 1
        host = self.hosts[index] if self.hosts else None
        st = self.states.get(host) or self.states.setdefault(host, _state())
        if no in self.noise:  # a prompt, ^Z, a fence, an elision: not the end of a block
            if no in self.commands and _IOSTAT_CMD.search(self.commands[no]):
                _command(st, self.commands[no])
            return
        tokens = line.split()
        if not tokens:
            self._blank(index, st)
            return
        stamp = None
        if (
            tokens[0] == "Datetime" and len(tokens) > 1
        ):  # `iostat -T` (proposed): date and time before each row
            tokens, st["dated"] = tokens[1:], True
        elif st["dated"] and (dated := _dated(tokens)):
            stamp, tokens = dated
        if self._head(no, line, tokens, st, host):
            return
        if st["cpu_cols"] is not None or (
            st["header"] is None and len(tokens) == 6 and all(_NUM.match(t.rstrip("%")) for t in tokens)
        ):
            self._cpu(index, tokens, stamp, st, host)
        elif self._header_or_command(line, tokens, st):
            return
        elif st["header"] is not None:
            self._device_in_block(index, line, tokens, stamp, st, host)
        else:
            self.result.issue(
                no, self.raw_lines[index], "line outside any iostat block (banner, avg-cpu, Device)"
            )

    def _blank(self, index: int, st: dict[str, Any]) -> None:
        """A blank line ends a block (in a double-spaced paste, the second blank in a row does)."""
        if not self.spaced or (index and not self.cleaned.lines[index - 1].strip()):
            st["header"] = st["cpu_cols"] = None
            if (pending := st["pending"]) is not None:
                self._no_numbers(pending[0])
                st["pending"] = None

    def _no_numbers(self, no: int) -> None:
        self.result.issue(no, self.raw_lines[no - 1], "device name without its numbers")

    def _head(self, no: int, line: str, tokens: list[str], st: dict[str, Any], host: str | None) -> bool:
        """The banner, a report's time, an avg-cpu header: True when the line was one."""
        first = tokens[0]
        if first == "Linux" and (m := _BANNER.match(line)):
            st.update(banner=True, seen=99, boot=None, dated=False)
            self.result.add("iostat_host", _host(no, m, host))
        elif first[0].isdigit() and _TS.match(line):
            _next(st, "ts")
            st["ts"] = line.strip()
        elif first == "avg-cpu:":
            st["cpu_cols"] = _keys(tokens[1:])
        else:
            return False
        return True

    def _header_or_command(self, line: str, tokens: list[str], st: dict[str, Any]) -> bool:
        """A Device header (first or last), an iostat command line, an artefact: True when it was one."""
        first = tokens[0]
        if first in ("Device:", "Device"):
            _next(st, "dev")
            st["header"], st["dev_last"], st["groups"] = _keys(tokens[1:]), False, None
        elif tokens[-1] in ("Device", "Device:") and len(tokens) > 1 and _LABEL.match(first):
            _device_last_header(st, [_key(t) for t in tokens[:-1]])
        elif "iostat" in line and _IOSTAT_CMD.search(line) and not _NUM.match(tokens[-1]):
            _command(st, line)  # `# iostat -xy 1 1`, `./iostat -mt`
        elif not (first[0] in "[.^…" and _ARTEFACT.match(line.strip())):
            return False
        return True

    def _cpu(
        self, index: int, tokens: list[str], stamp: str | None, st: dict[str, Any], host: str | None
    ) -> None:
        cols, st["cpu_cols"] = st["cpu_cols"] or [c for c in _CPU_RAW if c != "pct_sys"], None
        values = _numbers([t[:-1] if t.endswith("%") else t for t in tokens])  # --human: "0.6%"
        if len(values) != len(cols) or None in values:
            self.result.issue(
                index + 1, self.raw_lines[index], f"expected the {len(cols)} avg-cpu values under its header"
            )
            return
        _next(st, "cpu")
        st["ts"] = stamp or st["ts"]
        cpu = _cpu_row(_report_row(index + 1, st, host), dict(zip(cols, values, strict=True)))
        self.result.add("iostat_cpu", cpu)

    def _device_in_block(
        self,
        index: int,
        line: str,
        tokens: list[str],
        stamp: str | None,
        st: dict[str, Any],
        host: str | None,
    ) -> None:
        """A device row under a Device header (or the numbers of a name printed alone on the line before)."""
        no, result, first = index + 1, self.result, tokens[0]
        st["ts"] = stamp or st["ts"]
        pending, st["pending"] = st["pending"], None
        if len(tokens) == 1 and not st["dev_last"] and not _NUM.match(first):
            # sysstat < 12 with -h: the device name alone, its numbers on the next line
            if pending is not None:
                self._no_numbers(pending[0])
            st["pending"] = (no, first)
            return
        if pending is not None:
            if len(tokens) == len(st["header"]):
                tokens = [pending[1], *tokens]
            else:
                self._no_numbers(pending[0])
        if pending is None and stamp is None and self._plain_rows(index, st):
            return
        if st["dev_last"]:  # --human / --pretty: the device name is the last cell
            tokens = tokens[-1:] + tokens[:-1]
        device = _device(no, tokens, st["header"], st, host)
        if device is None:
            result.issue(
                no,
                self.raw_lines[index],
                f"expected a device name and {len(st['header'])} numbers"
                + (" (with --human units k, M, G, % where printed)" if st["dev_last"] else ""),
            )
        elif st["groups"] is not None and (same := st["groups"][1].get(tokens[0])) is not None:
            _merge(same, device)  # another column group of the same device and report
        else:
            if st["groups"] is not None:
                st["groups"][1][tokens[0]] = device
            result.add("iostat_device", device)

    def _plain_rows(self, index: int, st: dict[str, Any]) -> bool:
        """The rows of the block that read plainly, in one loop (_more_rows); True when it read this one."""
        if self.hosts is not None or st["groups"] is not None or st["dated"] or st["dev_last"]:
            return False
        rows = self.result.tables.get("iostat_device") or []
        self.skip = _more_rows(self.cleaned.lines, index, self.noise, st, rows, self.met)
        if self.skip > index:
            self.result.tables["iostat_device"] = rows
            return True
        return False

    def finish(self) -> ParseResult:
        result = self.result
        for st in self.states.values():
            if (pending := st["pending"]) is not None:
                self._no_numbers(pending[0])
        if result.rows("iostat_host") or result.rows("iostat_cpu") or result.rows("iostat_device"):
            return result
        seen = next((ln.strip() for ln in self.cleaned.lines if ln.strip()), "")[:120]
        if any(st["report"] for st in self.states.values()):
            if result.issues:  # headers, but every value line failed
                first_issue = result.issues[0]
                raise ParseError(
                    f"expected iostat rows under the avg-cpu/Device headers; {len(result.issues)} line(s) not "
                    f"understood, first at line {first_issue.line_no}: {first_issue.line.strip()[:120]!r}"
                )
            return result  # headers of reports without rows (-z, idle)
        raise ParseError(f"expected an iostat banner, avg-cpu block or Device header; saw {seen!r}")


def _clean(text: str) -> Cleaned:
    """clean_lines, without reading ``avg-cpu:`` as a pdsh host tag (an ``iostat -c`` without banner)."""
    cleaned = clean_lines(text)
    if cleaned.hosts and "avg-cpu" in cleaned.hosts:
        cleaned = clean_lines(text, tags=False)
    if cleaned.hosts:  # a kubectl tag alone on a blank line ("[pod/x/c]" once its space is stripped)
        tags = {f"[{h}]" for h in cleaned.hosts if h}
        cleaned.lines[:] = ["" if line in tags else line for line in cleaned.lines]
    return cleaned


def _numbers(cells: list[str]) -> list[float | None]:
    """The cells as numbers (None where one is not): ``float`` when they hold only digits, dots and
    minus signs (the common case), else ``to_float`` (decimal commas ``0,39``)."""
    if not "".join(cells).translate(_PLAIN_NUMBER):
        try:
            return list(map(float, cells))
        except ValueError:  # '1.2.3', '-'
            pass
    return [to_float(t) for t in cells]


def _double_spaced(lines: list[str]) -> bool:
    """True when every text line of the first hundred is followed by a blank one (a paste that doubled
    each newline)."""
    sample = lines[:200]
    texts = [i for i, line in enumerate(sample[:-1]) if line.strip()]
    return len(texts) >= 3 and all(not sample[i + 1].strip() for i in texts)


def _state() -> dict[str, Any]:
    """Per host: report counter, the part last seen, -t stamp, device header, avg-cpu header, -y."""
    return {"report": 0, "seen": -1, "ts": None, "banner": False, "boot": None, "y": None, "header": None,
            "cpu_cols": None, "dated": False, "dev_last": False, "groups": None, "pending": None}  # fmt: skip


def _device_last_header(st: dict[str, Any], header: list[str]) -> None:
    """A header with ``Device`` last (``--human``, ``--pretty``).  ``-x --pretty`` prints a report's
    columns in groups (r, w, d, f), each with its header: a group whose columns are new to the report
    continues it, and its cells join the rows of the same devices."""
    groups = st["groups"]
    if st["seen"] == _RANK["dev"] and st["dev_last"] and groups is not None and not groups[0] & set(header):
        groups[0].update(header)
    else:
        _next(st, "dev")
        st["groups"] = (set(header), {})
    st["header"], st["dev_last"] = header, True


def _merge(row: dict[str, Any], more: dict[str, Any]) -> None:
    """The cells of a further column group (``-x --pretty``) into the device's row of the report."""
    for key, value in more.items():
        if value is not None and row.get(key) is None:
            row[key] = value
    if more["extra"] != "{}":
        row["extra"] = json.dumps({**json.loads(row["extra"]), **json.loads(more["extra"])})


def _command(st: dict[str, Any], command: str) -> None:
    """An iostat command line pasted with its output: ``-y`` says no report is since boot."""
    flags = "".join(a[1:] for a in command.split() if re.match(r"^-[A-Za-z]+$", a))
    st["y"] = "y" in flags


def _dated(tokens: list[str]) -> tuple[str, list[str]] | None:
    """(stamp, rest) of a ``-T`` row: ``09/29/25 15:22:19 sda ...``."""
    if len(tokens) > 2 and _DATE.match(tokens[0]) and _CLOCK.match(tokens[1]):
        n = 3 if tokens[2] in ("AM", "PM") else 2
        return " ".join(tokens[:n]), tokens[n:]
    return None


#: --human suffixes (sysstat's cprintf_unit): sectors, bytes, kB, MB, ... -> bytes
_SUFFIX = {"s": 512.0, "B": 1.0, "k": 1024.0, "M": 1024.0**2, "G": 1024.0**3, "T": 1024.0**4, "P": 1024.0**5}
#: a column's own unit in bytes, from its snake-cased name (kB, MB, sectors/blocks; request sizes in kB)
_UNIT_OF = ((re.compile(r"(?:^|_)kb(?:_|$)|^[rwd]kb_s$|areq_sz$"), 1024.0), (re.compile(r"mb(?:_|$)"), 1024.0**2),
            (re.compile(r"sec_s$|^blk_|avgrq_sz$"), 512.0))  # fmt: skip
_LABEL = re.compile(r"^(?:%?[A-Za-z][\w/%-]*)$")


def _human(cell: str, key: str) -> float | None:
    """A ``--human`` cell in its column's unit: ``67.3k`` in a kB column is 67.3, ``2.1M`` is 2150.4,
    ``1.8G`` 1887436.8; ``21.6%`` in a percent column is 21.6.  None when the suffix does not fit the
    column (a size on a count, a percent on a size).

    >>> _human("2.1M", "dkb_s"), _human("1,5%", "pct_util"), _human("2.8G", "kb_read"), _human("1.2k", "r_s")
    (2150.4, 1.5, 2936012.8, None)
    """
    number = to_float(cell[:-1])
    suffix = cell[-1:]
    if number is None:
        return None
    if suffix == "%":
        return number if key.startswith("pct_") else None
    unit = next((size for pattern, size in _UNIT_OF if pattern.search(key)), None)
    if unit is None or suffix not in _SUFFIX:
        return None
    return round(number * _SUFFIX[suffix] / unit, 6)


class _RawLines:
    """``text.splitlines()``, split at the first line asked for (most captures say no issue)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: list[str] | None = None

    def __getitem__(self, index: int) -> str:
        if self.lines is None:
            self.lines = self.text.splitlines()
        return self.lines[index]


_HEADERS: dict[tuple[str, ...], tuple[str, ...]] = {}  # printed labels of a header -> column names


def _keys(labels: list[str]) -> list[str]:
    """``_key`` of each label of a header (a header is printed again in every report)."""
    printed = tuple(labels)
    keys = _HEADERS.get(printed)
    if keys is None:
        keys = tuple(_key(label) for label in labels)
        if len(_HEADERS) < 1024:
            _HEADERS[printed] = keys
    return list(keys)


def _key(label: str) -> str:
    """A printed column label as a column name: ``%rrqm`` -> ``pct_rrqm``, ``kB_read/s`` -> ``kb_read_s``.

    >>> _key("%util"), _key("kB_read/s"), _key("avgrq-sz"), _key("MB_wrtn"), _key("%iowait")
    ('pct_util', 'kb_read_s', 'avgrq_sz', 'mb_wrtn', 'pct_iowait')
    """
    if (known := _KEYS.get(label)) is not None:
        return known
    key = label.lower().rstrip(":")
    if key.startswith("%"):
        key = "pct_" + key[1:]
    key = _NON_ALNUM.sub("_", key).strip("_")
    if len(_KEYS) < 4096:
        _KEYS[label] = key
    return key


def _next(st: dict[str, Any], part: str) -> None:
    """Start a new report when a part comes again (timestamp < avg-cpu < Device)."""
    if st["report"] == 0 or _RANK[part] <= st["seen"]:
        st["report"] += 1
        if st["banner"] and st["boot"] is None:  # the first report after a banner: since boot
            st["boot"] = st["report"]
        if part != "ts":
            st["ts"] = None
    st["seen"] = _RANK[part]


def _report_row(no: int | None, st: dict[str, Any], host: str | None) -> dict[str, Any]:
    if st["y"]:
        since_boot: bool | None = False
    else:
        since_boot = (st["report"] == st["boot"]) if st["banner"] else None
    row = {"line": no, "report_no": st["report"], "since_boot": since_boot, "ts_raw": st["ts"]}
    row["host"] = host
    return row


def _host(no: int, m: re.Match[str], host: str | None) -> dict[str, Any]:
    return {
        "line": no,
        "kernel": m.group("kernel"),
        "hostname": m.group("host"),
        "date": m.group("date") or None,
        "arch": m.group("arch"),
        "ncpu": int(m.group("ncpu")),
        "host": host,
    }


def _cpu_row(row: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """An iostat_cpu row from printed column name -> value: as printed, normalised beside, the rest in extra."""
    row.update(_CPU_EMPTY)
    extra: dict[str, Any] = {}
    for key, value in values.items():
        if key in _CPU_NORM and isinstance(value, float):
            row[key] = value
            row[_CPU_NORM[key]] = value
        else:
            extra[key] = value
    row["extra"] = json.dumps(extra) if extra else "{}"
    return row


def _device_row(row: dict[str, Any], device: str, values: dict[str, Any]) -> dict[str, Any] | None:
    """An iostat_device row from printed column name -> value; None when a count is not an integer."""
    row.update(_DEV_EMPTY)
    row["device"] = device
    extra: dict[str, Any] = {}
    for key, value in values.items():
        if value.__class__ is not float:  # only from -o JSON: kept as it came
            extra[key] = value
            continue
        if key in _DEV_INT:
            if not value.is_integer():
                return None
            row[key] = int(value)
        elif key in _DEV_KNOWN:
            row[key] = value
        else:
            extra[key] = value
        if norm := _DEV_COLS.get(key):
            row[norm[0]] = value if norm[1] == 1 else round(value * norm[1], 6)
    row["extra"] = json.dumps(extra) if extra else "{}"
    return row


def _device(
    no: int, tokens: list[str], header: list[str], st: dict[str, Any], host: str | None
) -> dict[str, Any] | None:
    if len(tokens) != len(header) + 1 or _NUM.match(tokens[0]):
        return None
    numbers = _numbers(tokens[1:])
    human = None in numbers and st["dev_last"]
    if human:  # --human: "67.3k", "1.8G", "21.6%"
        numbers = [
            n if n is not None else _human(c, k) for n, c, k in zip(numbers, tokens[1:], header, strict=True)
        ]
    if None in numbers:
        return None
    values = cast("list[float]", numbers)  # none of them None; the whole counts become int below
    plan = _PLANS.get(tuple(header)) or _plan(header)
    for i in plan.ints:  # counts (kB_read ...) must be whole numbers (--human: rounded to one)
        if not values[i].is_integer():
            if not human:
                return None
            values[i] = round(values[i])
        values[i] = int(values[i])
    row = {**_report_base(st, host), "line": no, "device": tokens[0]}
    row.update(zip(header, values, strict=True))  # every printed column under its own name...
    for i, column, factor in plan.norm:  # ...the normalised ones beside
        row[column] = values[i] if factor == 1 else round(values[i] * factor, 6)
    if plan.extra:  # columns this parser does not know: in extra, not as columns
        row["extra"] = json.dumps({header[i]: values[i] for i in plan.extra})
        for i in plan.extra:
            row.pop(header[i], None)  # a name printed twice is popped once
    return row


def _report_base(st: dict[str, Any], host: str | None) -> dict[str, Any]:
    """An empty iostat_device row with the report's fields (kept while the report lasts); never changed."""
    key = (st["report"], st["ts"], st["y"], st["boot"], st["banner"], host)
    base = st.get("_base")
    if base is None or base[0] != key:
        report = _report_row(None, st, host)
        del report["line"]
        base = st["_base"] = (key, {**_DEV_TEMPLATE, **report})
    return cast("dict[str, Any]", base[1])


#: First cells that make a line something else than a device row to the main loop (a banner, a header...)
_NOT_A_DEVICE = frozenset(("Linux", "avg-cpu:", "Device:", "Device", "Datetime"))


def _more_rows(
    lines: list[str],
    start: int,
    noise: set[int],
    st: dict[str, Any],
    rows: list[dict[str, Any]],
    seen: _Seen,
) -> int:
    """The device rows of a report from line ``start`` on, read in one loop while each line is one the main
    loop would read the same way, into the same row: in an untagged, undated report whose header has only
    known columns, a device name and as many plain numbers as the header has columns.  Returns the index
    of the first line left to the main loop (``start`` when it reads none)."""
    header = st["header"]
    plan = _PLANS.get(tuple(header)) or _plan(header)
    width = len(header) + 1
    if plan.extra or width < 2:
        return start
    copy = _report_base(st, None).copy
    beside, at, scaled, ints, pick = plan.beside, plan.at, plan.scaled, plan.ints, plan.pick
    number, devices, append = seen.numbers.__getitem__, seen.devices, rows.append
    # cells are remembered where that pays: rates and percents repeat (0.00), the totals of a plain report
    # (kB_read ...) grow with every report
    remember = not ints
    done = start
    for no in range(start + 1, len(lines) + 1):  # the line numbers (indices + 1)
        if noise and no in noise:
            break
        tokens = lines[no - 1].split()
        if len(tokens) != width:
            break
        device = tokens[0]
        if device not in devices:  # each name is looked at once: the same devices print in every report
            if (
                device[0] in "-[.^…"
                or device[0].isdigit()  # a -t stamp, a number (_NUM): not a device name
                or device in _NOT_A_DEVICE
                or "iostat" in device  # the only cell that is no number: a pasted command line
            ):
                break
            devices.add(device)
        cells = tokens[1:]
        try:  # plain numbers only (decimal commas, --human units, a header...: the main loop's reading)
            if remember:
                values: list[Any] = list(map(number, cells))
            elif "".join(cells).translate(_PLAIN_NUMBER):
                break
            else:
                values = list(map(float, cells))
        except ValueError:
            break
        if ints:  # counts (kB_read ...) are whole numbers, as ints
            whole = [values[i] for i in ints]
            if not all(map(float.is_integer, whole)):
                break
            for i, value in zip(ints, whole, strict=True):
                values[i] = int(value)
        row = copy()
        row["line"] = no
        row["device"] = device
        # every printed column under its own name, the normalised ones beside (as _device sets them)
        row.update(zip(header, values, strict=True))
        if scaled:
            normalised = [values[i] for i in at]
            for k, factor in scaled:
                normalised[k] = round(normalised[k] * factor, 6)
            row.update(zip(beside, normalised, strict=True))
        elif at:
            row.update(zip(beside, pick(values), strict=True))
        append(row)
        done = no
    return done


class _Numbers(dict[str, float]):
    """The ``float`` of each cell made of digits, dots and minus signs only (ValueError for any other, as
    for one ``float`` does not read), remembered up to ``_CELLS_MAX`` of them."""

    def __missing__(self, cell: str) -> float:
        if cell.translate(_PLAIN_NUMBER):
            raise ValueError(cell)
        value = float(cell)
        if len(self) < _CELLS_MAX:
            self[cell] = value
        return value


@dataclass
class _Seen:
    """What ``_more_rows`` learns of a capture, kept for the rest of its parse: the ``float`` of each plain
    number cell met in a report without totals (its cells are mostly a few values, ``0.00``), and the
    first cells found to be device names."""

    numbers: _Numbers = field(default_factory=_Numbers)
    devices: set[str] = field(default_factory=set)


_CELLS_MAX = 1 << 16


@dataclass(frozen=True)
class _Plan:
    """How the cells of a Device header become a row (computed once per header)."""

    ints: tuple[int, ...]  # count columns (kB_read ...)
    norm: tuple[tuple[int, str, float], ...]  # normalised columns beside the printed one
    extra: tuple[int, ...]  # columns not known
    #: for _more_rows: the normalised columns in norm's order, the cells they are of, (position among
    #: them, factor) of those scaled, and a function giving those cells of a row (a tuple)
    beside: tuple[str, ...] = ()
    at: tuple[int, ...] = ()
    scaled: tuple[tuple[int, float], ...] = ()
    pick: Callable[[list[Any]], tuple[Any, ...]] = tuple


_PLANS: dict[tuple[str, ...], _Plan] = {}


def _plan(header: list[str]) -> _Plan:
    norm = tuple(
        (i, _DEV_COLS[k][0], _DEV_COLS[k][1])
        for i, k in enumerate(header)
        if k in _DEV_COLS and (_DEV_COLS[k][0] != k or _DEV_COLS[k][1] != 1)
    )
    at = tuple(i for i, _, _ in norm)
    ints = tuple(i for i, k in enumerate(header) if k in _DEV_INT)
    plan = _Plan(
        ints=ints,
        norm=norm,
        extra=tuple(i for i, k in enumerate(header) if k not in _DEV_KNOWN),
        beside=tuple(column for _, column, _ in norm),
        at=at,
        scaled=tuple((n, factor) for n, (_, _, factor) in enumerate(norm) if factor != 1),
        pick=itemgetter(*at) if len(at) > 1 else lambda values: tuple(values[i] for i in at),
    )
    if len(_PLANS) < 1024:
        _PLANS[tuple(header)] = plan
    return plan


def _parse_json(text: str, lines: list[str]) -> ParseResult:
    """``iostat -o JSON`` (sysstat >= 11.5): hosts -> statistics -> avg-cpu and disk.

    Repaired first: the ``[\\n,`` that ``-y`` left in sysstat < 12.1.5 (the first, since-boot, report
    skipped: so no report is since boot), author elisions (``...,``) and the trailing commas they
    leave.  Output cut short (iostat interrupted, a pasted head) is read line by line: sysstat writes
    each avg-cpu and disk entry on one line.
    """
    body = "\n".join(lines)
    skipped_first = bool(_JSON_Y.search(body))
    body = _JSON_Y.sub("[", body)
    body = _JSON_ELIDED.sub("", body)
    body = _JSON_TRAILING.sub(r"\1", body)
    result = ParseResult()
    try:
        doc = json.loads(body)
        hosts = doc["sysstat"]["hosts"]
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        _salvage_json(result, lines, skipped_first, str(e) or type(e).__name__)
        return result
    at = {
        k: iter([n for n, t in enumerate(lines, 1) if f'"{k}"' in t])
        for k in ("nodename", "avg-cpu", "disk_device")
    }
    if not isinstance(hosts, list) or not hosts:
        raise ParseError("expected iostat -o JSON with sysstat.hosts[]; saw no hosts")
    for host in hosts:
        if not isinstance(host, dict):
            result.issue(0, json.dumps(host)[:200], "a hosts[] entry that is not an object")
            continue
        result.add(
            "iostat_host", _json_host(next(at["nodename"], None) if "nodename" in host else None, host)
        )
        st = {**_state(), "banner": True, "y": skipped_first}
        for report in host.get("statistics") or []:
            if not isinstance(report, dict):
                result.issue(0, json.dumps(report)[:200], "a statistics[] entry that is not an object")
                continue
            st["report"] += 1
            st["boot"] = st["boot"] or st["report"]
            st["ts"] = report.get("timestamp")
            cpu = report.get("avg-cpu")
            if isinstance(cpu, dict):
                values = {"pct_" + k: _num(v) for k, v in cpu.items()}
                result.add("iostat_cpu", _cpu_row(_report_row(next(at["avg-cpu"], None), st, None), values))
            for disk in report.get("disk") or []:
                no = (
                    next(at["disk_device"], None)
                    if isinstance(disk, dict) and "disk_device" in disk
                    else None
                )
                _json_disk(result, no, disk, st, lines)
    return result


def _json_host(no: int | None, host: dict[str, Any]) -> dict[str, Any]:
    ncpu = host.get("number-of-cpus")
    return {
        "line": no,
        "kernel": host.get("release"),
        "hostname": host.get("nodename"),
        "date": host.get("date"),
        "arch": host.get("machine"),
        "ncpu": ncpu if isinstance(ncpu, int) else None,
        "host": None,
    }


def _json_disk(result: ParseResult, no: int | None, disk: Any, st: dict[str, Any], lines: list[str]) -> None:
    name = disk.get("disk_device") if isinstance(disk, dict) else None
    if not isinstance(name, str):
        result.issue(no or 0, json.dumps(disk)[:200], "disk entry without a device name")
        return
    values = {_JSON_KEYS.get(k, _key(k)): _num(v) for k, v in disk.items() if k != "disk_device"}
    row = _device_row(_report_row(no, st, None), name, values)
    if row is None:
        result.issue(no or 0, lines[no - 1] if no else json.dumps(disk)[:200], "a count is not an integer")
    else:
        result.add("iostat_device", row)


def _salvage_json(result: ParseResult, lines: list[str], skipped_first: bool, error: str) -> None:
    """Read iostat JSON that does not parse (cut short) line by line; the cut is an issue."""
    st = {**_state(), "banner": True, "y": skipped_first}
    host: dict[str, Any] = {}
    host_line = None
    has_disk = has_cpu = False
    for no, line in enumerate(lines, 1):
        if m := _JSON_FIELD.search(line):
            key, value = m.group(1), m.group(2)
            if key == "nodename":
                host, host_line = {}, no
            if key != "timestamp":
                host[key] = _value(value)
                if key == "number-of-cpus":  # the last field before statistics
                    result.add("iostat_host", _json_host(host_line, host))
                continue
            st["report"] += 1
            st["boot"] = st["boot"] or st["report"]
            st["ts"], has_disk, has_cpu = _value(value), False, False
        elif (m := _JSON_CPU.search(line)) and (cpu := _loads(m.group(1))) is not None:
            if has_cpu or has_disk or not st["report"]:
                st["report"] += 1
                st["boot"] = st["boot"] or st["report"]
                st["ts"], has_disk = None, False
            has_cpu = True
            result.add(
                "iostat_cpu",
                _cpu_row(_report_row(no, st, None), {"pct_" + k: _num(v) for k, v in cpu.items()}),
            )
        elif '"disk"' in line and has_disk:
            st["report"] += 1
            st["ts"], has_disk, has_cpu = None, False, False
        elif (m := _JSON_DISK.search(line)) and (disk := _loads(m.group(0))) is not None:
            if not st["report"]:
                st["report"] = st["boot"] = 1
            has_disk = True
            _json_disk(result, no, disk, st, lines)
        elif '"disk_device"' in line:
            result.issue(no, line, "a disk entry cut short or unreadable")
        elif '"avg-cpu"' in line:
            result.issue(no, line, "an avg-cpu entry cut short or unreadable")
    if not (result.rows("iostat_cpu") or result.rows("iostat_device")):
        raise ParseError(
            f"expected iostat -o JSON; it does not parse ({error}) and no avg-cpu or disk entry reads"
        )
    last = next((n for n in range(len(lines), 0, -1) if lines[n - 1].strip()), 0)
    result.issue(
        last,
        lines[last - 1] if last else "",
        f"iostat JSON cut short or malformed ({error}): read line by line",
    )


def _value(text: str) -> Any:
    """One JSON field value as JSON reads it, else the text as printed (a cut or mangled value)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text.strip().strip('"')


def _loads(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _num(value: Any) -> Any:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
