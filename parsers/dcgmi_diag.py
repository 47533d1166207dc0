"""DCGM diagnostics (``dcgmi diag``): per-test, per-GPU Pass/Fail/Warn/Skip with warning text.

Commands whose output it reads (collector.sh runs ``dcgmi diag -r 1``, and only with ``--dcgm``)::

    dcgmi diag -r 1          # text table (DCGM 2.x-4.x); -r 2 and -r 3 print the same layout
    dcgmi diag -r 1 -j       # JSON

Sample (lines of tests/fixtures/dcgmi-diag/go-dcgm-52-midtable-fail-wrapped.txt)::

    +-----  Hardware  ----------+------------------------------------------------+
    | GPU Memory                | Pass - GPU: 1                                  |
    |                           | Fail - GPU: 0                                  |
    | Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |
    |                           | DCGM and system logs for errors. Reset GPU. R  |
    |                           | estart DCGM. Rerun diagnostics. Unable to cre  |

Text layouts accepted: 2.x/3.x test names ("GPU Memory") with "Pass - All", "Fail - GPUs: 0, 2"
split results, and "Warning"/"Info"/"Error" rows; 4.x lowercase names ("memory") with "GPU0: Pass"
continuation rows and "Warning: GPU0" rows.  DCGM cuts Warning/Info text into 45-character pieces
regardless of words; the pieces are glued back exactly.  "GPU 0GPU 0's" (a DCGM 2.x printing bug)
becomes "GPU 0's".  Rows missing their closing ``|``, uniformly indented copies, wrapper lines
("Executing in Pod ...", "Successfully ran diagnostic ...") and ``...`` lines are tolerated.
JSON: DCGM 4.x root "DCGM Diagnostic" (test_categories > tests > results with entity_id,
warnings as objects, test_summary) and 2.x/3.x root "DCGM GPU Diagnostic" (results with gpu_ids or
gpu_id, ``null`` entries); a JSON document that does not load (cut by a paste, ``{"..."}`` elisions of
the author) is read key by key, and the cut is a ParseIssue.  Travel noise (launcher tags, prompts,
fences, ``...``) is taken off by ``parsers._text.clean_lines``; a line outside the table that looks like
a result is a ParseIssue.  Every Metadata row is kept as printed in ``dcgm_run.metadata``.

Schema
------
``dcgm_test`` (one row per test result and GPU):

- ``line`` int — line of the result row (JSON: of the result's "status")
- ``category`` str — section: Deployment, Integration, Hardware, Stress (null when cut off)
- ``test`` str — test name as printed ("GPU Memory", "memory", "Denylist")
- ``gpu`` int — GPU index; null for a result that covers all GPUs ("Pass", "Fail - All", summary)
- ``result`` str — pass, fail, warn, skip or not_run
- ``message`` str — Warning/Info/Error text for this row, several joined with "; " (null if none)
- ``dcgm_version`` str — "DCGM Version" when printed (Metadata section, 3.3+)
- ``driver_version`` str — "Driver Version Detected" when printed
- ``result_printed`` str — the result cell as printed ("Fail - GPU: 3", "GPU0: Pass", "Pass - All")
- ``warning`` str — the Warning/Error text only, joined from its wrapped cells ("; " between several)
- ``info`` str — the Info text only, joined the same way
- ``error_id`` str — DCGM error ids of the warnings (JSON), comma-joined, else null
- ``host`` str — launcher tag of the result row (pdsh host, srun rank, pod), else null

``dcgm_run`` (one row per output):

- ``line`` int — first line of the table (JSON: 1)
- ``format`` str — ``table`` or ``json``
- ``dcgm_version`` str, ``driver_version`` str — as above
- ``gpu_device_ids`` str — "GPU Device IDs Detected" as printed (JSON: entity device_id values, comma-joined)
- ``gpu_serials`` str — serials when printed ("GPU Device Serials", JSON serial_num), comma-joined
- ``metadata`` str — JSON object of every Metadata row (JSON: metadata keys) as printed
- ``command`` str — the ``dcgmi diag`` command of a prompt line in the capture, else null
- ``run_level`` str — its ``-r`` value (1, 2, 3, 4, or a test name), else null
- ``tests`` int — distinct tests; ``failed`` int, ``warned`` int — result rows fail / warn
- ``complete`` bool — the table's closing border (JSON: the document loaded) was seen

``dcgm_attribute`` (one row per printed key-value, the long table):

- ``entity`` str — the GPU id the value belongs to ("Pass - GPU: 1", "GPU0: Pass", a message of one
  GPU, a JSON result's ``entity_id``/``gpu_id``); ``''`` for the run, its metadata and several GPUs
- ``section`` str — table: the category of a result (``Hardware``), ``Metadata``, ``category / test``
  of a Warning/Info/Error; JSON: ``category / test`` (``/ test_summary``), ``metadata``, ``entity_groups``
- ``key`` str — table: the test name, the Metadata key, the message label; JSON: the key (``status``,
  ``warning``, ``error_id``, ``version``, ``Driver Version Detected``, ``device_id``, ...)
- ``value`` str — as printed (a wrapped message glued); ``number`` float, ``unit`` str where it is one
  number (never for device ids and serials); ``line`` int; ``host`` str — launcher tag, else null

Examples
--------
>>> r = parse(SAMPLE)
>>> [(t["category"], t["test"], t["gpu"], t["result"]) for t in r.rows("dcgm_test")]
[('Hardware', 'GPU Memory', 1, 'pass'), ('Hardware', 'GPU Memory', 0, 'fail')]
>>> r.rows("dcgm_test")[1]["message"][:72]
'GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for er'
>>> [(a["entity"], a["section"], a["key"]) for a in r.rows("dcgm_attribute")][1:]
[('0', 'Hardware', 'GPU Memory'), ('0', 'Hardware / GPU Memory', 'Warning')]
"""

