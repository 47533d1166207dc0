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
``-o JSON`` is read too.  Not handled: ``-h`` (human units, device name last).

Lossless: every printed value is kept under the tool's own column name and unit, snake-cased
(``%rrqm`` -> ``pct_rrqm``, ``kB_read/s`` -> ``kb_read_s``, ``avgrq-sz`` -> ``avgrq_sz``, ``%iowait`` ->
``pct_iowait``); the normalised columns rules use (``rkb_s`` in kB/s, ``r_await_ms``, ``util_pct``,
``iowait_pct``, ...) are filled beside them.  A column this parser does not know goes, under its
snake-cased name, into ``extra`` (a JSON object).  A device line whose cells are not all numbers, or
whose count columns (``kB_read`` ...) are not integers, is skipped as a ParseIssue with its line.

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
from typing import Any

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import strip_prefix, to_float

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
)
_CPU = ("user_pct", "nice_pct", "system_pct", "iowait_pct", "steal_pct", "idle_pct")
#: avg-cpu labels as printed (``%sys``: sysstat < 5.0.5) -> normalised column.
_CPU_NORM = {"pct_user": "user_pct", "pct_nice": "nice_pct", "pct_system": "system_pct", "pct_sys": "system_pct",
             "pct_iowait": "iowait_pct", "pct_steal": "steal_pct", "pct_idle": "idle_pct"}  # fmt: skip
_CPU_RAW = ("pct_user", "pct_nice", "pct_system", "pct_sys", "pct_iowait", "pct_steal", "pct_idle")
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
_DEV = ("device", "tps", "r_s", "w_s", "d_s", "f_s", "rkb_s", "wkb_s", "dkb_s", "rrqm_s", "wrqm_s")
_DEV += ("r_await_ms", "w_await_ms", "d_await_ms", "f_await_ms", "await_ms", "aqu_sz")
_DEV += ("rareq_sz_kb", "wareq_sz_kb", "areq_sz_kb", "svctm_ms", "util_pct")
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
_EXTRA = Column("extra", "str", "JSON object of columns not known to this parser: printed name -> number")

