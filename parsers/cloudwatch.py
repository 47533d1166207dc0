"""CloudWatch metric datapoints (AWS/FSx, AWS/EBS, AWS/EC2, any namespace): CLI JSON and CSV exports.

collector.sh calls no AWS API: the user adds (``--add``, or a cluster bundle's ``extra/``) exports made
with, for example (one file per metric)::

    aws cloudwatch get-metric-statistics --namespace AWS/FSx --metric-name DataReadBytes \\
        --dimensions Name=FileSystemId,Value=fs-0123456789abcdef0 --statistics Sum --period 60 ...
    aws cloudwatch get-metric-data --metric-data-queries file://q.json --start-time ... --end-time ...

Sample (hand-written in the get-metric-statistics JSON shape; no real FSx export is in the samples)::

    {"Label": "DataReadBytes", "Datapoints": [
    {"Timestamp": "2024-05-01T10:01:00Z", "Sum": 52428800.0, "Unit": "Bytes"},
    {"Timestamp": "2024-05-01T10:00:00Z", "Sum": 1073741824.0, "Unit": "Bytes"}]}

Inputs accepted:

- ``get-metric-statistics`` JSON: Datapoints in any order (rows are sorted by time), Label
  before or after, every statistic present (Sum/Average/Minimum/Maximum/SampleCount and
  ExtendedStatistics such as p99) gives a row, lost indentation, Python-2 float noise.
- one response, a JSON list of responses, or several JSON documents one after the other (CLI v1 and
  v2 layouts; epoch or ISO timestamps);
- ``get-metric-data`` JSON (MetricDataResults: Id, Label, Timestamps, Values, StatusCode); a
  ``MetricDataQueries`` document in the same file names the metric of each Id.  TRUNCATED JSON is
  salvaged: complete values are kept, timestamps whose value was cut off give rows with a null
  value, and a ParseIssue says so.
- a long CSV with a header: Timestamp, Namespace, MetricName, DimensionName, DimensionValue (or
  a FileSystemId/VolumeId/InstanceId column, or Dimensions "Name=Value"), Stat/Statistic,
  Value, Unit, Period, Label (names case-insensitive, "," ";" or tab separated).
- the console's wide CSV: a first column of timestamps and one column per series whose header
  reads like ``FileSystemId=fs-0123... DataReadBytes (Sum)`` or ``fs-0123... DataReadBytes``;
  optional rows starting Namespace/MetricName/Statistic/Unit/Period/Dimensions give the rest.

- ``--output text`` (awscli/text.py layout: a ``Label`` line, then ``DATAPOINTS<TAB>`` rows whose
  values come in sorted key order, so the statistics are named from the command's ``--statistics``
  list; get-metric-data's ``METRICDATARESULTS``/``TIMESTAMPS``/``VALUES`` rows) and ``--output
  table`` of get-metric-statistics (the ``| Maximum | Timestamp | Unit |`` header names the columns).

A boto3/boto response printed with ``print()`` or ``pprint`` (a Python repr: single-quoted keys,
``u'...'``, ``datetime.datetime(...)``, ``Decimal('...')``, ``True``/``None``) is rewritten as JSON,
line for line, and read as such (nothing is evaluated; a cut repr is salvaged like cut JSON).  JSON
with ``//`` or ``/* */`` comments (the AWS docs annotate their examples so) is read without them, and
``--output text`` whose tabs became spaces is read by the shape of its rows.  Every dimension of a ``--dimensions Name=..,Value=.. Name=..,Value=..``
command line or a MetricDataQueries entry is kept in ``dimensions``; response keys not read
(``NextToken``, ``ResponseMetadata``) go to ``extra``.  Travel noise (launcher prefixes,
prompts, fences, CRLF) is taken off by ``parsers._text.clean_lines``; a prompt's command line still
gives hints.

What the content does not say (namespace, metric, dimension, statistic, period) comes from
hints: a ``--namespace/--metric-name/--dimensions/--statistics/--period`` command line or a
``# namespace=AWS/FSx metric=...`` comment in the file, then the manifest's ``command`` given to
``parse`` (the CLI command line, the query JSON, or the path the file was copied from), or without
one the ``filename`` given to it (``fs-0123456789abcdef0_DataReadBytes_Sum.json``).
A FileSystemId dimension implies AWS/FSx, VolumeId AWS/EBS, InstanceId AWS/EC2; a metric only one
namespace has (FreeDataStorageCapacity, DiskIopsUtilization, VolumeQueueLength, ...) implies it.

get-metric-data prints no metric name and no statistic.  Each result takes them, in this order, from
its ``MetricDataQueries`` entry (in the file: a ``--cli-input-json`` document or a pasted
``file://q.json`` list; on a command line: ``--metric-data-queries '[...]'`` JSON or its shorthand
``Id=m1,MetricStat={Metric={Namespace=AWS/FSx,...},Period=60,Stat=Maximum}``), then its Label
(``DiskIopsUtilization``, ``FSx DataReadBytes fs-0123456789abcdef0``, ``Orders Sum``: a statistic
word, a namespace word, an id, and a metric name that is known, has two CamelCase humps, or is the
label's only other word), then its Id (``fsx_diskiops_max``, ``free_min``, ``queue_p99``: statistic,
namespace and known metric names among its words; ``m1`` says nothing).  A statistic no hint names is
left null (unknown): the rules decide whether they can judge such a series.  The result of an
``Expression`` query has no metric and no statistic; its expression goes to ``extra``.

Schema
------
``cw_metric`` (one row per datapoint and statistic):

- ``line`` int — line of the datapoint's timestamp
- ``value_line`` int — line of the value where it is printed apart from its timestamp (get-metric-data's
  ``Values`` list, a ``VALUES`` row of ``--output text``), else null
- ``ts`` ts — datapoint start time, UTC
- ``namespace`` str, ``metric`` str — e.g. AWS/FSx, DataReadBytes (null when unknown)
- ``dimension_name`` str, ``dimension_value`` str — e.g. FileSystemId, fs-0123456789abcdef0 (the first one)
- ``dimensions`` str — JSON object of every dimension (``{"BucketName": "...", "StorageType": "..."}``), else null
- ``statistic`` str — Sum, Average, Minimum, Maximum, SampleCount, p99, ...
- ``value`` float — in ``unit``; null when the file was cut before the value
- ``unit`` str — CloudWatch unit (Bytes, Percent, Count, ...)
- ``period_s`` int, seconds — as given, else the smallest gap between the series' timestamps
- ``label`` str — Label / column header as printed
- ``query_id`` str — get-metric-data result ``Id`` (``m1``), else null
- ``status_code`` str — get-metric-data ``StatusCode`` (``Complete``, ``PartialData``, ...), else null
- ``extra`` str — JSON object of the datapoint's / result's other keys as printed (``Messages``, keys
  not seen before), else null

Examples
--------
>>> r = parse(SAMPLE)
>>> [(m["ts"], m["value"]) for m in r.rows("cw_metric")]
[('2024-05-01T10:00:00', 1073741824.0), ('2024-05-01T10:01:00', 52428800.0)]
>>> r.rows("cw_metric")[0]["metric"], r.rows("cw_metric")[0]["statistic"], r.rows("cw_metric")[0]["unit"]
('DataReadBytes', 'Sum', 'Bytes')
>>> r.rows("cw_metric")[0]["period_s"], r.rows("cw_metric")[0]["line"]
(60, 3)
"""

