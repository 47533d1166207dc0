"""parsers.cloudwatch on ``aws cloudwatch get-metric-data`` answers: metric, namespace, dimension and
statistic from the queries (in the file, on its command line, in the manifest command), the Label and
the Id; a statistic nothing names stays null.

Real captures (tests/fixtures/cloudwatch/PROVENANCE.md): the LocalStack blog's answer after its
inline-query command line, the aws-cli examples with their command line or query file, the Grafana
issue's CLI v1 answer cut inside its Timestamps.  Texts marked DERIVED edit one of them.
"""

from __future__ import annotations

import json
from functools import partial

import pytest

import parsers
from parsers import cloudwatch
from tests.conftest import fixture_text

FS = "fs-0123456789abcdef0"
LOCALSTACK = "localstack-blog-2022-get-metric-data-inline-queries-label-with-stat.txt"
BILLING = "awscli-example-get-metric-data-v2-billing.txt"
BILLING_CMD = "awscli-example-get-metric-data-v2-billing-with-command.txt"
IOPS = "awscli-example-get-metric-data-v2-math-iops.txt"
IOPS_QUERIES = "awscli-example-get-metric-data-v2-math-iops-with-query-file.txt"
GRAFANA = "grafana-21438-get-metric-data-cliv1-truncated.txt"
KEYS = ("namespace", "metric", "dimension_name", "dimension_value", "statistic", "period_s")


def one(text: str, parse: object = cloudwatch.parse, *args: str) -> dict[str, object]:
    result = parse(text, *args)  # type: ignore[operator]
    assert result.issues == []
    (row,) = result.rows("cw_metric")
    return dict(row)


def described(row: dict[str, object]) -> tuple[object, ...]:
    return tuple(row[k] for k in KEYS)


def test_inline_queries_on_the_prompt_line_name_namespace_and_period() -> None:
    text = fixture_text("cloudwatch", LOCALSTACK)
    assert parsers.detect_kind(text) == "cloudwatch"
    row = one(text)
    assert described(row) == ("test", "Orders", None, None, "Sum", 3600)
    assert (row["query_id"], row["label"], row["value"], row["ts"]) == (
        "my-id",
        "Orders Sum",
        20.0,
        "2022-05-04T09:00:00",
    )
    assert (row["line"], row["value_line"]) == (11, 14)  # the timestamp's line, the value's line


def test_command_line_before_the_answer_gives_dimension_and_statistic() -> None:
    row = one(fixture_text("cloudwatch", BILLING_CMD))
    assert described(row) == ("AWS/Billing", "EstimatedCharges", "Currency", "USD", "Maximum", 21600)
    assert json.loads(str(row["dimensions"])) == {"Currency": "USD"}
    assert (row["line"], row["value_line"]) == (15, 18)


def test_the_answer_alone_names_no_statistic() -> None:
    row = one(fixture_text("cloudwatch", BILLING))
    assert described(row) == (None, "EstimatedCharges", None, None, None, None)


def test_math_expression_result_has_no_metric_and_no_statistic() -> None:
    row = one(fixture_text("cloudwatch", IOPS_QUERIES))  # the query file is pasted before the answer
    assert described(row) == (None, None, None, None, None, None)
    assert json.loads(str(row["extra"])) == {"Expression": "(m1+m2)/300"}
    alone = one(fixture_text("cloudwatch", IOPS))  # the answer without its queries: only the Label
    assert (alone["metric"], alone["statistic"]) == (None, "Average")  # "Avg"; "Total" is no metric


@pytest.mark.parametrize(
    ("label", "query_id", "expected"),
    [
        (f"FSx DataReadBytes {FS}", "m1", ("AWS/FSx", "DataReadBytes", "FileSystemId", FS, None)),
        ("DiskIopsUtilization", "m1", ("AWS/FSx", "DiskIopsUtilization", None, None, None)),
        ("DiskIopsUtilization", "fsx_util_max", ("AWS/FSx", "DiskIopsUtilization", None, None, "Maximum")),
        (
            "fsx util",
            "fsx_freedatastoragecapacity_min",
            ("AWS/FSx", "FreeDataStorageCapacity", None, None, "Minimum"),
        ),
        ("VolumeQueueLength p99", "q1", ("AWS/EBS", "VolumeQueueLength", None, None, "p99")),
        ("m1", "queueLengthAvg", (None, None, None, None, "Average")),
    ],
)
def test_label_and_id_hints(label: str, query_id: str, expected: tuple[object, ...]) -> None:
    text = fixture_text("cloudwatch", BILLING)  # DERIVED: Label and Id edited
    text = text.replace('"EstimatedCharges"', json.dumps(label)).replace('"m1"', json.dumps(query_id))
    row = one(text)
    assert tuple(row[k] for k in KEYS[:5]) == expected and row["query_id"] == query_id