from __future__ import annotations

import json
import re
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
from parsers._text import clean_lines, long_row, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="dcgmi-diag",
    title="DCGM diagnostics (dcgmi diag)",
    commands=(
        "dcgmi diag -r 1",
        "dcgmi diag -r 2",
        "dcgmi diag -r 3",
        "dcgmi diag -r 4",
        "dcgmi diag -r 1 -j",
    ),
    tables=("dcgm_test", "dcgm_run", "dcgm_attribute"),
    versions_seen=("DCGM 2.4.6", "3.0.4", "3.1.x (JSON)", "3.3.1-3.3.7", "4.0.0", "4.2.3 (JSON)", "4.4.2"),
)

SCHEMA = {
    "dcgm_test": (
        Column("line", "int", "line of the result"),
        Column("category", "str", "Deployment, Integration, Hardware, Stress"),
        Column("test", "str", "test name as printed"),
        Column("gpu", "int", "GPU index; null = all GPUs / overall"),
        Column("result", "str", "pass, fail, warn, skip, not_run"),
        Column("message", "str", "warning/info text, joined"),
        Column("dcgm_version", "str", "DCGM version"),
        Column("driver_version", "str", "driver version detected"),
        Column("result_printed", "str", "the result cell as printed"),
        Column("warning", "str", "Warning/Error text, joined"),
        Column("info", "str", "Info text, joined"),
        Column("error_id", "str", "DCGM error ids (JSON)"),
        Column("host", "str", "launcher tag"),
    ),
    "dcgm_run": (
        Column("line", "int", "first line of the table"),
        Column("format", "str", "table or json"),
        Column("dcgm_version", "str", "DCGM version"),
        Column("driver_version", "str", "driver version detected"),
        Column("gpu_device_ids", "str", "GPU Device IDs Detected, as printed"),
        Column("gpu_serials", "str", "GPU serials, as printed"),
        Column("metadata", "str", "JSON object of the Metadata rows as printed"),
        Column("command", "str", "dcgmi diag command of a prompt line"),
        Column("run_level", "str", "-r value of that command"),
        Column("tests", "int", "distinct tests"),
        Column("failed", "int", "fail result rows"),
        Column("warned", "int", "warn result rows"),
        Column("complete", "bool", "closing border / JSON document seen"),
    ),
    "dcgm_attribute": (
        *long_columns("the GPU id the key belongs to, '' for the run, its metadata or several GPUs"),
        Column("host", "str", "launcher tag of the line, else null"),
    ),
}
_TEST_COLUMNS = tuple(c.name for c in SCHEMA["dcgm_test"])