from __future__ import annotations

import ast
import contextlib
import csv
import json
import math
import re
from datetime import datetime, timezone
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_lines, to_float, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="cloudwatch",
    title="CloudWatch metric datapoints (CLI JSON, CSV exports)",
    commands=("aws cloudwatch get-metric-statistics ...", "aws cloudwatch get-metric-data ..."),
    tables=("cw_metric",),
    versions_seen=(
        "AWS CLI v1 (2014 example, 2020 get-metric-data)",
        "AWS CLI v2 get-metric-data (docs example)",
        "AWS CLI v2 get-metric-statistics, two dimensions (2022, steampipe issue)",
    ),
    not_collected_because=(
        "it calls no AWS API (its only network access is the instance metadata service, with --imds);"
        " CloudWatch exports come from the user's --add files or a cluster bundle's extra/,"
        " recognised by content"
    ),
)

SCHEMA = {
    "cw_metric": (
        Column("line", "int", "line of the datapoint"),
        Column("value_line", "int", "line of the value when not the datapoint's line (get-metric-data)"),
        Column("ts", "ts", "datapoint time, UTC"),
        Column("namespace", "str", "AWS/FSx, AWS/EBS, ..."),
        Column("metric", "str", "metric name"),
        Column("dimension_name", "str", "FileSystemId, VolumeId, InstanceId, ..."),
        Column("dimension_value", "str", "fs-..., vol-..., i-..."),
        Column("dimensions", "str", "JSON object of every dimension Name: Value"),
        Column("statistic", "str", "Sum, Average, Minimum, Maximum, SampleCount, pNN"),
        Column("value", "float", "datapoint value, in unit"),
        Column("unit", "str", "CloudWatch unit"),
        Column("period_s", "int", "period in seconds"),
        Column("label", "str", "label as printed"),
        Column("query_id", "str", "get-metric-data result Id"),
        Column("status_code", "str", "get-metric-data StatusCode"),
        Column("extra", "str", "JSON object of other keys as printed"),
    )
}

_INFO_KEYS = tuple(
    c.name for c in SCHEMA["cw_metric"] if c.name not in ("line", "value_line", "ts", "value", "extra")
)
_DOC_KEYS = {"Datapoints", "MetricDataResults", "Label", "Messages", "MetricDataQueries"}
_DP_KEYS = {"Timestamp", "Sum", "Average", "Minimum", "Maximum", "SampleCount", "Unit", "ExtendedStatistics"}
_RESULT_KEYS = {"Id", "Label", "Timestamps", "Values", "StatusCode"}
_PY_REPR = re.compile(
    r"datetime\.datetime\(|Decimal\('|[{,]\s*u?'(?:Datapoints|MetricDataResults|Label|Timestamp|Id|Average|Sum"
    r"|Maximum|Minimum|SampleCount)'\s*:"
)
#: ``aws ... --output text`` rows (awscli/text.py: upper-cased list key, then the scalar values in
#: sorted key order) and ``--output table`` frames.
_TEXT_ROW = re.compile(
    r"^(?:DATAPOINTS|METRICDATARESULTS|TIMESTAMPS|VALUES|EXTENDEDSTATISTICS|MESSAGES)(?:\t|$| +\S)"
)
#: A row of ``--output text`` whose tabs became spaces (a copy from a terminal, a PDF): read by shape.
_SPACED_ROW = re.compile(r"^(?:DATAPOINTS +[-\d.]|METRICDATARESULTS +\w)", re.M)
_STATUS_CODES = frozenset({"Complete", "PartialData", "InternalError", "Forbidden"})
_BARE_DATAPOINTS = re.compile(
    r'^\s*\[\s*\{(?=[^{}]*"Timestamp"\s*:)(?=[^{}]*"(?:Average|Sum|Minimum|Maximum|SampleCount|ExtendedStatistics)"\s*:)',
    re.M,
)
_TABLE_TITLE = re.compile(r"^\|+\s*(?:GetMetricStatistics|GetMetricData)\s*\|+$")
_STATS = {"sum": "Sum", "average": "Average", "avg": "Average", "minimum": "Minimum", "min": "Minimum"}
_STATS.update({"maximum": "Maximum", "max": "Maximum", "samplecount": "SampleCount"})
_ID_PREFIX = (("FileSystemId", "fs"), ("VolumeId", "vol"), ("InstanceId", "i"))
_ID_DIMS = tuple((d, rf"(?<![A-Za-z0-9]){p}-[0-9a-f]{{8,17}}(?![0-9a-f])") for d, p in _ID_PREFIX)
_NS_BY_DIM = {"FileSystemId": "AWS/FSx", "VolumeId": "AWS/EBS", "InstanceId": "AWS/EC2"}
_NS_WORDS = {"fsx": "AWS/FSx", "ebs": "AWS/EBS", "ec2": "AWS/EC2"}
#: Metrics that exist in one namespace only (the AWS/FSx and AWS/EBS metrics the rules and charts read):
#: the name implies the namespace.  CPUUtilization, DataReadBytes, ... are in several and imply nothing.
_NS_BY_METRIC = {
    **dict.fromkeys(
        (
            "FreeDataStorageCapacity",
            "DiskIopsUtilization",
            "FileServerDiskIopsUtilization",
            "FileServerDiskThroughputUtilization",
            "NetworkThroughputUtilization",
        ),
        "AWS/FSx",
    ),
    "VolumeQueueLength": "AWS/EBS",
}
#: Metric names a query Id or a label can be matched against (longest first: DiskIopsUtilization is
#: inside FileServerDiskIopsUtilization).
_KNOWN_METRICS = tuple(
    sorted(
        {*_NS_BY_METRIC, "DataReadBytes", "DataWriteBytes", "DataReadOperations", "DataWriteOperations",
         "MetadataOperations", "CPUUtilization", "VolumeReadOps", "VolumeWriteOps", "VolumeReadBytes",
         "VolumeWriteBytes", "VolumeIdleTime", "BurstBalance"},
        key=lambda m: (-len(m), m),
    )
)  # fmt: skip
_HUMP = re.compile(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]+")
#: ``--metric-data-queries`` on a command line: quoted JSON, quoted shorthand, or one bare word.
_QUERIES_ARG = re.compile(
    r"--metric-data-queries(?:=|\s+)"
    r"(?:'(?P<sq>[^']*)'|\"(?P<dq>(?:\\.|[^\"\\])*)\"|(?P<bare>(?:Id=\S+\s*)+|\S+))"
)
#: A command line that made the export (prompt, sudo, awslocal allowed), to its last continuation line.
_COMMAND_START = re.compile(r"^\s*(?:\S*[$#]\s*)?(?:sudo\s+)?aws(?:local)?\s.*\bcloudwatch\b")
_NUMBERISH = re.compile(r"^-?[\d.]+(?:[eE][-+]?\d+)?$")
_METRIC = re.compile(r"^[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$")
_NOT_METRIC = re.compile(r"^(?:Label|Timestamps?|Values?|Units?|Percent|Bytes|Count|Seconds)$")
#: CSV header (lower case, letters and digits only) -> column
_COLS = {
    alias: col
    for col, aliases in {
        "ts": "timestamp timestamps time date datetime ts",
        "namespace": "namespace",
        "metric": "metricname metric",
        "dimension_name": "dimensionname dimension",
        "dimension_value": "dimensionvalue",
        "dimensions": "dimensions",
        "statistic": "stat statistic statistics",
        "value": "value values",
        "unit": "unit units",
        "period_s": "period periods periodseconds",
        "label": "label",
        **{d: d.lower() for d in _NS_BY_DIM},
    }.items()
    for alias in aliases.split()
}
#: An item of a JSON array of numbers (a get-metric-data ``Values`` list), or the array's end.
_ARRAY_ITEM = re.compile(r"-?(?:\d|\.\d)[\d.eE+-]*|null|NaN|-?Infinity|\]")
_AWS_ERROR = re.compile(
    r"An error occurred \(|Unable to locate credentials|Could not connect to the endpoint"
)


