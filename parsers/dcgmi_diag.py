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
warnings as objects, test_summary) and 2.x/3.x root "DCGM GPU Diagnostic" (results with gpu_ids).

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

Examples
--------
>>> r = parse(SAMPLE)
>>> [(t["category"], t["test"], t["gpu"], t["result"]) for t in r.rows("dcgm_test")]
[('Hardware', 'GPU Memory', 1, 'pass'), ('Hardware', 'GPU Memory', 0, 'fail')]
>>> r.rows("dcgm_test")[1]["message"][:72]
'GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for er'
"""

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import strip_prefix, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="dcgmi-diag",
    title="DCGM diagnostics (dcgmi diag)",
    commands=("dcgmi diag -r 1", "dcgmi diag -r 2", "dcgmi diag -r 3", "dcgmi diag -r 1 -j"),
    tables=("dcgm_test",),
    versions_seen=("DCGM 2.4.6", "3.3.x", "4.0.0", "4.2.3 (JSON)", "4.4.2"),
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
    )
}

_CHUNK = 45  # DCGM prints messages in pieces of exactly this many characters
_SECTION = re.compile(r"^[|+]-{3,}\s+([A-Za-z][A-Za-z ]*?)\s+-+\+")
_RESULT = re.compile(r"^(pass|fail|warn|skip|not run)(?:\s*-\s*(?:(all)|gpus?\s*:\s*([\d,\s]+)))?$", re.I)
_ENTITY = re.compile(r"^(GPU|CPU)\s*(\d+)\s*:\s*(pass|fail|warn|skip|not run)$", re.I)
_LABEL = re.compile(r"^(?:warning|info|error)(?:\s*:\s*(GPU|CPU)\s*(\d+))?$", re.I)
_LEADING_GPU = re.compile(r"^GPU (\d+)\b")
_DUP_GPU = re.compile(r"\bGPU (\d+)GPU \1\b")
_DRV = "Driver Version Detected"
_TOOL_ERROR = re.compile(r"^\s*(?:Error:.*|.*Unable to (?:connect|establish).*|.*could not be run.*)$", re.M)


def detect(text: str) -> int:
    """Confidence that text is dcgmi diag output."""
    if re.search(r'"DCGM (?:GPU )?Diagnostic"\s*:', text):
        return 90
    if re.search(r"Successfully ran diagnostic for group|\|\s*Diagnostic\s*\|\s*Result\s*\|", text):
        return 90
    if re.search(r"^\s*[|+]-{3,}\s+(?:Metadata|Deployment|Hardware|Integration|Stress)\s+-+\+", text, re.M):
        return 85
    if re.search(r"\|\s+(?:(?:Pass|Fail|Warn|Skip) - (?:All|GPUs?:)|GPU\d+: (?:Pass|Fail|Warn|Skip))", text):
        return 70
    return 0


def parse(text: str) -> ParseResult:
    require_text(text)
    start = text.lstrip()
    if start.startswith("{") or re.search(r'^\s*"DCGM (?:GPU )?Diagnostic"', text, re.M):
        return _parse_json(text)
    return _parse_table(text)


def _parse_table(text: str) -> ParseResult:
    result = ParseResult()
    st: dict[str, Any] = {"category": None, "test": None, "msg": None, "rows": [], "meta": {}}
    table_lines = 0
    for no, raw in enumerate(text.splitlines(), start=1):
        s = strip_prefix(raw).lstrip()
        if not s.startswith(("|", "+")):
            continue
        table_lines += 1
        if m := _SECTION.match(s):
            _flush(st)
            st["category"] = m.group(1).strip()
            continue
        if set(s.rstrip()) <= set("+-=|"):
            _flush(st)
            continue
        if s.startswith("+"):
            result.issue(no, raw, "unrecognised table border")
            continue
        _row(st, no, raw, s[1:], result)
    _flush(st)
    if not st["rows"]:
        if err := _TOOL_ERROR.search(text):
            raise CollectorError(err.group(0).strip()[:300])
        if table_lines:
            raise ParseError("dcgmi diag table without any test result")
        raise ParseError("not dcgmi diag output: no result table")
    for row in st["rows"]:
        row["dcgm_version"] = st["meta"].get("dcgm version")
        row["driver_version"] = st["meta"].get("driver version detected")
        result.add("dcgm_test", row)
    return result


def _row(st: dict[str, Any], no: int, raw: str, body: str, result: ParseResult) -> None:
    """Handle one ``| name | value |`` row (body = the text after the first ``|``)."""
    sep = body.find("|")
    if sep < 0:
        result.issue(no, raw, "table row without a column separator")
        return
    name = body[:sep].strip()
    cell = body[sep + 1 :]
    cell = cell[1:] if cell.startswith(" ") else cell
    if cell.rstrip().endswith("|"):
        cell = cell.rstrip()[:-1]
    value = cell.strip()
    if name == "Diagnostic" and value == "Result":
        return
    if st["category"] == "Metadata" or name.lower() in ("dcgm version", "driver version detected"):
        st["meta"][name.lower()] = value
        return
    if lab := _LABEL.match(name):
        _flush(st)
        gpu = int(lab.group(2)) if lab.group(1) and lab.group(1).upper() == "GPU" else None
        st["msg"] = {"gpu": gpu, "chunks": [_piece(cell)]}
        return
    res = _RESULT.match(value)
    if name:
        if not res:
            _flush(st)
            result.issue(no, raw, "row is neither a test result nor a message")
            return
        _flush(st)
        st["test"] = {"name": name, "category": st["category"], "rows": {}}
        _results(st, no, res)
        return
    ent = _ENTITY.match(value)
    if ent and st["test"]:
        _flush(st)
        gpu = int(ent.group(2)) if ent.group(1).upper() == "GPU" else None
        _add(st, no, gpu, ent.group(3))
    elif res and res.group(3) and st["test"]:
        _flush(st)
        _results(st, no, res)
    elif st["msg"] is not None:
        st["msg"]["chunks"].append(_piece(cell))
    elif value:
        result.issue(no, raw, "continuation row without a test or message above it (cut excerpt?)")


def _results(st: dict[str, Any], no: int, res: re.Match[str]) -> None:
    gpus = [int(g) for g in re.findall(r"\d+", res.group(3) or "")]
    for gpu in gpus or [None]:
        _add(st, no, gpu, res.group(1))


def _add(st: dict[str, Any], no: int, gpu: int | None, status: str) -> None:
    test = st["test"]
    row = {
        "line": no,
        "category": test["category"],
        "test": test["name"],
        "gpu": gpu,
        "result": _status(status),
        "message": None,
        "dcgm_version": None,
        "driver_version": None,
    }
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
        target["message"] = f"{target['message']}; {text}" if target["message"] else text


def _piece(cell: str) -> str:
    """The message piece of a cell: its first 45 characters, unless a wider paste filled it further."""
    return cell[:_CHUNK] if not cell[_CHUNK:].strip() else cell.rstrip()


def _status(value: str) -> str:
    return value.strip().lower().replace(" ", "_")


def _parse_json(text: str) -> ParseResult:
    brace = text.find("{")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[brace:]) if brace >= 0 else (None, 0)
    except json.JSONDecodeError as exc:
        raise ParseError(f"dcgmi diag JSON does not parse: {exc}") from exc
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic") if isinstance(doc, dict) else None
    if not isinstance(root, dict):
        raise ParseError('not dcgmi diag JSON: no "DCGM Diagnostic" object')
    if root.get("runtime_error"):
        raise CollectorError(str(root["runtime_error"])[:300])
    meta = {**doc, **root, **_dict(doc.get("metadata")), **_dict(root.get("metadata"))}
    versions = {k: _str(meta.get(key)) for k, key in (("dcgm_version", "version"), ("driver_version", _DRV))}
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
                    row = {"line": line, "category": _str(cat.get("category")), "test": name, "gpu": gpu}
                    row.update(result=_status(str(res.get("status", "not run"))), message=_json_message(res))
                    result.add("dcgm_test", {**row, **versions})
    if not result.rows("dcgm_test"):
        raise ParseError("dcgmi diag JSON without any test result")
    return result


def _json_gpus(res: dict[str, Any]) -> list[int | None]:
    if "entity_id" in res and str(res.get("entity_group", "GPU")).upper() == "GPU":
        return [to_int(str(res["entity_id"]))]
    ids = [int(g) for g in re.findall(r"\d+", str(res.get("gpu_ids", "")))]
    return list(ids) or [None]


def _json_message(res: dict[str, Any]) -> str | None:
    parts: list[str] = []
    for key in ("warnings", "info"):
        items = res.get(key)
        for item in items if isinstance(items, list) else [items] if items else []:
            msg = item.get("warning") if isinstance(item, dict) else item
            if msg:
                parts.append(_DUP_GPU.sub(r"GPU \1", str(msg).strip()))
    return "; ".join(parts) or None


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
