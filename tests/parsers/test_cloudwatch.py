"""Tests for parsers.cloudwatch on the real fixtures in tests/fixtures/cloudwatch/.

Both real samples are AWS/EC2 CPUUtilization (no public AWS/FSx export was found); the FSx cases
below are SYNTHETIC inline strings in the documented CLI / CSV shapes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import parsers
from parsers import cloudwatch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "cloudwatch"
ALL = sorted(p.name for p in FIXTURES.glob("*.txt"))
FS = "fs-0123456789abcdef0"


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ALL)
def test_detect_kind(name: str) -> None:
    assert parsers.detect_kind(load(name)) == "cloudwatch"


@pytest.mark.parametrize("name", ALL)
def test_rows_have_schema_columns(name: str) -> None:
    names = [c.name for c in cloudwatch.SCHEMA["cw_metric"]]
    assert all(list(row) == names for row in cloudwatch.parse(load(name)).rows("cw_metric"))


def test_awscli_2014_unordered_python2_floats() -> None:
    text = load("awscli-example-2014-cpu-max-unindented.txt")
    result = cloudwatch.parse(text)
    assert result.issues == []
    rows = result.rows("cw_metric")
    assert len(rows) == 21
    assert {(r["metric"], r["statistic"], r["unit"], r["label"], r["period_s"]) for r in rows} == {
        ("CPUUtilization", "Maximum", "Percent", "CPUUtilization", 3600)
    }
    assert [r["ts"] for r in rows] == sorted(r["ts"] for r in rows)  # datapoints were unordered
    assert (rows[0]["ts"], rows[0]["value"], rows[0]["line"]) == ("2014-02-18T23:18:00", 0.67, 44)
    assert (rows[1]["ts"], rows[1]["value"], rows[1]["line"]) == ("2014-02-19T00:18:00", 0.33, 4)
    peak = max(rows, key=lambda r: r["value"])
    assert (peak["ts"], peak["value"]) == ("2014-02-19T03:18:00", 99.67)
    assert rows[0]["namespace"] is None  # the content does not say; the file name can
    named = cloudwatch.parse(text, filename="cw/i-1234567890abcdef0_CPUUtilization_Maximum.json")
    first = named.rows("cw_metric")[0]
    assert (first["namespace"], first["dimension_name"], first["dimension_value"]) == (
        "AWS/EC2",
        "InstanceId",
        "i-1234567890abcdef0",
    )


def test_get_metric_data_truncated_inside_timestamps() -> None:
    text = load("grafana-21438-get-metric-data-cliv1-truncated.txt")
    result = cloudwatch.parse(text)
    rows = result.rows("cw_metric")
    assert len(rows) == 24
    assert [(i.line_no, "truncated" in i.reason) for i in result.issues] == [(31, True)]
    assert (
        rows[0]["ts"] == "2020-01-08T16:50:00" and rows[-1]["ts"] == "2020-01-08T20:40:00"
    )  # was descending
    assert (rows[-1]["line"], rows[0]["line"]) == (8, 31)
    assert {(r["label"], r["period_s"], r["value"], r["metric"]) for r in rows} == {
        ("testRequestLabel", 600, None, None)
    }
    named = cloudwatch.parse(text, filename="cw_AWS-EC2_CPUUtilization_i-0123456789abcdef0.json")
    assert {(r["namespace"], r["metric"], r["dimension_value"]) for r in named.rows("cw_metric")} == {
        ("AWS/EC2", "CPUUtilization", "i-0123456789abcdef0")
    }


# --- SYNTHETIC FSx examples (no real AWS/FSx export was available) ---

FSX_READ_SUM = f"""\
$ aws cloudwatch get-metric-statistics --namespace AWS/FSx --metric-name DataReadBytes \\
    --dimensions Name=FileSystemId,Value={FS} --statistics Sum --period 60 \\
    --start-time 2024-05-01T10:00:00Z --end-time 2024-05-01T10:03:00Z
{{
    "Label": "DataReadBytes",
    "Datapoints": [
        {{"Timestamp": "2024-05-01T10:02:00+00:00", "Sum": 4294967296.0, "Unit": "Bytes"}},
        {{"Timestamp": "2024-05-01T10:00:00+00:00", "Sum": 1073741824.0, "Unit": "Bytes"}}
    ]
}}
"""


def test_synthetic_fsx_data_read_bytes_sum_with_command_hint() -> None:
    rows = cloudwatch.parse(FSX_READ_SUM).rows("cw_metric")
    assert [(r["ts"], r["value"], r["line"]) for r in rows] == [
        ("2024-05-01T10:00:00", 1073741824.0, 8),
        ("2024-05-01T10:02:00", 4294967296.0, 7),
    ]
    assert {
        (r["namespace"], r["metric"], r["dimension_name"], r["dimension_value"], r["statistic"]) for r in rows
    } == {("AWS/FSx", "DataReadBytes", "FileSystemId", FS, "Sum")}
    assert {r["period_s"] for r in rows} == {60}  # from --period, not from the 120 s gap
    assert parsers.detect_kind(FSX_READ_SUM) == "cloudwatch"


FSX_FREE_MIN = """\
{"MetricDataQueries": [{"Id": "free", "MetricStat": {"Metric": {"Namespace": "AWS/FSx",
  "MetricName": "FreeDataStorageCapacity", "Dimensions": [{"Name": "FileSystemId",
  "Value": "fs-0123456789abcdef0"}]}, "Period": 300, "Stat": "Minimum"}}]}
{"MetricDataResults": [{"Id": "free", "Label": "FreeDataStorageCapacity", "StatusCode": "Complete",
  "Timestamps": ["2024-05-01T10:05:00Z", "2024-05-01T10:00:00Z"],
  "Values": [1.9e10, 2.5e11]}], "Messages": []}