def detect(text: str) -> int:
    """Confidence that text is CloudWatch metric data."""
    if re.search(r'"(?:Datapoints|MetricDataResults)"\s*:', text):
        return 85
    if _BARE_DATAPOINTS.search(text):
        return 70
    if re.search(r"u?'(?:Datapoints|MetricDataResults)'\s*:|u?'Timestamp'\s*:\s*datetime\.datetime\(", text):
        return 80  # a Python repr: parse says so
    if (
        re.search(r"(?m)^\S*\s*(?:DATAPOINTS|METRICDATARESULTS)\t", text)
        or _SPACED_ROW.search(text)
        or re.search(r"(?m)^\S*\s*\|+\s*GetMetric(?:Statistics|Data)\s*\|+\s*$", text)
    ):
        return 75
    head = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
    cols = {re.sub(r"[^a-z0-9]", "", c.lower()) for c in re.split(r"[,;\t]", head)}
    if (
        "value" in cols
        and cols & {"metricname", "metric", "label"}
        and cols & {"timestamp", "time", "ts", "date"}
    ):
        return 70
    if "," in head and re.search(
        r"\b(?:FileSystemId|VolumeId|InstanceId)=|\((?:Sum|Average|Max|Min)\w*\)", head
    ):
        return 60
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse, taking what the content does not say from hints in the text, then from the manifest's
    ``command``: the CLI command line (``--metric-data-queries`` JSON or shorthand, ``--namespace``,
    ...), the query JSON itself, or the path the file was copied from (read as a file name); without a
    command, from the ``filename``."""
    if not command:
        return _parse(text, filename or "", "")
    is_path = not re.search(r"(?:^|\s)--[a-z]", command) and command.lstrip()[:1] not in ("[", "{")
    if is_path and not _COMMAND_START.match(command):
        return _parse(text, command, "")
    return _parse(text, "", command)


def _parse(text: str, filename: str, command: str) -> ParseResult:
    require_text(text)
    text = text.lstrip("\ufeff")
    if _PY_REPR.search(text):
        text = _from_python_repr(text)  # a boto/boto3 response printed by Python: the same data as JSON
    cleaned = clean_lines(text)
    original = text
    if cleaned.hosts is not None or cleaned.noise:  # prefixes, prompts, fences: the same lines without them
        text = "\n".join(cleaned.lines)
    text, typed = _without_commands(original, text)  # a pasted command line's JSON is not the answer
    commands = "\n".join([*(cmd for _, cmd in cleaned.commands), *typed])
    brace = text.find("{")
    if brace < 0 and _AWS_ERROR.search(text):
        raise CollectorError(next(ln for ln in text.splitlines() if _AWS_ERROR.search(ln)).strip()[:300])
    name = re.sub(r"\.(?:json|csv|txt|out|log)$", "", filename.rsplit("/", 1)[-1], flags=re.I)
    said = text[: max(brace, 0)] + "\n" + _comments(original) + "\n" + commands
    base = _merge(
        _hints(_QUERIES_ARG.sub(" ", said)),
        _hints(_QUERIES_ARG.sub(" ", command)) if command.lstrip()[:1] not in ("[", "{") else {},
        _hints(name, words=True, filename=True),
    )
    base["queries"] = {**_command_queries(command), **_command_queries(said)}
    result = ParseResult()
    result.tables["cw_metric"] = []
    lines = [ln.strip() for ln in text.splitlines()]
    if brace >= 0 and re.search(r'"(?:Datapoints|MetricDataResults)"', text):
        _json_docs(text, brace, base, result)
    elif brace >= 0 and _BARE_DATAPOINTS.search(text):  # --query 'Datapoints': the list alone
        _json_docs(text, text.rfind("[", 0, brace) if "[" in text[:brace] else brace, base, result)
    elif any(_TEXT_ROW.match(ln) for ln in lines):
        _text_output(lines, original, base, result)
    elif any(_TABLE_TITLE.match(ln) for ln in lines):
        _table_output(lines, original, base, result)
    elif text.lstrip().startswith("{"):
        raise ParseError("JSON without Datapoints or MetricDataResults")
    else:
        _csv(text, original, base, result)
    _finish(result)
    return result


def _json_docs(text: str, start: int, base: dict[str, Any], result: ParseResult) -> None:
    if "//" in text or "/*" in text:  # the AWS docs' JSON with comments in it
        text = text[:start] + _without_js_comments(text[start:])
    docs = _decoded(text, start, result)
    queries = dict(base.get("queries") or {})
    queries.update({_text(q.get("Id")): q for d in docs for q in _dicts(d.get("MetricDataQueries"))})
    queries.update({_text(d.get("Id")): d for d in docs if _is_query(d)})  # a pasted file://q.json list
    find = _Locator(text)
    for doc in docs:
        info = _merge({"label": doc.get("Label")}, _hints(str(doc.get("Label") or ""), words=True), base)
        doc_extra = {k: v for k, v in doc.items() if k not in _DOC_KEYS}  # NextToken, keys not seen before
        for dp in _dicts(doc.get("Datapoints")):
            _json_datapoint(dp, info, doc_extra, find, result)
        for res in _dicts(doc.get("MetricDataResults")):
            _json_result(doc, res, doc_extra, queries, base, find, result)


def _decoded(text: str, start: int, result: ParseResult) -> list[dict[str, Any]]:
    """The JSON documents of the text, one after another (a truncated one kept up to its cut, said)."""
    docs: list[Any] = []
    decoder, pos = json.JSONDecoder(), start
    while pos < len(text):
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except RecursionError as exc:
            raise ParseError("CloudWatch JSON nested too deep to read") from exc
        except json.JSONDecodeError as exc:
            doc = _repaired(text[pos:], exc)
            lines = text.rstrip().splitlines()
            result.issue(len(lines), lines[-1], "truncated JSON: kept the complete values before the cut")
            pos = len(text)
        if isinstance(doc, list) and any(isinstance(d, dict) and "Timestamp" in d for d in doc):
            doc = {"Datapoints": doc}  # a bare Datapoints list (--query Datapoints)
        docs.extend(doc if isinstance(doc, list) else [doc])
        pos = text.find("{", pos) if text.find("{", pos) >= 0 else len(text)
    return [d for d in docs if isinstance(d, dict)]


def _json_datapoint(
    dp: dict[str, Any], info: dict[str, Any], doc_extra: dict[str, Any], find: _Locator, result: ParseResult
) -> None:
    """One datapoint of get-metric-statistics: a row per statistic it holds."""
    line = find(json.dumps(dp.get("Timestamp")))
    stats = {k: dp[k] for k in ("Sum", "Average", "Minimum", "Maximum", "SampleCount") if k in dp}
    stats.update(dp["ExtendedStatistics"] if isinstance(dp.get("ExtendedStatistics"), dict) else {})
    other = {**doc_extra, **{k: v for k, v in dp.items() if k not in _DP_KEYS}}
    for stat, value in stats.items():
        dp_info = _merge({"statistic": stat, "unit": dp.get("Unit")}, info)
        _add(result, line, dp.get("Timestamp"), value, dp_info, extra=other)


def _json_result(
    doc: dict[str, Any],
    res: dict[str, Any],
    doc_extra: dict[str, Any],
    queries: dict[str | None, Any],
    base: dict[str, Any],
    find: _Locator,
    result: ParseResult,
) -> None:
    """One MetricDataResults item of get-metric-data: a row per timestamp, its value and both lines."""
    info, expression = _result_info(_text(res.get("Id")), _text(res.get("Label")), queries, base)
    info.update(status_code=res.get("StatusCode"))
    other = {**doc_extra, **{k: v for k, v in res.items() if k not in _RESULT_KEYS}, **expression}
    if doc.get("Messages"):
        other["Messages"] = doc["Messages"]
    stamps, values = _list(res.get("Timestamps")), _list(res.get("Values"))
    value_lines: list[int] = []
    if values and find.first("Timestamps", "Values") == "Values":
        value_lines = find.array("Values", len(values))
    stamp_lines = [find(json.dumps(ts)) for ts in stamps]
    if values and not value_lines:
        value_lines = find.array("Values", len(values))
    for i, ts in enumerate(stamps):
        value = values[i] if i < len(values) else None
        info["value_line"] = value_lines[i] if i < len(value_lines) else None
        _add(result, stamp_lines[i], ts, value, info, extra=other)


def _text_output(lines: list[str], original: str, base: dict[str, Any], result: ParseResult) -> None:
    """``--output text``: awscli/text.py prints each list item as its upper-cased key, then the item's
    scalar values in sorted key order (Average < Maximum < Minimum < SampleCount < Sum < Timestamp <
    Unit; Id < Label < StatusCode), a list of scalars one ``KEY<TAB>value`` line each, and a response's
    own scalars (Label, NextToken) on a line of their own."""
    reader = _TextOutput(original.splitlines(), base, result)
    for no, line in enumerate(lines, start=1):
        if line:
            reader.line(no, line)
    reader.flush()
    if not result.rows("cw_metric") and not result.issues:
        raise ParseError("aws --output text without DATAPOINTS or TIMESTAMPS/VALUES rows")


class _TextOutput:
    """``--output text`` being read: the response's label, the METRICDATARESULTS item open with its
    TIMESTAMPS and VALUES, the last DATAPOINTS row (an EXTENDEDSTATISTICS line belongs to it)."""

    def __init__(self, printed: list[str], base: dict[str, Any], result: ParseResult) -> None:
        self.printed, self.base, self.result = printed, base, result
        self.stats = sorted(base.get("statistics") or ([base["statistic"]] if base.get("statistic") else []))
        self.label: str | None = None
        self.result_info: dict[str, Any] | None = None
        self.stamps: list[tuple[int, str]] = []
        self.values: list[tuple[int, float | None]] = []
        self.last: dict[str, Any] | None = None

    def flush(self) -> None:
        """The rows of the METRICDATARESULTS item read: a timestamp and its value each."""
        if self.result_info is not None:
            for i, (no, ts) in enumerate(self.stamps):
                value_no, value = self.values[i] if i < len(self.values) else (None, None)
                info = {**self.result_info, "value_line": value_no}
                _add(self.result, no, ts, value, info, self.printed[no - 1])

    def line(self, no: int, line: str) -> None:
        key, cells = _text_cells(line)
        if key == "DATAPOINTS":
            self.datapoints(no, cells)
        elif key == "EXTENDEDSTATISTICS" and self.last is not None:
            ext = sorted(self.base.get("extended") or [])
            for i, cell in enumerate(cells):
                name = ext[i] if len(ext) == len(cells) else None
                _add(self.result, no, self.last["ts"], to_float(cell), {**self.last, "statistic": name},
                     self.printed[no - 1])  # fmt: skip
        elif key == "METRICDATARESULTS":
            self.flush()
            rid, rlabel, status = (cells + [None, None, None])[:3]
            self.result_info = _result_info(rid, rlabel, self.base.get("queries") or {}, self.base)[0]
            self.result_info.update(status_code=status)
            self.stamps, self.values = [], []
        elif key == "TIMESTAMPS" and cells:
            self.stamps.append((no, cells[0]))
        elif key == "VALUES" and cells:
            self.values.append((no, to_float(cells[0])))
        elif key == "MESSAGES":
            return  # Code<TAB>Value: nothing to attach a row to
        elif self.label is None and re.fullmatch(r"[\w./: -]+", line) and not cells:
            self.label = line  # the response's Label (get-metric-statistics) or NextToken
        elif re.search(r"\d", line):
            self.result.issue(no, self.printed[no - 1], "not a row of aws cloudwatch --output text")

    def datapoints(self, no: int, cells: list[str]) -> None:
        """A DATAPOINTS row: its statistics' values (named by the command's --statistics), its time, unit."""
        printed, result = self.printed[no - 1], self.result
        at = next((i for i, c in enumerate(cells) if _ts(c) and not _NUMBERISH.match(c)), None)
        if at is None:
            result.issue(no, printed, "DATAPOINTS row without a timestamp")
            return
        numbers = cells[:at]
        unit = cells[at + 1] if at + 1 < len(cells) else None
        names: list[str | None] = (
            list(self.stats) if len(self.stats) == len(numbers) else [None] * len(numbers)
        )
        if len(numbers) > 1 and None in names:
            result.issue(no, printed, "text output names no statistic: values kept, statistic null")
        info = _merge({"label": self.label}, _hints(self.label or "", words=True), self.base, {"unit": unit})
        for name, cell in zip(names, numbers, strict=True):
            if cell and to_float(cell) is None:
                result.issue(no, printed, f"DATAPOINTS value not a number: {cell!r}")
            elif cell:
                _add(result, no, cells[at], to_float(cell), {**info, "statistic": name}, printed)
        self.last = {**info, "ts": cells[at]}


def _text_cells(line: str) -> tuple[str, list[str]]:
    """A text-output line's key and cells; tabs turned to spaces are read by the cells' shape."""
    key, _, rest = line.partition("\t")
    cells = rest.split("\t") if rest else []
    if "\t" not in line and _TEXT_ROW.match(line):
        key, *cells = line.split()
        if key == "METRICDATARESULTS" and len(cells) >= 3 and cells[-1] in _STATUS_CODES:
            cells = [cells[0], " ".join(cells[1:-1]), cells[-1]]  # a label of several words
        elif key == "METRICDATARESULTS" and len(cells) >= 2:
            cells = [cells[0], " ".join(cells[1:])]
    return key, cells


def _table_output(lines: list[str], original: str, base: dict[str, Any], result: ParseResult) -> None:
    """``--output table``: ``|| Maximum | Timestamp | Unit ||`` header rows name the columns of the
    rows below them; ``| Label | CPUUtilization |`` gives the label."""
    printed = original.splitlines()
    header: list[str] = []
    label: str | None = None
    for no, line in enumerate(lines, start=1):
        if not line.startswith("|") or set(line) <= set("|+-"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 2 and cells[0] == "Label":
            label = cells[1]
        elif "Timestamp" in cells and all(re.fullmatch(r"[A-Za-z][\w.]*", c) for c in cells):
            header = cells
        elif header and len(cells) == len(header):
            got = dict(zip(header, cells, strict=True))
            info = _merge({"label": label}, _hints(label or "", words=True), base, {"unit": got.get("Unit")})
            for name, cell in got.items():
                if name not in ("Timestamp", "Unit") and cell:
                    _add(
                        result,
                        no,
                        got["Timestamp"],
                        to_float(cell),
                        {**info, "statistic": name},
                        printed[no - 1],
                    )
        elif len(cells) > 1 and re.search(r"\d", line):
            result.issue(no, printed[no - 1], "table row that matches no header")
    if not result.rows("cw_metric"):
        raise ParseError(
            "aws --output table without a Timestamp header and rows (a get-metric-data table is not"
            " read: use --output json)"
        )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(items: Any) -> list[Any]:
    return items if isinstance(items, list) else []


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _is_query(doc: dict[str, Any]) -> bool:
    """A MetricDataQuery entry (``Id`` and ``MetricStat`` or ``Expression``), not a result."""
    return "Id" in doc and ("MetricStat" in doc or "Expression" in doc) and "Timestamps" not in doc


def _result_info(
    rid: str | None, label: str | None, queries: dict[str | None, dict[str, Any]], base: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What one get-metric-data result is: from its query, then its Label, then its Id, then the file's
    hints; and the extra keys to keep (the expression of a math result)."""
    query = queries.get(rid)
    returned = [q for q in queries.values() if q.get("ReturnData") is not False]
    if query is None and rid is None and len(returned) == 1:  # a result cut before its Id: the one query
        query = returned[0]
    guessed = _merge(_hints(label or "", words=True), _id_hints(rid or ""), base)
    if query is not None and "Expression" in query:  # a math result: no metric and no statistic of its own
        guessed = {k: v for k, v in guessed.items() if k not in ("metric", "statistic", "period_s")}
        info = _merge(_query_info(query), {"label": label}, guessed)
        return {**info, "query_id": rid}, {"Expression": query.get("Expression")}
    return {**_merge(_query_info(query), {"label": label}, guessed), "query_id": rid}, {}