_CHUNK = 45  # DCGM prints messages in pieces of exactly this many characters
_SECTION = re.compile(r"^[|+]-{3,}\s+([A-Za-z][A-Za-z ]*?)\s+-+[+|]")
_RESULT = re.compile(
    r"^(pass|fail|warn|warning|skip|skipped|not run)(?:\s*-\s*(?:(all)|(?:gpus?|entities)\s*:\s*([\d,\s]+)))?$",
    re.I,
)
_ENTITY = re.compile(r"^(GPU|CPU)\s*(\d+)\s*:\s*(pass|fail|warn|skip|not run)$", re.I)
_LABEL = re.compile(r"^(warning|info|error)(?:\s*:\s*(GPU|CPU)\s*(\d+))?$", re.I)
_LEADING_GPU = re.compile(r"^GPU (\d+)\b")
_DUP_GPU = re.compile(r"\bGPU (\d+)GPU \1\b")
_DRV = "Driver Version Detected"
_TOOL_ERROR = re.compile(r"^\s*(?:Error:.*|.*Unable to (?:connect|establish).*|.*could not be run.*)$", re.M)
_WRAPPER = re.compile(
    r"^(?:Successfully ran diagnostic|Executing in Pod|Defaulted container|Running |Diagnostic |Command |"
    r"dcgmi |WARNING: )",
    re.I,
)
_LOOKS_LIKE_RESULT = re.compile(
    r"\|.*\b(?:Pass|Fail|Warn|Skip)\b|\b(?:Pass|Fail|Warn|Skip) - (?:All|GPUs?:)|GPU\d+: (?:Pass|Fail)"
)


def detect(text: str) -> int:
    """Confidence that text is dcgmi diag output."""
    if re.search(r'"DCGM (?:GPU )?Diagnostic"\s*:', text):
        return 90
    if re.search(r"Successfully ran diagnostic for group|\|\s*Diagnostic\s*\|\s*Result\s*\|", text):
        return 90
    if re.search(r"^\s*[|+]-{3,}\s+(?:Metadata|Deployment|Hardware|Integration|Stress)\s+-+[+|]", text, re.M):
        return 85
    if re.search(r"\|\s+(?:(?:Pass|Fail|Warn|Skip) - (?:All|GPUs?:)|GPU\d+: (?:Pass|Fail|Warn|Skip))", text):
        return 70
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    start = text.lstrip()
    if start.startswith("{") or re.search(r'^\s*"DCGM (?:GPU )?Diagnostic"', text, re.M):
        return _parse_json(text)
    return _parse_table(text)


def _parse_table(text: str) -> ParseResult:
    result = ParseResult()
    cleaned = clean_lines(text)
    hosts = cleaned.hosts
    st: dict[str, Any] = {"category": None, "test": None, "msg": None, "rows": [], "meta": {}, "host": None}
    st.update(attrs=[], meta_rows={})
    table_lines, first, complete = 0, None, False
    for i, line in enumerate(cleaned.lines):
        no, s = i + 1, line.lstrip()
        if not s.startswith(("|", "+")):
            if s.startswith("dcgmi diag"):
                cleaned.commands.append((no, s))
            elif s and not _WRAPPER.match(s) and _LOOKS_LIKE_RESULT.search(s):
                result.issue(no, line, "looks like a result but is outside the result table")
            continue
        table_lines += 1
        first = first or no
        st["host"] = hosts[i] if hosts else None
        if m := _SECTION.match(s):
            _flush(st)
            st["category"] = m.group(1).strip()
            continue
        if set(s.rstrip()) <= set("+-=|"):
            _flush(st)
            complete = table_lines > 2 and s.startswith("+") and "=" not in s and bool(st["rows"])
            continue
        complete = False
        if s.startswith("+"):
            result.issue(no, line, "unrecognised table border")
            continue
        _row(st, no, line, s[1:], result)
    _flush(st)
    if not st["rows"]:
        if err := _TOOL_ERROR.search(text):
            raise CollectorError(err.group(0).strip()[:300])
        if table_lines:
            raise ParseError(
                f"dcgmi diag table without any test result ({table_lines} table lines, "
                f"metadata {sorted(st['meta']) or 'none'}): expected rows like '| memory | Pass |'"
            )
        first_line = next((x.strip() for x in cleaned.lines if x.strip()), "")[:80]
        raise ParseError(
            f"not dcgmi diag output: no result table ('| Diagnostic | Result |'), saw {first_line!r}"
        )
    meta = st["meta"]
    for row in st["rows"]:
        row["dcgm_version"] = meta.get("DCGM Version")
        row["driver_version"] = meta.get(_DRV)
        result.add("dcgm_test", row)
    for attr in sorted(st["attrs"], key=lambda a: int(a["line"])):
        result.add("dcgm_attribute", attr)
    serials = next((v for k, v in meta.items() if "serial" in k.lower()), None)
    _run(
        result,
        first or 1,
        "table",
        meta,
        meta.get("GPU Device IDs Detected"),
        serials,
        cleaned.commands,
        complete,
    )
    return result


