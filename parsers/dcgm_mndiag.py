"""DCGM multi-node diagnostics JSON (``dcgmi mndiag --json``): hosts, per-GPU results, global errors.

Command whose output it reads (run by a user on the head node; collector.sh does not run it)::

    dcgmi mndiag --hostList "host-01;host-02;host-03" --run mnubergemm --json > mndiag.json

Sample (hand-written: the shape of tests/fixtures/dcgm-mndiag/dcgmi-mndiag-unit-test-response-3hosts-2gpus-fail.txt, one host, compact)::

    {"DCGM Diagnostic": "DCGM Multi-Node Diagnostic", "metadata": {"num_hosts": 1, "num_entities": 2},
     "hosts": [{"host_id": 0, "hostname": "host-01", "dcgm_version": "4.3.0", "driver_version": "570.32.17",
                "num_entities": 2, "entities": [{"entity_group_id": 1, "entity_group": "GPU", "entity_id": 0}]}],
     "test_categories": [{"category": "Multi-Node Tests", "tests": [{"name": "MNUBERGEMM", "status": "Fail",
       "test_summary": {"status": "Fail"}, "results": [
       {"host_id": 0, "entity_group_id": 1, "entity_group": "GPU", "entity_id": 1, "status": "Fail",
        "warnings": [{"warning": "CUDA memory allocation failed", "error_id": 1, "error_category": 15,
                      "error_severity": 4}]}]}]}]}

What it reads: the document dcgmi's MnDiag.cpp writes (NVIDIA/DCGM; jsoncpp, tab-indented, members sorted by
name) under its root key ``"DCGM Diagnostic": "DCGM Multi-Node Diagnostic"``, and the same document keyed
``"DCGM Multi-Node Diagnostic"`` as testing/python3/dcgm_mndiag_schema.json has it, in any layout.  Results
name their host by ``host_id``, the index into ``hosts``; ``hosts`` is left out of a failed run's output.
A test that failed with no GPU error carries an ``mpi_error`` (``error_category`` "MPI", a string where
other errors have a number); the same error is repeated in ``global_errors``.  ``runtime_error`` (dcgmi
could not run the diagnostic) is kept as a global error.  Text before the document (a prompt, a banner) is
skipped.  Line numbers are found by searching the text for each key in document order.

Schema
------
``dcgm_mndiag_run`` (one row per document):

- ``line`` int — line of the opening ``{``
- ``name`` str — the root key's value ("DCGM Multi-Node Diagnostic")
- ``num_hosts`` int, ``num_entities`` int — metadata as printed
- ``tests`` int — tests in the document; ``status`` str — worst test status (pass, fail, warn, skip,
  not_run), null when no test
- ``failed_hosts`` int — hosts with a fail result; ``runtime_error`` str — dcgmi's runtime error, else null

``dcgm_mndiag_host`` (one row per host):

- ``line`` int — line of its ``hostname``
- ``host_id`` int; ``hostname`` str; ``dcgm_version`` str; ``driver_version`` str — as printed
- ``num_entities`` int; ``gpus`` str — GPU entity ids, comma-joined
- ``status`` str — worst of its results (fail > warn > pass > skip > not_run), null when none
- ``failed`` int — its fail results; ``warned`` int — its warn results

``dcgm_mndiag_result`` (one row per test result of an entity):

- ``line`` int — line of the result's ``status``
- ``category`` str — "Multi-Node Tests"; ``test`` str — "MNUBERGEMM"
- ``host_id`` int; ``hostname`` str — from ``hosts``, null when the document has no such host
- ``entity_group`` str — "GPU"; ``entity_id`` int; ``gpu`` int — the entity id of a GPU, else null
- ``status`` str — pass, fail, warn, skip or not_run; null for any other value (dcgmi prints "Unknown"
  for a result it cannot name), with a ParseIssue; ``status_printed`` str — as printed
- ``message`` str — the warnings' text, "; " between several, else null
- ``error_id`` str — DCGM error ids (``DCGM_FR_*`` numbers) of the warnings, comma-joined, else null
- ``error_category`` str — their categories, comma-joined; ``error_severity`` int — the highest severity
- ``info`` str — info messages, "; " between several, else null

``dcgm_mndiag_error`` (one row per error not tied to a GPU):

- ``line`` int — line of its ``warning`` (of ``runtime_error``)
- ``scope`` str — global (``global_errors``), mpi (a test's ``mpi_error``) or runtime (``runtime_error``)
- ``test`` str — the test of an ``mpi_error``, else null
- ``host_id`` int; ``hostname`` str — the host it names, else null
- ``message`` str; ``error_id`` int; ``error_category`` str ("MPI" or the number); ``error_severity`` int

Examples
--------
>>> r = parse(SAMPLE)
>>> [(h["hostname"], h["status"], h["gpus"]) for h in r.rows("dcgm_mndiag_host")]
[('host-01', 'fail', '0')]
>>> [(x["hostname"], x["gpu"], x["status"], x["message"], x["line"]) for x in r.rows("dcgm_mndiag_result")]
[('host-01', 1, 'fail', 'CUDA memory allocation failed', 6)]
"""

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="dcgm-mndiag",
    title="DCGM multi-node diagnostics JSON (dcgmi mndiag --json)",
    commands=("dcgmi mndiag --hostList <hosts> --run mnubergemm --json",),
    tables=("dcgm_mndiag_run", "dcgm_mndiag_host", "dcgm_mndiag_result", "dcgm_mndiag_error"),
    versions_seen=("DCGM 4.3-4.6 MnDiag.cpp writer", "dcgm_mndiag_schema.json"),
    not_collected_because=(
        "dcgmi mndiag is run once for many hosts from a head node, not on each node: the user adds its JSON"
    ),
    empty_means_none=("dcgm_mndiag_error",),
)