def _command_queries(command: str) -> dict[str | None, dict[str, Any]]:
    """The MetricDataQueries a command line names (``--metric-data-queries`` JSON or shorthand,
    ``--cli-input-json`` JSON), or that a query JSON document holds, by Id."""
    found: list[dict[str, Any]] = []
    for m in _QUERIES_ARG.finditer(command):
        quoted = (m.group("dq") or "").replace('\\"', '"')  # in shell double quotes a " is written \"
        found.extend(_queries_in(m.group("sq") or quoted or m.group("bare")))
    for m in re.finditer(r"--cli-input-json(?:=|\s+)'([^']*)'", command):
        found.extend(_queries_in(m.group(1)))
    if not found and command.lstrip()[:1] in ("[", "{"):
        found.extend(_queries_in(command))
    return {_text(q.get("Id")): q for q in found if _text(q.get("Id"))}


def _queries_in(arg: str | None) -> list[dict[str, Any]]:
    """Query entries of a JSON list / ``{"MetricDataQueries": [...]}`` document, or of CLI shorthand."""
    arg = (arg or "").strip()
    if arg[:1] in ("[", "{"):
        try:
            doc = json.loads(arg)
        except (json.JSONDecodeError, RecursionError):
            return []
        if isinstance(doc, dict):
            doc = doc.get("MetricDataQueries", [doc])
        return [q for q in _dicts(doc) if _is_query(q)]
    return [_shorthand(part) for part in re.split(r"\s+(?=Id=)", arg) if part.startswith("Id=")]


