"""Block-device and CPU statistics from sysstat ``iostat`` (old and new column layouts).

Commands the collector runs::

    iostat -c -d -x -k 2 3

Sample (lines of tests/fixtures/iostat/aks-node-xy-old-format.txt)::

    Linux 4.15.0-1064-azure (aks-main-10212767-vmss000001)  02/10/20        _x86_64_        (8 CPU)

    avg-cpu:  %user   %nice %system %iowait  %steal   %idle
               3.42    0.00    2.92    1.90    0.00   91.76

    Device:         rrqm/s   wrqm/s     r/s     w/s    rkB/s    wkB/s avgrq-sz avgqu-sz   await r_await w_await  svctm  %util
    sda               0.00    56.00    0.00   65.00     0.00   504.00    15.51     0.01    3.02    0.00    3.02   0.12   0.80

Both device layouts are read by column name: the old one (sysstat < 11.5: ``Device:`` with a colon,
``rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util``) and the new
one (``Device``, ``r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s ... d/s ... f/s f_await aqu-sz %util``),
any subset of them, and the plain ``-d`` table (``tps kB_read/s kB_wrtn/s``).  MB/s (``-m``) and
sectors/s columns are converted to kB/s.  Decimal commas, locale banner dates, ``-t`` timestamp lines,
-z reports without device rows, an avg-cpu value row whose header was cut off (six numbers alone) and
``[...]``/``^C`` lines are accepted.  Not handled: ``-h`` (human units, device name last) and ``-o JSON``.

Reports are numbered from 1 in the order printed; a new report starts at a timestamp line or when an
avg-cpu or Device block comes again.  When the banner is present, report 1 holds the averages since
boot (unless iostat ran with ``-y``, which the output does not show); without the banner (a cut
excerpt) ``since_boot`` is null.

Schema
------
``iostat_host`` (one row, from the banner ``Linux <kernel> (<host>) <date> _<arch>_ (<n> CPU)``):
``line`` int; ``kernel`` str; ``hostname`` str; ``date`` str (as printed, locale format);
``arch`` str; ``ncpu`` int.

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
Columns a layout does not print are null.

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

import re
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import strip_prefix, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="iostat",
    title="sysstat iostat (CPU and extended device statistics)",
    commands=("iostat -c -d -x -k 2 3",),
    tables=("iostat_host", "iostat_cpu", "iostat_device"),
    versions_seen=("sysstat 10.x/11.x old layout", "sysstat 11.5+/12.x new layout with d/s, f/s"),
)

_REPORT = (
    Column("line", "int", "line of the row"),
    Column("report_no", "int", "1-based report"),
    Column("since_boot", "bool", "report holds since-boot averages (null: unknown)"),
    Column("ts_raw", "str", "-t timestamp as printed"),
)
_CPU = ("user_pct", "nice_pct", "system_pct", "iowait_pct", "steal_pct", "idle_pct")
#: Device header label -> (column, factor to kB/s or ms).
_DEV_COLS: dict[str, tuple[str, float]] = {
    "tps": ("tps", 1), "r/s": ("r_s", 1), "w/s": ("w_s", 1), "d/s": ("d_s", 1), "f/s": ("f_s", 1),
    "rkb/s": ("rkb_s", 1), "wkb/s": ("wkb_s", 1), "dkb/s": ("dkb_s", 1),
    "rmb/s": ("rkb_s", 1024), "wmb/s": ("wkb_s", 1024), "dmb/s": ("dkb_s", 1024),
    "rsec/s": ("rkb_s", 0.5), "wsec/s": ("wkb_s", 0.5),
    "kb_read/s": ("rkb_s", 1), "kb_wrtn/s": ("wkb_s", 1), "kb_dscd/s": ("dkb_s", 1),
    "mb_read/s": ("rkb_s", 1024), "mb_wrtn/s": ("wkb_s", 1024), "mb_dscd/s": ("dkb_s", 1024),
    "rrqm/s": ("rrqm_s", 1), "wrqm/s": ("wrqm_s", 1),
    "r_await": ("r_await_ms", 1), "w_await": ("w_await_ms", 1), "d_await": ("d_await_ms", 1),
    "f_await": ("f_await_ms", 1), "await": ("await_ms", 1),
    "aqu-sz": ("aqu_sz", 1), "avgqu-sz": ("aqu_sz", 1),
    "rareq-sz": ("rareq_sz_kb", 1), "wareq-sz": ("wareq_sz_kb", 1), "areq-sz": ("areq_sz_kb", 1),
    "avgrq-sz": ("areq_sz_kb", 0.5), "svctm": ("svctm_ms", 1), "%util": ("util_pct", 1),
}  # fmt: skip
_DEV = ("device", "tps", "r_s", "w_s", "d_s", "f_s", "rkb_s", "wkb_s", "dkb_s", "rrqm_s", "wrqm_s")
_DEV += ("r_await_ms", "w_await_ms", "d_await_ms", "f_await_ms", "await_ms", "aqu_sz")
_DEV += ("rareq_sz_kb", "wareq_sz_kb", "areq_sz_kb", "svctm_ms", "util_pct")

SCHEMA = {
    "iostat_host": (
        Column("line", "int", "banner line"),
        Column("kernel", "str", "kernel release"),
        Column("hostname", "str", "host name"),
        Column("date", "str", "date as printed (locale format)"),
        Column("arch", "str", "machine architecture"),
        Column("ncpu", "int", "CPU count"),
    ),
    "iostat_cpu": _REPORT + tuple(Column(c, "float", "percent of CPU time") for c in _CPU),
    "iostat_device": _REPORT
    + (Column("device", "str", "device name"),)
    + tuple(Column(c, "float", "see module docstring") for c in _DEV[1:]),
}

_BANNER = re.compile(
    r"^Linux\s+(?P<kernel>\S+)\s+\((?P<host>[^)]*)\)\s+(?P<date>.*?)\s+"
    r"(?:_(?P<arch>\S+)_\s+)?\((?P<ncpu>\d+)\s+CPU\)\s*$"
)
_TS = re.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}[ T]\d{1,2}:\d\d:\d\d(?:\s*[AP]M)?(?:\s*[+-]\d{4}|Z)?$")
_NUM = re.compile(r"^-?\d+(?:[.,]\d+)?$")
_ARTEFACT = re.compile(r"^(?:\[\.\.\.\]|\.\.\.+|\^C|…)$")
_RANK = {"ts": 0, "cpu": 1, "dev": 2}


def detect(text: str) -> int:
    """Confidence that text is iostat output."""
    if re.search(r"^\s*avg-cpu:\s+%user", text, re.MULTILINE):
        return 85
    if re.search(r"^[ \t]*Device:?[ \t]+(?:\S+[ \t]+)*?(?:r/s|tps|rrqm/s)(?=\s)", text, re.MULTILINE):
        return 85
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    result = ParseResult()
    st: dict[str, Any] = {"report": 0, "seen": -1, "ts": None, "banner": False}
    header: list[str] | None = None  # device columns of the current block
    cpu_cols: list[str] | None = None  # avg-cpu columns awaiting their value row
    for no, raw in enumerate(text.splitlines(), start=1):
        line = strip_prefix(raw).strip()
        tokens = line.split()
        if not tokens:
            header = cpu_cols = None
            continue
        if m := _BANNER.match(line):
            st["banner"] = True
            result.add("iostat_host", _host(no, m))
        elif _TS.match(line):
            _next(st, "ts")
            st["ts"] = line
        elif tokens[0] == "avg-cpu:":
            cpu_cols = [_cpu_col(t) for t in tokens[1:]]
        elif cpu_cols is not None or (header is None and len(tokens) == 6 and all(map(_NUM.match, tokens))):
            cols, cpu_cols = cpu_cols or list(_CPU), None
            values = [to_float(t) for t in tokens]
            if len(values) != len(cols) or None in values:
                result.issue(no, raw, "avg-cpu value row does not match its header")
                continue
            _next(st, "cpu")
            row = _report_row(no, st)
            row.update(dict.fromkeys(_CPU))
            row.update((c, v) for c, v in zip(cols, values, strict=True) if c in _CPU)
            result.add("iostat_cpu", row)
        elif tokens[0] in ("Device:", "Device"):
            _next(st, "dev")
            header = [t.lower() for t in tokens[1:]]
        elif _ARTEFACT.match(line):
            continue
        elif header is not None:
            row = _device(no, tokens, header, st)
            if row is None:
                result.issue(no, raw, f"expected a device name and {len(header)} numbers")
            else:
                result.add("iostat_device", row)
        else:
            result.issue(no, raw, "line outside any iostat block")
    if not (result.rows("iostat_host") or st["report"]):
        raise ParseError("no iostat banner, avg-cpu block or Device header found")
    return result


def _next(st: dict[str, Any], part: str) -> None:
    """Start a new report when a part comes again (timestamp < avg-cpu < Device)."""
    if st["report"] == 0 or _RANK[part] <= st["seen"]:
        st["report"] += 1
        if part != "ts":
            st["ts"] = None
    st["seen"] = _RANK[part]


def _report_row(no: int, st: dict[str, Any]) -> dict[str, Any]:
    since_boot = (st["report"] == 1) if st["banner"] else None
    return {"line": no, "report_no": st["report"], "since_boot": since_boot, "ts_raw": st["ts"]}


def _host(no: int, m: re.Match[str]) -> dict[str, Any]:
    return {
        "line": no,
        "kernel": m.group("kernel"),
        "hostname": m.group("host"),
        "date": m.group("date") or None,
        "arch": m.group("arch"),
        "ncpu": int(m.group("ncpu")),
    }


def _cpu_col(label: str) -> str:
    return label.lstrip("%").lower() + "_pct"


def _device(no: int, tokens: list[str], header: list[str], st: dict[str, Any]) -> dict[str, Any] | None:
    if len(tokens) != len(header) + 1 or _NUM.match(tokens[0]):
        return None
    row = _report_row(no, st)
    row.update(dict.fromkeys(_DEV))
    row["device"] = tokens[0]
    for label, token in zip(header, tokens[1:], strict=True):
        value = to_float(token)
        if value is None:
            return None
        if label in _DEV_COLS:
            column, factor = _DEV_COLS[label]
            row[column] = round(value * factor, 6) if factor != 1 else value
    return row