def _run(result: ParseResult, line: int, fmt: str, meta: dict[str, Any], ids: str | None, serials: str | None,
         commands: list[tuple[int, str]], complete: bool) -> None:  # fmt: skip
    rows = result.rows("dcgm_test")
    command = next((c for _, c in reversed(commands) if "dcgmi" in c and "diag" in c), None)
    level = re.search(r"(?:-r|--run)[ =]?(\S+)", command or "")
    result.add("dcgm_run", {
        "line": line, "format": fmt,
        "dcgm_version": _str(meta.get("DCGM Version") or meta.get("version")),
        "driver_version": _str(meta.get(_DRV)),
        "gpu_device_ids": ids, "gpu_serials": serials,
        "metadata": json.dumps(meta, ensure_ascii=False) if meta else None,
        "command": command, "run_level": level.group(1) if level else None,
        "tests": len({(r["category"], r["test"]) for r in rows}),
        "failed": sum(r["result"] == "fail" for r in rows), "warned": sum(r["result"] == "warn" for r in rows),
        "complete": complete,
    })  # fmt: skip


def _row(st: dict[str, Any], no: int, raw: str, body: str, result: ParseResult) -> None:
    """Handle one ``| name | value |`` row (body = the text after the first ``|``)."""
    sep = body.find("|")
    if sep < 0:
        name = body.strip()
        if _RESULT.match(name.split()[-1] if name else "") or not name:
            result.issue(no, raw, "table row without a column separator")
        else:  # a row cut by the paste after its first cell ("| PCIe"): the test name without a result
            result.issue(no, raw, "row cut after the test name: no result")
        return
    name = body[:sep].strip()
    cell = body[sep + 1 :]
    cell = cell[1:] if cell.startswith(" ") else cell
    if cell.rstrip().endswith("|"):
        cell = cell.rstrip()[:-1]
    value = cell.strip()
    if name == "Diagnostic" and value == "Result":
        return
    if st["category"] == "Metadata" or name in ("DCGM Version", _DRV):
        _metadata(st, no, name, value)
    elif lab := _LABEL.match(name):
        _flush(st)
        gpu = int(lab.group(3)) if lab.group(2) and lab.group(2).upper() == "GPU" else None
        st["msg"] = {"gpu": gpu, "kind": lab.group(1).lower(), "chunks": [_piece(cell)]}
        st["msg"].update(line=no, label=lab.group(1), host=st["host"])
    elif name:
        _flush(st)
        if res := _RESULT.match(value):
            st["test"] = {"name": name, "category": st["category"], "rows": {}}
            _results(st, no, res, value)
        else:
            result.issue(no, raw, "row is neither a test result nor a message")
    else:
        _continued(st, no, raw, cell, value, result)


def _metadata(st: dict[str, Any], no: int, name: str, value: str) -> None:
    """A row of the Metadata block (DCGM and driver versions among them); a row without a name is the
    rest of the value above it."""
    last = st.get("meta_last")
    if not name and last is not None:  # a wrapped value: glue the piece like a message piece
        prev = st["meta"][last]
        st["meta"][last] = prev + value if len(prev) >= _CHUNK else f"{prev} {value}".strip()
        attr = st["meta_rows"][last]
        attr.update(_long("", attr["section"], last, st["meta"][last], attr["line"]))
    elif name:
        st["meta"][name], st["meta_last"] = value, name
        st["meta_rows"][name] = _attr(st, no, "", st["category"] or "", name, value)