def _shorthand(part: str) -> dict[str, Any]:
    """One query in the CLI's shorthand: ``Id=m1,MetricStat={Metric={Namespace=AWS/FSx,MetricName=...,
    Dimensions=[{Name=FileSystemId,Value=fs-...}]},Period=60,Stat=Maximum}`` (or ``Expression=...``)."""

    def get(key: str) -> str | None:
        m = re.search(rf"\b{key}=([^,{{}}\[\]\s]+)", part)
        return m.group(1) if m else None

    dims = re.findall(r"\bName=([^,{}\[\]\s]+),Value=([^,{}\[\]\s]+)", part)
    query: dict[str, Any] = {"Id": get("Id")}
    if expression := get("Expression"):
        return {**query, "Expression": expression}
    metric: dict[str, Any] = {"Namespace": get("Namespace"), "MetricName": get("MetricName")}
    metric["Dimensions"] = [{"Name": n, "Value": v} for n, v in dims]
    return {**query, "MetricStat": {"Metric": metric, "Period": get("Period"), "Stat": get("Stat")}}


def _without_commands(original: str, text: str) -> tuple[str, list[str]]:
    """``text`` with the lines of a pasted ``aws ... cloudwatch`` command blanked (its inline query JSON
    is not the answer; line numbers stay), and each such command joined onto one line."""
    lines = text.splitlines()
    raw = original.splitlines()
    commands: list[str] = []
    no = 0
    while no < len(raw):
        if not _COMMAND_START.match(raw[no]):
            no += 1
            continue
        parts: list[str] = []
        while no < len(raw):
            part = raw[no].rstrip()
            parts.append(part.removesuffix("\\"))
            if no < len(lines):
                lines[no] = ""
            no += 1
            if not part.endswith("\\") and "".join(parts).count("'") % 2 == 0:
                break
        commands.append(" ".join(p.strip() for p in parts))
    return ("\n".join(lines) if commands else text), commands