SCHEMA = {
    "iostat_host": (
        Column("line", "int", "banner line"),
        Column("kernel", "str", "kernel release"),
        Column("hostname", "str", "host name"),
        Column("date", "str", "date as printed (locale format)"),
        Column("arch", "str", "machine architecture"),
        Column("ncpu", "int", "CPU count"),
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
    r"^Linux\s+(?P<kernel>\S+)\s+\((?P<host>[^)]*)\)\s+(?P<date>.*?)\s+"
    r"(?:_(?P<arch>\S+)_\s+)?\((?P<ncpu>\d+)\s+CPU\)\s*$"
)
_TS = re.compile(r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}[ T]\d{1,2}:\d\d:\d\d(?:\s*[AP]M)?(?:\s*[+-]\d{4}|Z)?$")
_NUM = re.compile(r"^-?\d+(?:[.,]\d+)?$")
_ARTEFACT = re.compile(r"^(?:\[\.\.\.\]|\.\.\.+|\^C|…)$")
_RANK = {"ts": 0, "cpu": 1, "dev": 2}
_JSON = re.compile(r'^\s*\{\s*"sysstat"\s*:')
#: ``-o JSON`` keys that differ from the snake-cased text header (``%util`` is ``util`` there).
_JSON_KEYS = {"util": "pct_util", "rrqm": "pct_rrqm", "wrqm": "pct_wrqm", "drqm": "pct_drqm"}


def detect(text: str) -> int:
    """Confidence that text is iostat output."""
    if re.search(r"^\s*avg-cpu:\s+%user", text, re.MULTILINE):
        return 85
    if re.search(r"^[ \t]*Device:?[ \t]+(?:\S+[ \t]+)*?(?:r/s|tps|rrqm/s)(?=\s)", text, re.MULTILINE):
        return 85
    if _JSON.match(text) and ('"avg-cpu"' in text or '"disk_device"' in text):
        return 85
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    if _JSON.match(text):
        return _parse_json(text)
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
            cpu_cols = [_key(t) for t in tokens[1:]]
        elif cpu_cols is not None or (header is None and len(tokens) == 6 and all(map(_NUM.match, tokens))):
            cols, cpu_cols = cpu_cols or [c for c in _CPU_RAW if c != "pct_sys"], None
            values = [to_float(t) for t in tokens]
            if len(values) != len(cols) or None in values:
                result.issue(no, raw, "avg-cpu value row does not match its header")
                continue
            _next(st, "cpu")
            result.add("iostat_cpu", _cpu_row(_report_row(no, st), dict(zip(cols, values, strict=True))))
        elif tokens[0] in ("Device:", "Device"):
            _next(st, "dev")
            header = [_key(t) for t in tokens[1:]]
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


def _key(label: str) -> str:
    """A printed column label as a column name: ``%rrqm`` -> ``pct_rrqm``, ``kB_read/s`` -> ``kb_read_s``.

    >>> _key("%util"), _key("kB_read/s"), _key("avgrq-sz"), _key("MB_wrtn"), _key("%iowait")
    ('pct_util', 'kb_read_s', 'avgrq_sz', 'mb_wrtn', 'pct_iowait')
    """
    key = label.lower().rstrip(":")
    if key.startswith("%"):
        key = "pct_" + key[1:]
    return re.sub(r"[^a-z0-9]+", "_", key).strip("_")


def _next(st: dict[str, Any], part: str) -> None:
    """Start a new report when a part comes again (timestamp < avg-cpu < Device)."""
    if st["report"] == 0 or _RANK[part] <= st["seen"]:
        st["report"] += 1
        if part != "ts":
            st["ts"] = None
    st["seen"] = _RANK[part]


def _report_row(no: int | None, st: dict[str, Any]) -> dict[str, Any]:
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


def _cpu_row(row: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """An iostat_cpu row from printed column name -> value: as printed, normalised beside, the rest in extra."""
    row.update(dict.fromkeys(_CPU + _CPU_RAW))
    extra: dict[str, Any] = {}
    for key, value in values.items():
        if key in _CPU_NORM and isinstance(value, float):
            row[key] = value
            row[_CPU_NORM[key]] = value
        else:
            extra[key] = value
    row["extra"] = json.dumps(extra)
    return row


def _device_row(row: dict[str, Any], device: str, values: dict[str, Any]) -> dict[str, Any] | None:
    """An iostat_device row from printed column name -> value; None when a count is not an integer."""
    row.update(dict.fromkeys(_DEV_ALL))
    row["device"] = device
    extra: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(value, float):  # only from -o JSON: kept as it came
            extra[key] = value
        elif key in _DEV_RAW and _DEV_RAW[key][0] == "int":
            if not float(value).is_integer():
                return None
            row[key] = int(value)
        elif key in _DEV_RAW or key in _DEV_COLS:
            row[key] = value
        else:
            extra[key] = value
        if key in _DEV_COLS and isinstance(value, float):
            column, factor = _DEV_COLS[key]
            row[column] = round(value * factor, 6) if factor != 1 else value
    row["extra"] = json.dumps(extra)
    return row


def _device(no: int, tokens: list[str], header: list[str], st: dict[str, Any]) -> dict[str, Any] | None:
    if len(tokens) != len(header) + 1 or _NUM.match(tokens[0]):
        return None
    values = [to_float(t) for t in tokens[1:]]
    if None in values:
        return None
    return _device_row(_report_row(no, st), tokens[0], dict(zip(header, values, strict=True)))


def _parse_json(text: str) -> ParseResult:
    """``iostat -o JSON`` (sysstat >= 11.x): hosts -> statistics -> avg-cpu and disk."""
    try:
        doc = json.loads(text)
        hosts = doc["sysstat"]["hosts"]
    except (ValueError, KeyError, TypeError) as e:
        raise ParseError(f"iostat -o JSON unreadable: {e}") from e
    result = ParseResult()
    lines = text.splitlines()
    at = {
        k: iter([n for n, t in enumerate(lines, 1) if f'"{k}"' in t])
        for k in ("nodename", "avg-cpu", "disk_device")
    }
    for host in hosts:
        if not isinstance(host, dict):
            continue
        ncpu = host.get("number-of-cpus")
        result.add(
            "iostat_host",
            {
                "line": next(at["nodename"], None) if "nodename" in host else None,
                "kernel": host.get("release"),
                "hostname": host.get("nodename"),
                "date": host.get("date"),
                "arch": host.get("machine"),
                "ncpu": ncpu if isinstance(ncpu, int) else None,
            },
        )
        st: dict[str, Any] = {"report": 0, "seen": -1, "ts": None, "banner": True}
        for report in host.get("statistics") or []:
            if not isinstance(report, dict):
                continue
            st["report"] += 1
            st["ts"] = report.get("timestamp")
            cpu = report.get("avg-cpu")
            if isinstance(cpu, dict):
                values = {"pct_" + k: _num(v) for k, v in cpu.items()}
                result.add("iostat_cpu", _cpu_row(_report_row(next(at["avg-cpu"], None), st), values))
            for disk in report.get("disk") or []:
                name = disk.get("disk_device") if isinstance(disk, dict) else None
                no = (
                    next(at["disk_device"], None)
                    if isinstance(disk, dict) and "disk_device" in disk
                    else None
                )
                if not isinstance(name, str):
                    result.issue(no or 0, json.dumps(disk)[:200], "disk entry without a device name")
                    continue
                values = {_JSON_KEYS.get(k, _key(k)): _num(v) for k, v in disk.items() if k != "disk_device"}
                row = _device_row(_report_row(no, st), name, values)
                if row is None:
                    result.issue(
                        no or 0, lines[no - 1] if no else json.dumps(disk)[:200], "a count is not an integer"
                    )
                else:
                    result.add("iostat_device", row)
    if not hosts:
        raise ParseError("iostat -o JSON without hosts")
    return result


def _num(value: Any) -> Any:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