def _continued(st: dict[str, Any], no: int, raw: str, cell: str, value: str, result: ParseResult) -> None:
    """A row without a name: one entity's result of the test above, its results, or a message's next piece."""
    res = _RESULT.match(value)
    ent = _ENTITY.match(value)
    if ent and st["test"]:
        _flush(st)
        gpu = int(ent.group(2)) if ent.group(1).upper() == "GPU" else None
        _add(st, no, gpu, ent.group(3), value)
        test = st["test"]
        entity = ent.group(2) if gpu is not None else f"{ent.group(1)}{ent.group(2)}"
        _attr(st, no, entity, test["category"] or "", test["name"], value)
    elif res and res.group(3) and st["test"]:
        _flush(st)
        _results(st, no, res, value)
    elif st["msg"] is not None:
        st["msg"]["chunks"].append(_piece(cell))
    elif value:
        result.issue(no, raw, "continuation row without a test or message above it (cut excerpt?)")


_IDENTIFIER = re.compile(r"device.?ids?|serial", re.I)


def _long(entity: str, section: str, key: str, value: str, line: int) -> dict[str, Any]:
    """``long_row``, but an identifier (a PCI device id ``2e12``, a serial) is never a number."""
    row = long_row(entity, section, key, value, line)
    if _IDENTIFIER.search(key):
        row.update(number=None, unit=None)
    return row


def _results(st: dict[str, Any], no: int, res: re.Match[str], printed: str) -> None:
    gpus: list[int | None] = [int(g) for g in re.findall(r"\d+", res.group(3) or "")]
    test = st["test"]
    _attr(st, no, str(gpus[0]) if len(gpus) == 1 else "", test["category"] or "", test["name"], printed)
    for gpu in gpus or [None]:
        _add(st, no, gpu, res.group(1), printed)


def _add(st: dict[str, Any], no: int, gpu: int | None, status: str, printed: str) -> None:
    test = st["test"]
    row = dict.fromkeys(_TEST_COLUMNS)
    row.update(line=no, category=test["category"], test=test["name"], gpu=gpu, result=_status(status))
    row.update(result_printed=printed, host=st["host"])
    test["rows"][gpu] = row
    st["rows"].append(row)


def _flush(st: dict[str, Any]) -> None:
    """Attach the open Warning/Info message to the row it belongs to."""
    msg, st["msg"] = st["msg"], None
    if msg is None or st["test"] is None:
        return
    chunks = msg["chunks"]
    text = "".join([c.ljust(_CHUNK) for c in chunks[:-1]] + chunks[-1:])
    text = _DUP_GPU.sub(r"GPU \1", re.sub(r"\s+", " ", text)).strip()
    rows = st["test"]["rows"]
    gpu = msg["gpu"]
    if gpu is None and (lead := _LEADING_GPU.match(text)) and int(lead.group(1)) in rows:
        gpu = int(lead.group(1))
    target = rows.get(gpu) or rows.get(None) or next(iter(rows.values()), None)
    if target is not None and text:
        _attach(target, "info" if msg["kind"] == "info" else "warning", text)
    if text:
        entity = target["gpu"] if target is not None and target["gpu"] is not None else gpu
        if entity is None and (lead := _LEADING_GPU.match(text)):
            entity = int(lead.group(1))  # a message of a result for all GPUs that names its GPU
        section = " / ".join(x for x in (st["test"]["category"], st["test"]["name"]) if x)
        row = _long("" if entity is None else str(entity), section, msg["label"], text, msg["line"])
        row["host"] = msg["host"]
        st["attrs"].append(row)


def _attr(st: dict[str, Any], no: int, entity: str, section: str, key: str, value: str) -> dict[str, Any]:
    """One ``dcgm_attribute`` row of the table form."""
    row = _long(entity, section, key, value, no)
    row["host"] = st["host"]
    st["attrs"].append(row)
    return row


def _attach(row: dict[str, Any], column: str, text: str) -> None:
    row["message"] = f"{row['message']}; {text}" if row["message"] else text
    row[column] = f"{row[column]}; {text}" if row[column] else text