def _query_info(query: dict[str, Any] | None) -> dict[str, Any]:
    stat = _dict((query or {}).get("MetricStat"))
    metric = _dict(stat.get("Metric"))
    dims = _dicts(metric.get("Dimensions"))
    dim = (dims or [{}])[0]
    info = {
        "dimensions": json.dumps({d.get("Name"): d.get("Value") for d in dims}) if dims else None,
        "namespace": metric.get("Namespace"),
        "metric": metric.get("MetricName"),
        "statistic": stat.get("Stat"),
    }
    info.update(dimension_name=dim.get("Name"), dimension_value=dim.get("Value"), period_s=stat.get("Period"))
    return info


def _csv(text: str, original: str, base: dict[str, Any], result: ParseResult) -> None:
    printed = original.splitlines()
    raw = {no: ln.strip() for no, ln, _ in clean_lines(text).numbered()}
    raw = {no: ln for no, ln in raw.items() if ln and not ln.startswith(("#", "$ ", "```"))}
    if not raw:
        raise ParseError("no CloudWatch data: expected Datapoints / MetricDataResults JSON or a CSV export")
    first = next(iter(raw.values()))
    parsed = csv.reader(raw.values(), delimiter=max(",;\t", key=first.count))
    try:
        rows = [(no, [c.strip() for c in cells]) for no, cells in zip(raw, parsed, strict=False)]
    except csv.Error as exc:  # a field over the csv module's limit, a NUL byte
        raise ParseError(f"CloudWatch CSV not readable: {exc}") from exc
    header = [_COLS.get(re.sub(r"[^a-z0-9]", "", h.lower()), h) for h in rows[0][1]]
    if "value" in header and "ts" in header:
        _csv_long(rows, header, raw, printed, base, result)
        return
    if len(header) < 2:
        raise ParseError("not a CloudWatch CSV: no Value column and no series columns")
    _csv_wide(rows, raw, printed, base, result)


def _csv_long(
    rows: list[tuple[int, list[str]]],
    header: list[str],
    raw: dict[int, str],
    printed: list[str],
    base: dict[str, Any],
    result: ParseResult,
) -> None:
    """A CSV of one value per row (a Timestamp and a Value column, the metric's names beside them)."""
    for no, cells in rows[1:]:
        got = dict(zip(header, cells, strict=False))
        value = to_float(got["value"]) if len(cells) == len(header) else None
        if value is None:
            result.issue(no, printed[no - 1], "CSV row without a numeric value")
            continue
        info = {k: got.get(k) or None for k in _INFO_KEYS if k != "dimensions"}
        for dim in (d for d in _NS_BY_DIM if got.get(d) and not info["dimension_name"]):
            info.update(dimension_name=dim, dimension_value=got[dim])
        _add(result, no, got["ts"], value, _merge(info, _hints(got.get("dimensions") or ""), base), raw[no])


def _csv_wide(
    rows: list[tuple[int, list[str]]],
    raw: dict[int, str],
    printed: list[str],
    base: dict[str, Any],
    result: ParseResult,
) -> None:
    """A console export: a time column, then one column per series (metadata rows name each series)."""
    series = [_merge({"label": h}, _hints(h, words=True)) for h in rows[0][1][1:]]
    base = _merge(base, {"period_s": _min_gap(_ts(cells[0]) for _, cells in rows[1:])})
    for no, cells in rows[1:]:
        key = _COLS.get(re.sub(r"[^a-z0-9]", "", cells[0].lower()))
        if key and key not in ("ts", "value"):  # a metadata row: Namespace, Statistic, Unit, ...
            for info, cell in zip(series, cells[1:], strict=False):
                if key in _NS_BY_DIM:
                    info.update(dimension_name=key, dimension_value=cell)
                else:
                    info.update(_hints(cell) if key == "dimensions" else {key: cell or None})
            continue
        for info, cell in zip(series, cells[1:], strict=False):
            if cell and to_float(cell) is None:
                result.issue(no, printed[no - 1], f"not a number: {cell!r}")
            elif cell:
                _add(result, no, cells[0], to_float(cell), _merge(info, base), raw[no])


def _add(
    result: ParseResult,
    line: int,
    ts_raw: Any,
    value: Any,
    info: dict[str, Any],
    raw: str = "",
    extra: dict[str, Any] | None = None,
) -> None:
    ts = _ts(ts_raw)
    if ts is None:
        result.issue(line, raw or str(ts_raw), "timestamp not understood")
        return
    row: dict[str, Any] = {"line": line, "ts": ts, **{k: _text(info.get(k)) for k in _INFO_KEYS}}
    number = float(value) if isinstance(value, (int, float)) else None
    row["value"] = number if number is not None and math.isfinite(number) else None
    row["period_s"] = to_int(row["period_s"])
    row["value_line"] = info.get("value_line") if isinstance(info.get("value_line"), int) else None
    if row["namespace"] is None:
        by_dimension = _NS_BY_DIM.get(row["dimension_name"] or "")
        row["namespace"] = by_dimension or _NS_BY_METRIC.get(row["metric"] or "")
    row["extra"] = json.dumps(extra, default=str) if extra else None
    result.add("cw_metric", {c.name: row.get(c.name) for c in SCHEMA["cw_metric"]})