SCHEMA = {
    "dcgm_mndiag_run": (
        Column("line", "int", "line of the opening brace"),
        Column("name", "str", "root key's value"),
        Column("num_hosts", "int", "metadata num_hosts"),
        Column("num_entities", "int", "metadata num_entities"),
        Column("tests", "int", "tests in the document"),
        Column("status", "str", "worst test status"),
        Column("failed_hosts", "int", "hosts with a fail result"),
        Column("runtime_error", "str", "dcgmi's runtime error"),
    ),
    "dcgm_mndiag_host": (
        Column("line", "int", "line of its hostname"),
        Column("host_id", "int", "host index"),
        Column("hostname", "str", "host name as printed"),
        Column("dcgm_version", "str", "DCGM version"),
        Column("driver_version", "str", "driver version"),
        Column("num_entities", "int", "entities on the host"),
        Column("gpus", "str", "GPU entity ids, comma-joined"),
        Column("status", "str", "worst of its results"),
        Column("failed", "int", "fail results"),
        Column("warned", "int", "warn results"),
    ),
    "dcgm_mndiag_result": (
        Column("line", "int", "line of the result's status"),
        Column("category", "str", "test category"),
        Column("test", "str", "test name"),
        Column("host_id", "int", "host index"),
        Column("hostname", "str", "host name from hosts"),
        Column("entity_group", "str", "entity group"),
        Column("entity_id", "int", "entity id"),
        Column("gpu", "int", "GPU index"),
        Column("status", "str", "pass, fail, warn, skip, not_run"),
        Column("status_printed", "str", "status as printed"),
        Column("message", "str", "warnings' text, joined"),
        Column("error_id", "str", "DCGM error ids, comma-joined"),
        Column("error_category", "str", "error categories, comma-joined"),
        Column("error_severity", "int", "highest error severity"),
        Column("info", "str", "info messages, joined"),
    ),
    "dcgm_mndiag_error": (
        Column("line", "int", "line of its warning"),
        Column("scope", "str", "global, mpi or runtime"),
        Column("test", "str", "test of an mpi_error"),
        Column("host_id", "int", "host index"),
        Column("hostname", "str", "host name"),
        Column("message", "str", "error text"),
        Column("error_id", "int", "DCGM error id"),
        Column("error_category", "str", "error category"),
        Column("error_severity", "int", "error severity"),
    ),
}