def _piece(cell: str) -> str:
    """The message piece of a cell: its first 45 characters, unless a wider paste filled it further."""
    return cell[:_CHUNK] if not cell[_CHUNK:].strip() else cell.rstrip()


def _status(value: str) -> str:
    v = value.strip().lower().replace(" ", "_")
    return {"warning": "warn", "skipped": "skip"}.get(v, v)


# --- JSON ------------------------------------------------------------------------------------------


def _parse_json(text: str) -> ParseResult:
    brace = text.find("{")
    doc: Any = None
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[brace:]) if brace >= 0 else (None, 0)
    except json.JSONDecodeError as exc:
        return _scan_json(text, exc)
    except RecursionError as exc:
        raise ParseError("dcgmi diag JSON nested too deep to read") from exc
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        raise ParseError('not dcgmi diag JSON: no "DCGM Diagnostic" / "DCGM GPU Diagnostic" object')
    if root.get("runtime_error"):
        raise CollectorError(str(root["runtime_error"])[:300])
    meta = {**_dict(doc.get("metadata")), **_dict(root.get("metadata"))}
    for key in ("version", _DRV):
        for src in (root, doc):
            if key in src and not isinstance(src[key], (dict, list)):
                meta.setdefault(key, src[key])
    versions = {"dcgm_version": _str(meta.get("version")), "driver_version": _str(meta.get(_DRV))}
    result = ParseResult()
    find = _Locator(text)
    for cat in _dicts(root.get("test_categories")):
        for test in _dicts(cat.get("tests")):
            name = _str(test.get("name"))
            find(rf'"name"\s*:\s*{re.escape(json.dumps(name))}')
            entries = [(r, _json_gpus(r)) for r in _dicts(test.get("results"))]
            if isinstance(test.get("test_summary"), dict):
                entries.append((test["test_summary"], [None]))
            for res, gpus in entries:
                line = find(r'"status"\s*:')
                for gpu in gpus:
                    row = dict.fromkeys(_TEST_COLUMNS)
                    row.update(line=line, category=_str(cat.get("category")), test=name, gpu=gpu, **versions)
                    row.update(
                        result=_status(str(res.get("status", "not run"))),
                        result_printed=_str(res.get("status")),
                    )
                    _json_messages(row, res)
                    result.add("dcgm_test", row)
    if not result.rows("dcgm_test"):
        raise ParseError("dcgmi diag JSON without any test result (no test_categories > tests > results)")
    _JsonAttributes(result, text).walk(doc, (), "")
    ids, serials = _entities(doc, root)
    meta_printed = {k: v for k, v in meta.items()}
    _run(
        result,
        1,
        "json",
        meta_printed,
        ids,
        serials,
        clean_lines(text[:brace]).commands if brace > 0 else [],
        True,
    )
    return result


def _json_gpus(res: dict[str, Any]) -> list[int | None]:
    if "entity_id" in res and str(res.get("entity_group", "GPU")).upper() == "GPU":
        return [to_int(str(res["entity_id"]))]
    raw = res.get("gpu_ids", res.get("gpu_id", ""))
    ids = [int(g) for g in re.findall(r"\d+", str(raw))]
    return list(ids) or [None]


def _json_messages(row: dict[str, Any], res: dict[str, Any]) -> None:
    ids: list[str] = []
    for key, column in (("warnings", "warning"), ("warning", "warning"), ("info", "info")):
        items = res.get(key)
        for item in items if isinstance(items, list) else [items] if items else []:
            msg = item.get("warning") if isinstance(item, dict) else item
            if isinstance(item, dict) and item.get("error_id") is not None:
                ids.append(str(item["error_id"]))
            if msg:
                _attach(row, column, _DUP_GPU.sub(r"GPU \1", str(msg).strip()))
    row["error_id"] = ",".join(ids) or None


def _entities(doc: dict[str, Any], root: dict[str, Any]) -> tuple[str | None, str | None]:
    ids, serials = [], []
    for group in _dicts(doc.get("entity_groups") or root.get("entity_groups")):
        for ent in _dicts(group.get("entities")):
            if "device_id" in ent:
                ids.append(str(ent["device_id"]))
            if "serial_num" in ent:
                serials.append(str(ent["serial_num"]))
    return ",".join(ids) or None, ",".join(serials) or None