def _text(value: Any) -> str | None:
    """A JSON scalar as text; None for null, objects and lists."""
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _finish(result: ParseResult) -> None:
    """Sort each series by time and derive period_s from the timestamps where it is missing."""
    rows = result.tables["cw_metric"]
    key = ("namespace", "metric", "dimension_value", "statistic", "label")
    order: dict[tuple[Any, ...], int] = {}
    for row in rows:
        order.setdefault(tuple(row[k] for k in key), len(order))
    rows.sort(key=lambda r: (order[tuple(r[k] for k in key)], r["ts"]))
    for series in order:
        members = [r for r in rows if tuple(r[k] for k in key) == series]
        gap = _min_gap(m["ts"] for m in members)
        for member in members:
            member["period_s"] = member["period_s"] or gap


def _min_gap(stamps: Any) -> int | None:
    """Smallest gap in seconds between distinct ISO timestamps (None when fewer than two)."""
    times = sorted({datetime.fromisoformat(t) for t in stamps if t})
    gaps = [int((b - a).total_seconds()) for a, b in zip(times, times[1:], strict=False)]
    return min(gaps) if gaps else None


def _ts(raw: Any) -> str | None:
    if isinstance(raw, (int, float)) or (
        isinstance(raw, str) and re.fullmatch(r"\d{10}(?:\d{3})?(?:\.\d+)?", raw)
    ):
        secs = float(raw) / (1000 if float(raw) > 1e11 else 1)
        if not 1e9 <= secs < 1e10:  # 2001..2286: anything else is not an epoch timestamp
            return None
        return datetime.fromtimestamp(secs, tz=timezone.utc).replace(tzinfo=None).isoformat()
    text = re.sub(r"\s*(?:Z|UTC|GMT)$", "+00:00", str(raw).strip().replace("/", "-"))
    text = re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = parsed.utcoffset()
    return (parsed - offset if offset else parsed).replace(tzinfo=None).isoformat()


def _hints(text: str, words: bool = False, filename: bool = False) -> dict[str, Any]:
    """Namespace, metric, dimension, statistic and period named in a command line, label or file name.

    Bare words (``DataReadBytes``, ``Sum``) count only in labels and file names (``words``).
    """
    info = _flags(text)
    pairs = re.findall(r"Name=([\w.:/-]+),Value=([^\s,'\"]+)", text)
    pairs = pairs or re.findall(r"\b(\w+Id)=([\w.:/-]+)", text)
    if pairs:
        info["dimension_name"], info["dimension_value"] = pairs[0]
        info["dimensions"] = json.dumps(dict(pairs))
    for dim, pattern in _ID_DIMS:
        if "dimension_name" not in info and (m := re.search(pattern, text)):
            info["dimension_name"], info["dimension_value"] = dim, m.group(0)
            info["dimensions"] = json.dumps({dim: m.group(0)})
    if words:
        _word_hints(info, text, filename)
    return info


def _flags(text: str) -> dict[str, Any]:
    """What the command line's flags (or ``key=value`` words) name: namespace, metric, statistics, period."""
    info: dict[str, Any] = {}
    if m := re.search(r"--namespace[= ]+['\"]?([\w/.-]+)|\bnamespace[=:]\s*([\w/.-]+)|\bAWS/\w+", text, re.I):
        info["namespace"] = m.group(1) or m.group(2) or m.group(0)
    if m := re.search(r"--metric-name[= ]+['\"]?(\w+)|\bmetric(?:_?name)?[=:]\s*(\w+)", text, re.I):
        info["metric"] = m.group(1) or m.group(2)
    if m := re.search(
        r"--(?:extended-)?statistics[= ]+['\"]?([\w.]+)|\bstat(?:istic)?s?[=:]\s*([\w.]+)", text, re.I
    ):
        info["statistic"] = _stat(m.group(1) or m.group(2)) or m.group(1) or m.group(2)
    if m := re.search(r"--period[= ]+(\d+)|\bperiod(?:_s)?[=:]\s*(\d+)", text, re.I):
        info["period_s"] = int(m.group(1) or m.group(2))
    if m := re.search(r"--statistics[= ]+((?:['\"]?[A-Za-z]+['\"]?[ ,]*)+)", text):
        info["statistics"] = [_stat(w) or w for w in re.findall(r"[A-Za-z]+", m.group(1))]
    if m := re.search(
        r"--extended-statistics[= ]+((?:['\"]?[\w.()%:]+['\"]?[ ,]*)+?)(?=\s--|\s*$)", text, re.M
    ):
        info["extended"] = re.findall(r"[\w.()%:]+", m.group(1))
    return info


def _word_hints(info: dict[str, Any], text: str, filename: bool) -> None:
    """What a label's or file name's bare words name: a statistic, a namespace, a metric."""
    rest = re.sub(r"\S+=\S*|\bAWS/\w+|" + "|".join(p for _, p in _ID_DIMS), " ", text)
    others: list[str] = []  # a label's words that are no statistic and no namespace
    for word in re.split(r"[\s,;()\[\]_.-]+" if filename else r"[\s,;()\[\]\"']+", rest):
        if not word:
            continue
        stat = _stat(word)
        if stat and (filename or word[:1].isupper() or stat.startswith("p")):
            info.setdefault("statistic", stat)
        elif word.lower() in _NS_WORDS:
            info.setdefault("namespace", _NS_WORDS[word.lower()])
        elif filename and _METRIC.match(word) and len(word) >= 4 and not _NOT_METRIC.match(word):
            info.setdefault("metric", word)
        elif not filename:
            others.append(word)
    if not filename and (metric := _label_metric(others)):
        info.setdefault("metric", metric)


def _label_metric(words: list[str]) -> str | None:
    """The metric name among a label's other words: a known one, else one of two or more CamelCase
    humps (``EstimatedCharges``), else a one-hump word that is the only one (``Orders`` of ``Orders
    Sum``).  ``Avg Total IOPS`` (a math expression's label) names none.

    >>> _label_metric(["DiskIopsUtilization"]), _label_metric(["Orders"]), _label_metric(["Total", "IOPS"])
    ('DiskIopsUtilization', 'Orders', None)
    """
    if known := next((w for w in words if w in _KNOWN_METRICS), None):
        return known
    named = [w for w in words if _METRIC.match(w) and len(w) >= 4 and not _NOT_METRIC.match(w)]
    humped = [w for w in named if len(_HUMP.findall(w)) >= 2 and "".join(_HUMP.findall(w)) == w]
    if humped:
        return humped[0]
    return named[0] if len(words) == 1 and named else None