_NAME = "DCGM Multi-Node Diagnostic"
_ROOT = re.compile(r'"DCGM (?:Multi-Node )?Diagnostic"\s*:\s*"DCGM Multi-Node Diagnostic"')
#: worst first
_ORDER = ("fail", "warn", "pass", "skip", "not_run")
_PRINTED = "Pass, Fail, Warn, Skip, Not Run"
_STATUS = {"warning": "warn", "skipped": "skip", "not run": "not_run", "passed": "pass", "failed": "fail"}


def detect(text: str) -> int:
    """Confidence that text is dcgmi mndiag JSON (above dcgmi diag's, whose root key it shares)."""
    return 95 if _ROOT.search(text) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    m = _ROOT.search(text)
    brace = text.rfind("{", 0, m.start()) if m else -1
    if brace < 0:
        first = text.strip().splitlines()[0]
        if first.startswith("Error:") and text.count("\n", 0, 4096) <= 3:
            raise CollectorError(
                first[:300]
            )  # dcgmi's own answer ("Error: Unable to connect to host engine")
        raise ParseError(f'not dcgmi mndiag JSON: no "{_NAME}" document')
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[brace:])
    except json.JSONDecodeError as exc:
        raise ParseError(f"dcgmi mndiag JSON does not load: {exc}") from exc
    except RecursionError as exc:
        raise ParseError("dcgmi mndiag JSON nested too deep to read") from exc
    if not isinstance(doc, dict):
        raise ParseError("dcgmi mndiag JSON is not an object")
    find = _Locator(text, brace)
    result = ParseResult()
    hosts: dict[int, dict[str, Any]] = {}
    find.at(r'"hosts"\s*:')
    for h in _dicts(doc.get("hosts")):
        name = _str(h.get("hostname"))
        line = find(rf'"hostname"\s*:\s*{re.escape(json.dumps(name))}' if name is not None else r'"hostname"')
        gpus = [_int(e.get("entity_id")) for e in _dicts(h.get("entities")) if _is_gpu(e)]
        host_id = _int(h.get("host_id"))
        row: dict[str, Any] = {
            "line": line,
            "host_id": host_id,
            "hostname": name,
            "dcgm_version": _str(h.get("dcgm_version")),
            "driver_version": _str(h.get("driver_version")),
            "num_entities": _int(h.get("num_entities")),
            "gpus": ",".join(str(g) for g in gpus if g is not None) or None,
            "status": None,
            "failed": 0,
            "warned": 0,
        }
        if host_id is not None:
            hosts[host_id] = row
        result.add("dcgm_mndiag_host", row)
    statuses: list[str] = []
    find.at(r'"test_categories"\s*:')
    for cat in _dicts(doc.get("test_categories")):
        for test in _dicts(cat.get("tests")):
            name = _str(test.get("name"))
            if (status := _status(test.get("status"))) is not None:
                statuses.append(status)
            if isinstance(test.get("mpi_error"), dict):
                _error(result, find, test["mpi_error"], "mpi", name, hosts)
            find.at(r'"results"\s*:', top=False)
            for r in _dicts(test.get("results")):
                line = find(r'"status"\s*:')
                if _status(r.get("status")) is None:
                    printed = text.splitlines()[line - 1] if line else ""
                    result.issue(
                        line or 0, printed, f"result status {r.get('status')!r} is none of {_PRINTED}"
                    )
                _result(result, line, _str(cat.get("category")), name, r, hosts)
    find.at(r'"global_errors"\s*:')
    for err in _dicts(doc.get("global_errors")):
        _error(result, find, err, "global", None, hosts)
    runtime = _str(doc.get("runtime_error"))
    if runtime is not None:
        find.at(r'"runtime_error"\s*:')
        result.add(
            "dcgm_mndiag_error",
            {"line": find.last, "scope": "runtime", "test": None, "host_id": None, "hostname": None,
             "message": runtime, "error_id": None, "error_category": None, "error_severity": None},
        )  # fmt: skip
    meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    result.add(
        "dcgm_mndiag_run",
        {
            "line": text.count("\n", 0, brace) + 1,
            "name": _str(doc.get("DCGM Diagnostic", doc.get(_NAME))),
            "num_hosts": _int(meta.get("num_hosts")),
            "num_entities": _int(meta.get("num_entities")),
            "tests": len(statuses),
            "status": min(statuses, key=_ORDER.index) if statuses else None,
            "failed_hosts": sum(1 for h in result.rows("dcgm_mndiag_host") if h["failed"]),
            "runtime_error": runtime,
        },
    )
    return result