#: JSON keys whose children are shown one level up in ``dcgm_attribute`` sections (lists of tests,
#: results, warnings, entities: the names and GPUs of their items say enough)
_JSON_CONTAINERS = frozenset(
    ("DCGM Diagnostic", "DCGM GPU Diagnostic", "test_categories", "tests", "results", "warnings", "entities")
)
_JSON_NAMES = ("category", "name")
_JSON_IDS = ("entity_id", "gpu_id", "gpu_ids")


class _JsonAttributes:
    """``dcgm_attribute`` rows of a loaded JSON document: every scalar under its key, in document order."""

    def __init__(self, result: ParseResult, text: str) -> None:
        self.result, self.find = result, _Locator(text)

    def walk(self, node: Any, section: tuple[str, ...], entity: str, key: str = "") -> None:
        if isinstance(node, list):
            for item in node:
                if isinstance(item, (dict, list)):
                    self.walk(item, section, entity, key)
                elif item is not None:  # a list of strings: its key names them, at the level of the key
                    inner = section[:-1] if section[-1:] == (key,) else section
                    self.add(entity, inner, key, item, re.escape(json.dumps(item, ensure_ascii=False)))
            return
        if not isinstance(node, dict):
            return
        names = [str(node[k]) for k in _JSON_NAMES if isinstance(node.get(k), str)]
        section = (*section, *names)
        own = _json_entity(node)
        entity = own if own is not None else entity
        for k, value in node.items():
            if isinstance(value, (dict, list)):
                self.walk(value, section if k in _JSON_CONTAINERS else (*section, k), entity, k)
            elif value is not None and not (k in _JSON_NAMES and names) and not (k in _JSON_IDS and own):
                self.add(entity, section, k, value, re.escape(json.dumps(k, ensure_ascii=False)) + r"\s*:")

    def add(self, entity: str, section: tuple[str, ...], key: str, value: Any, pattern: str) -> None:
        printed = value if isinstance(value, str) else json.dumps(value)
        line = self.find(pattern)  # the key (or the string of a list) after the last one found
        self.result.add(
            "dcgm_attribute", {**_long(entity, " / ".join(section), key, printed, line), "host": None}
        )


def _json_entity(node: dict[str, Any]) -> str | None:
    """The entity a JSON object belongs to: its one GPU (``entity_id``, ``gpu_id``, a one-GPU ``gpu_ids``)."""
    for k in _JSON_IDS:
        if k in node and node[k] is not None:
            ids = re.findall(r"\d+", str(node[k]))
            if len(ids) != 1:
                return None
            group = str(node.get("entity_group", "GPU"))
            return ids[0] if group.upper() == "GPU" else f"{group}{ids[0]}"
    return None


_JSON_KEY = re.compile(
    r'^\s*"(?P<key>[^"]+)"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*"|-?\d+|null|true|false)?\s*,?\s*$'
)


def _scan_json(text: str, exc: json.JSONDecodeError) -> ParseResult:
    """Read a JSON document that does not load (cut, ``{"..."}`` elisions) key by key, line by line."""
    if '"runtime_error"' in text and (m := re.search(r'"runtime_error"\s*:\s*"((?:[^"\\]|\\.)*)"', text)):
        raise CollectorError(m.group(1)[:300])
    result = ParseResult()
    cur: dict[str, Any] = {"category": None, "test": None, "gpus": [None], "row": None, "array": None}
    path: dict[str, Any] = {"section": (), "entity": ""}  # where a dcgm_attribute row of the scan belongs
    meta: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for no, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        m = _JSON_KEY.match(s)
        if not m:
            _scan_item(result, path, cur, no, s)
            continue
        key, raw = m["key"], m["value"]
        try:
            value = json.loads(raw) if raw is not None else None
        except (json.JSONDecodeError, RecursionError):
            value = raw.strip('"')
        _scan_attribute(result, path, cur, no, key, raw, value)
        _scan_key(cur, rows, meta, no, key, raw, value)
    if not rows:
        raise ParseError(
            f"dcgmi diag JSON that does not load ({exc.msg} at line {exc.lineno}) holds no test result"
        )
    for row in rows:
        row.update(dcgm_version=_str(meta.get("version")), driver_version=_str(meta.get(_DRV)))
        result.add("dcgm_test", row)
    last = text.rstrip().splitlines()[-1] if text.strip() else ""
    result.issue(exc.lineno, text.splitlines()[exc.lineno - 1] if exc.lineno <= len(text.splitlines()) else last,
                 f"JSON does not load ({exc.msg}): read key by key; results after this point may be missing")  # fmt: skip
    _run(result, 1, "json", meta, None, None, [], False)
    return result