def _id_hints(query_id: str) -> dict[str, Any]:
    """Statistic, namespace and a known metric named among the words of a get-metric-data query Id.

    >>> _id_hints("fsx_diskiopsutilization_max"), _id_hints("queueP99"), _id_hints("m1")
    ({'metric': 'DiskIopsUtilization', 'namespace': 'AWS/FSx', 'statistic': 'Maximum'}, {'statistic': 'p99'}, {})
    """
    info: dict[str, Any] = {}
    squashed = re.sub(r"[^a-z0-9]", "", query_id.lower())
    if metric := next((m for m in _KNOWN_METRICS if m.lower() in squashed), None):
        info["metric"] = metric
    for word in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", query_id):
        low = word.lower()
        if stat := _stat(low) or _stat(re.sub(r"\d+$", "", low)):
            info.setdefault("statistic", stat)
        elif low in _NS_WORDS:
            info.setdefault("namespace", _NS_WORDS[low])
    return info


def _stat(word: str) -> str | None:
    if re.fullmatch(r"[pP]\d+(?:\.\d+)?", word):
        return word.lower()
    return _STATS.get(word.lower())


def _comments(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if ln.lstrip().startswith(("#", "$", "aws ")))


def _merge(*infos: dict[str, Any]) -> dict[str, Any]:
    """First non-null value of each key, in the order given."""
    out: dict[str, Any] = {}
    for info in infos:
        for k, v in info.items():
            if out.get(k) is None and v not in (None, ""):
                out[k] = v
    return out


def _repaired(text: str, exc: json.JSONDecodeError) -> Any:
    """Decode a JSON document that was cut off, or raise ParseError."""
    fixed = _repair(text)
    if fixed is not None:
        with contextlib.suppress(json.JSONDecodeError, RecursionError):
            return json.loads(fixed)
    raise ParseError(f"CloudWatch JSON does not parse: {exc}") from exc


def _repair(text: str) -> str | None:
    """Close a JSON document that was cut off, after its last complete value; None if not truncated."""
    stack: list[str] = []
    cut: tuple[int, tuple[str, ...]] | None = None
    in_str = esc = False
    for i, c in enumerate(text):
        if in_str:
            esc, in_str = (False, True) if esc else (c == "\\", c != '"')
        elif c == '"':
            in_str = True
        elif c in "[{":
            stack.append("]" if c == "[" else "}")
            cut = (i + 1, tuple(stack))
        elif c in "]}":
            if not stack or stack.pop() != c:
                return None
            cut = (i + 1, tuple(stack))
        elif c == ",":
            cut = (i, tuple(stack))
    if not stack or cut is None:
        return None
    return text[: cut[0]] + "".join(reversed(cut[1]))


#: The tokens of a Python repr that JSON spells otherwise (strings first, so a ``True`` inside one stays).
_PY_TOKEN = re.compile(
    r"""(?P<str>(?<![\w'"])[uUbB]?(?:'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))"""
    r"|(?P<dt>\bdatetime\.datetime\((?P<args>[\d\s,]*)(?:,\s*tzinfo=(?P<tz>[\w.]+\([^()]*\)))?\s*\))"
    r"|\bDecimal\((?P<dec>'[^'\n]*'|\"[^\"\n]*\")\)"
    r"|\b(?P<name>True|False|None)\b"
)


def _from_python_repr(text: str) -> str:
    """A Python (2 or 3) repr of a boto/boto3 response rewritten as JSON, line for line: ``u'...'`` and
    ``'...'`` strings become JSON strings, ``datetime.datetime(2013, 3, 18, 16, 44[, tzinfo=tzutc()])``
    an ISO timestamp (UTC: botocore's tzutc, and boto 2's naive times, are UTC), ``Decimal('1.5')`` its
    number, True/False/None true/false/null.  Nothing is evaluated: each literal is read by
    ``ast.literal_eval`` alone, the rest is copied as printed.

    >>> _from_python_repr("{u'Timestamp': datetime.datetime(2013, 3, 18, 16, 44), u'Sum': Decimal('1.5'), 'X': None}")
    '{"Timestamp": "2013-03-18T16:44:00Z", "Sum": 1.5, "X": null}'
    """

    def one(m: re.Match[str]) -> str:
        if m.group("str"):
            literal = m.group("str")
            if literal[:1] in "uU":
                literal = literal[1:]
            try:
                value = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                return m.group(0)
            return json.dumps(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)
        if m.group("dt"):
            parts = [int(p) for p in re.findall(r"\d+", m.group("args"))]
            if not 3 <= len(parts) <= 7 or (m.group("tz") and "utc" not in m.group("tz").lower()):
                return json.dumps(m.group(0))  # a local-time zone: kept as printed, the row says why
            try:
                stamp = datetime(*parts)  # type: ignore[arg-type]  # 3 to 7 ints: year .. microsecond
            except ValueError:
                return json.dumps(m.group(0))
            return json.dumps(stamp.isoformat() + "Z")
        if m.group("dec"):
            number = to_float(m.group("dec")[1:-1])
            return json.dumps(number) if number is not None and math.isfinite(number) else "null"
        return {"True": "true", "False": "false", "None": "null"}[m.group("name")]

    return _PY_TOKEN.sub(one, text)


def _without_js_comments(text: str) -> str:
    """JSON text with ``// ...`` and ``/* ... */`` comments outside strings taken out (the AWS docs
    annotate their examples so); newlines stay, so line numbers do too.

    >>> _without_js_comments('{"a": "http://x", // the URL\\n "b": 1 /* one */}')
    '{"a": "http://x", \\n "b": 1 }'
    """
    out: list[str] = []
    i, n, in_str = 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append("\n" * text.count("\n", i, n if end < 0 else end))
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


class _Locator:
    """Find successive strings in a text and return their 1-based line numbers."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def __call__(self, needle: str) -> int:
        at = self.text.find(needle, self.pos)
        if at < 0:
            return self.line
        self.line += self.text.count("\n", self.pos, at)
        self.pos = at + len(needle)
        return self.line

    def first(self, *keys: str) -> str | None:
        """Which of the JSON keys comes next in the text (None when none does)."""
        found = [(at, key) for key in keys if (at := self.text.find(f'"{key}"', self.pos)) >= 0]
        return min(found)[1] if found else None

    def array(self, key: str, count: int) -> list[int]:
        """Lines of the first ``count`` items of the next ``"key": [...]`` array of numbers (fewer when
        the text was cut); the search goes on after the last item read."""
        self(f'"{key}"')
        lines: list[int] = []
        for m in _ARRAY_ITEM.finditer(self.text, self.pos):
            if m.group(0) == "]" or len(lines) == count:
                break
            lines.append(self(m.group(0)))
        return lines