def _result(
    result: ParseResult,
    line: int | None,
    category: str | None,
    test: str | None,
    r: dict[str, Any],
    hosts: dict[int, dict[str, Any]],
) -> None:
    host_id = _int(r.get("host_id"))
    host = hosts.get(host_id) if host_id is not None else None
    status = _status(r.get("status"))
    warnings = _dicts(r.get("warnings"))
    severities = [s for w in warnings if (s := _int(w.get("error_severity"))) is not None]
    info = [str(i) for i in r.get("info") or [] if isinstance(i, (str, int, float))]
    entity = _int(r.get("entity_id"))
    result.add(
        "dcgm_mndiag_result",
        {
            "line": line,
            "category": category,
            "test": test,
            "host_id": host_id,
            "hostname": host["hostname"] if host else None,
            "entity_group": _str(r.get("entity_group")),
            "entity_id": entity,
            "gpu": entity if _is_gpu(r) else None,
            "status": status,
            "status_printed": _str(r.get("status")),
            "message": _join(w.get("warning") for w in warnings),
            "error_id": _join((w.get("error_id") for w in warnings), ","),
            "error_category": _join((w.get("error_category") for w in warnings), ","),
            "error_severity": max(severities) if severities else None,
            "info": _join(info),
        },
    )
    if host is not None and status is not None:
        host["failed"] += status == "fail"
        host["warned"] += status == "warn"
        if host["status"] is None or _ORDER.index(status) < _ORDER.index(host["status"]):
            host["status"] = status


def _error(
    result: ParseResult,
    find: _Locator,
    err: dict[str, Any],
    scope: str,
    test: str | None,
    hosts: dict[int, dict[str, Any]],
) -> None:
    host_id = _int(err.get("host_id"))
    host = hosts.get(host_id) if host_id is not None else None
    result.add(
        "dcgm_mndiag_error",
        {
            "line": find(r'"warning"\s*:'),
            "scope": scope,
            "test": test,
            "host_id": host_id,
            "hostname": host["hostname"] if host else None,
            "message": _str(err.get("warning")),
            "error_id": _int(err.get("error_id")),
            "error_category": _str(err.get("error_category")),
            "error_severity": _int(err.get("error_severity")),
        },
    )


class _Locator:
    """Line numbers of keys, found by searching forward from the last one found (document order)."""

    def __init__(self, text: str, start: int) -> None:
        self.text = text
        self.start = self.pos = start
        self.last: int | None = None

    def at(self, pattern: str, *, top: bool = True) -> None:
        """Start the next searches at a section's key, searched from the top of the document (or on)."""
        m = re.compile(pattern).search(self.text, self.start if top else self.pos)
        self.pos = m.end() if m else self.pos
        self.last = self.text.count("\n", 0, m.start()) + 1 if m else None

    def __call__(self, pattern: str) -> int | None:
        m = re.compile(pattern).search(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return self.text.count("\n", 0, m.start()) + 1


def _status(value: Any) -> str | None:
    """pass, fail, warn, skip or not_run; None for anything else (dcgmi prints "Unknown")."""
    s = str(value or "not run").strip().lower()
    return _STATUS.get(s, s if s in _ORDER else None)


def _is_gpu(entity: dict[str, Any]) -> bool:
    return str(entity.get("entity_group", "GPU")).upper() == "GPU" or entity.get("entity_group_id") == 1


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return None if value is None or isinstance(value, (dict, list)) else str(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


def _join(values: Any, sep: str = "; ") -> str | None:
    kept = [str(v) for v in values if v is not None and str(v) != ""]
    return sep.join(kept) or None