"""


def test_synthetic_fsx_free_capacity_minimum_get_metric_data_with_queries() -> None:
    result = cloudwatch.parse(FSX_FREE_MIN)
    assert result.issues == []
    rows = result.rows("cw_metric")
    assert [(r["ts"], r["value"]) for r in rows] == [
        ("2024-05-01T10:00:00", 2.5e11),
        ("2024-05-01T10:05:00", 1.9e10),
    ]
    assert {
        (r["namespace"], r["metric"], r["dimension_value"], r["statistic"], r["period_s"]) for r in rows
    } == {("AWS/FSx", "FreeDataStorageCapacity", FS, "Minimum", 300)}


def test_synthetic_fsx_hints_from_file_name_only() -> None:
    text = '{"Datapoints": [{"Timestamp": "2024-05-01T10:00:00Z", "Minimum": 1.5e12, "Unit": "Bytes"}]}'
    (row,) = cloudwatch.parse(text, filename="cw-fsx-fs-0ab1234567890cdef-FreeDataStorageCapacity.json").rows(
        "cw_metric"
    )
    assert (row["namespace"], row["metric"], row["dimension_value"], row["statistic"]) == (
        "AWS/FSx",
        "FreeDataStorageCapacity",
        "fs-0ab1234567890cdef",
        "Minimum",
    )
    (row,) = cloudwatch.parse(text, filename=f"{FS}_DataReadBytes_Sum.json").rows("cw_metric")
    assert (row["metric"], row["statistic"], row["dimension_name"]) == (
        "DataReadBytes",
        "Minimum",
        "FileSystemId",
    )


FSX_CONSOLE_CSV = f"""\
Label,FileSystemId={FS} DiskIopsUtilization (Maximum),{FS} FileServerDiskThroughputUtilization (Maximum)
2024-05-01 10:00:00,12.5,40.25
2024-05-01 10:05:00,97,
2024-05-01 10:10:00,99.5,100
2024-05-01 10:15:00,n/a?,88
"""


def test_synthetic_fsx_console_csv_maximum() -> None:
    result = cloudwatch.parse(FSX_CONSOLE_CSV)
    rows = result.rows("cw_metric")
    iops = [r for r in rows if r["metric"] == "DiskIopsUtilization"]
    tput = [r for r in rows if r["metric"] == "FileServerDiskThroughputUtilization"]
    assert [r["value"] for r in iops] == [12.5, 97.0, 99.5]
    assert [(r["ts"], r["value"]) for r in tput] == [
        ("2024-05-01T10:00:00", 40.25),
        ("2024-05-01T10:10:00", 100.0),  # the empty 10:05 cell is a gap, not a zero
        ("2024-05-01T10:15:00", 88.0),
    ]
    assert {(r["namespace"], r["dimension_value"], r["statistic"], r["period_s"]) for r in rows} == {
        ("AWS/FSx", FS, "Maximum", 300)
    }
    assert [(i.line_no, i.reason) for i in result.issues] == [(5, "not a number: 'n/a?'")]
    assert parsers.detect_kind(FSX_CONSOLE_CSV) == "cloudwatch"


FSX_LONG_CSV = f"""\
timestamp;namespace;metric_name;dimension_name;dimension_value;stat;value;unit;period
2024-05-01T10:00:00Z;AWS/FSx;DataReadBytes;FileSystemId;{FS};Sum;1073741824;Bytes;60
2024-05-01T10:01:00Z;AWS/FSx;DataReadBytes;FileSystemId;{FS};Sum;52428800;Bytes;60
2024-05-01T10:00:00Z;AWS/FSx;FreeDataStorageCapacity;FileSystemId;{FS};Minimum;1234,5;Bytes;60
garbled;line
"""


def test_synthetic_long_csv_with_one_bad_line() -> None:
    result = cloudwatch.parse(FSX_LONG_CSV)
    rows = result.rows("cw_metric")
    assert [(r["metric"], r["statistic"], r["value"], r["line"]) for r in rows] == [
        ("DataReadBytes", "Sum", 1073741824.0, 2),
        ("DataReadBytes", "Sum", 52428800.0, 3),
        ("FreeDataStorageCapacity", "Minimum", 1234.5, 4),  # locale decimal comma
    ]
    assert {(r["namespace"], r["dimension_value"], r["unit"], r["period_s"]) for r in rows} == {
        ("AWS/FSx", FS, "Bytes", 60)
    }
    assert [i.line_no for i in result.issues] == [5]
    assert parsers.detect_kind(FSX_LONG_CSV) == "cloudwatch"


def test_percentile_extended_statistics() -> None:
    text = (
        '{"Label": "VolumeReadOps", "Datapoints": [{"Timestamp": "2024-05-01T10:00:00Z",'
        ' "ExtendedStatistics": {"p99": 12.0}, "Average": 3.0, "Unit": "Count"}]}'
    )
    rows = cloudwatch.parse(text, filename="vol-0123456789abcdef0-VolumeReadOps.json").rows("cw_metric")
    assert [(r["statistic"], r["value"], r["namespace"]) for r in rows] == [
        ("Average", 3.0, "AWS/EBS"),
        ("p99", 12.0, "AWS/EBS"),
    ]


def test_no_datapoints_is_an_empty_table() -> None:
    result = cloudwatch.parse('{"Label": "DataReadBytes", "Datapoints": []}')
    assert result.tables == {"cw_metric": []} and result.issues == []