def _scan_item(result: ParseResult, path: dict[str, Any], cur: dict[str, Any], no: int, s: str) -> None:
    """A line of a JSON document read line by line that is no key: an item of the open list, its end."""
    if s.startswith('"') and cur["array"] is not None and s.rstrip(",").endswith('"'):
        item = s.rstrip(",").strip('"')
        attr = _long(path["entity"], " / ".join(path["section"]), cur["array"], item, no)
        result.add("dcgm_attribute", {**attr, "host": None})
    if s.startswith('"') and cur["array"] in ("warnings", "info") and cur["row"] is not None:
        _attach(cur["row"], "info" if cur["array"] == "info" else "warning", s.rstrip(",").strip('"'))
    elif s.startswith("]"):
        cur["array"] = None


def _scan_key(
    cur: dict[str, Any],
    rows: list[dict[str, Any]],
    meta: dict[str, Any],
    no: int,
    key: str,
    raw: str | None,
    value: Any,
) -> None:
    """One key of a JSON document read line by line: a list opens, a test, its GPUs, its status, a warning,
    the versions."""
    if raw is None:
        cur["array"] = key
    elif key == "category":
        cur["category"] = value
    elif key == "name":
        cur["test"], cur["gpus"] = value, [None]
    elif key in ("gpu_ids", "gpu_id", "entity_id"):
        cur["gpus"] = [int(g) for g in re.findall(r"\d+", str(value))] or [None]
    elif key == "status" and cur["test"] is not None:
        for gpu in cur["gpus"]:
            row = dict.fromkeys(_TEST_COLUMNS)
            row.update(
                line=no, category=cur["category"], test=cur["test"], gpu=gpu, result=_status(str(value))
            )
            row["result_printed"] = value
            rows.append(row)
            cur["row"] = row
        cur["gpus"] = [None]
    elif key == "warning" and cur["row"] is not None and value:
        _attach(cur["row"], "warning", _DUP_GPU.sub(r"GPU \1", str(value)))
    elif key in ("version", _DRV):
        meta[key] = value


def _scan_attribute(
    result: ParseResult,
    path: dict[str, Any],
    cur: dict[str, Any],
    no: int,
    key: str,
    raw: str | None,
    value: Any,
) -> None:
    """The ``dcgm_attribute`` row of one key line of a JSON document read line by line."""
    if raw is None:  # an object or list opens: the test summary, the metadata, the entity groups
        if key == "test_summary":
            path.update(section=tuple(x for x in (cur["category"], cur["test"], key) if x), entity="")
        elif key not in _JSON_CONTAINERS and key not in ("info",):
            path.update(section=(key,), entity="")
        return
    if key == "category":
        path.update(section=(str(value),), entity="")
    elif key == "name":
        path.update(section=tuple(str(x) for x in (cur["category"], value) if x), entity="")
    elif key in _JSON_IDS and len(ids := re.findall(r"\d+", str(value))) == 1:
        path["entity"] = ids[0]
    elif value is not None:
        printed = value if isinstance(value, str) else json.dumps(value)
        attr = _long(path["entity"], " / ".join(path["section"]), key, printed, no)
        result.add("dcgm_attribute", {**attr, "host": None})


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


class _Locator:
    """Find successive patterns in a text and return their 1-based line numbers."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, pattern: str) -> int:
        m = re.compile(pattern).search(self.text, self.pos)
        if not m:
            return self.line
        line = self.line + self.text.count("\n", self.pos, m.start())
        self.line, self.pos = line + self.text.count("\n", m.start(), m.end()), m.end()
        return line