MANIFEST_JSON = (
    'aws cloudwatch get-metric-data --metric-data-queries \'[{"Id":"m1","MetricStat":{"Metric":'
    '{"Namespace":"AWS/FSx","MetricName":"DiskIopsUtilization","Dimensions":[{"Name":"FileSystemId",'
    f'"Value":"{FS}"}}]}},"Period":60,"Stat":"Maximum"}}}}]\' --start-time 2024-09-26T12:00:00Z'
)
MANIFEST_SHORTHAND = (
    "aws cloudwatch get-metric-data --metric-data-queries Id=m1,MetricStat={Metric={Namespace=AWS/FSx,"
    f"MetricName=DiskIopsUtilization,Dimensions=[{{Name=FileSystemId,Value={FS}}}]}},Period=60,Stat=Maximum}}"
)
MANIFEST_QUERY_FILE = json.dumps(
    {
        "MetricDataQueries": [
            {
                "Id": "m1",
                "MetricStat": {
                    "Metric": {
                        "Namespace": "AWS/FSx",
                        "MetricName": "DiskIopsUtilization",
                        "Dimensions": [{"Name": "FileSystemId", "Value": FS}],
                    },
                    "Period": 60,
                    "Stat": "Maximum",
                },
            }
        ]
    }
)


@pytest.mark.parametrize("command", [MANIFEST_JSON, MANIFEST_SHORTHAND, MANIFEST_QUERY_FILE])
def test_manifest_command_names_the_query(command: str) -> None:
    row = one(fixture_text("cloudwatch", BILLING), partial(cloudwatch.parse, command=command))
    assert described(row) == ("AWS/FSx", "DiskIopsUtilization", "FileSystemId", FS, "Maximum", 60)


def test_manifest_command_that_is_a_copied_path_reads_as_a_file_name() -> None:
    path = f"/home/ubuntu/cw/{FS}_DiskIopsUtilization_Maximum.json"
    row = one(fixture_text("cloudwatch", BILLING), partial(cloudwatch.parse, command=path))
    assert tuple(row[k] for k in KEYS[:5]) == ("AWS/FSx", "EstimatedCharges", "FileSystemId", FS, "Maximum")


def test_cut_answer_without_id_takes_the_one_query() -> None:
    """The Grafana answer is cut before its Id (CLI v1 prints it last): one query, one result."""
    result = cloudwatch.parse(fixture_text("cloudwatch", GRAFANA), command=MANIFEST_JSON)
    rows = result.rows("cw_metric")
    assert len(rows) == 24 and {described(r)[:5] for r in rows} == {
        ("AWS/FSx", "DiskIopsUtilization", "FileSystemId", FS, "Maximum")
    }
    assert {r["value"] for r in rows} == {None}  # the values were cut off


def test_output_text_of_get_metric_data_with_its_command() -> None:
    """DERIVED: the real billing answer re-rendered as awscli/text.py prints it (--output text)."""
    doc = json.loads(fixture_text("cloudwatch", BILLING))
    res = doc["MetricDataResults"][0]
    lines = [
        "$ " + MANIFEST_JSON + " --output text",
        "\t".join(["METRICDATARESULTS", res["Id"], "DiskIopsUtilization", res["StatusCode"]]),
    ]
    lines += [f"TIMESTAMPS\t{t}" for t in res["Timestamps"]] + [f"VALUES\t{v}" for v in res["Values"]]
    row = one("\n".join(lines) + "\n")
    assert described(row) == ("AWS/FSx", "DiskIopsUtilization", "FileSystemId", FS, "Maximum", 60)
    assert (row["value"], row["line"], row["value_line"]) == (542.38, 3, 4)
