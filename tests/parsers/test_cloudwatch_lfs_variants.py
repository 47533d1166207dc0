"""cloudwatch and lfs-df variants: get-metric-statistics with several dimensions and a root prompt, empty
Datapoints, Python reprs of boto/boto3 responses, every statistic and ExtendedStatistics, epoch/ISO timestamps
with offsets and fractions, NextToken/PartialData/Messages, ``--output text``/``table``, console CSVs; ``lfs df``
with inactive OSTs, ``-i`` and ``-iH``, three file systems, prompts, fences, prose and annotations between
blocks, status flags, ``[OST:0x1a]``.

Real fixtures: tests/fixtures/<kind>/ (see each PROVENANCE.md); refused real inputs (Python reprs) are in
tests/fixtures/cloudwatch/refused/ so the every-fixture-parses tests do not pick them up.  Texts built here from
a real fixture (a prefix added, CRLF, a line changed, re-rendered as text output) are labelled "derived"; texts
written here from scratch are "synthetic".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import parsers
from parsers import ParseError, cloudwatch, lfs_df
from tests.conftest import fixture_text
from tests.derive import crlf, srun

IML_INACTIVE = "iml-setting-up-clients-inactive-osts-old-summary.txt"
GSI_INODES = "gsi-pcc-lfs-df-i-phoenix-fenced.txt"
TFS_3FS = "tfs-notes-lfs-df-i-3fs-fenced.txt"
EXACT = "exact-tutorial-lfs-df-1k-and-i-old-summary-prompts.txt"
MAN_HV = "lustre-man-lfs-df-hv-flags-inactive.txt"
MAN_IH = "lustre-man-lfs-df-iH-human-inodes.txt"
CW_2014_04 = "awscli-example-2014-04-cpu-max-indented-with-command.txt"
CW_TWO_DIMS = "steampipe-1311-get-metric-statistics-two-dimensions-root-prompt.txt"
CW_EMPTY = "steampipe-1311-get-metric-statistics-empty-datapoints.txt"
CW_BILLING = "awscli-example-get-metric-data-v2-billing.txt"


def lustre(text: str) -> list[dict[str, Any]]:
    return lfs_df.parse(text).rows("lustre_target")


def cw(text: str) -> list[dict[str, Any]]:
    return cloudwatch.parse(text).rows("cw_metric")


# --- lfs-df -----------------------------------------------------------------------------------------------


def test_inactive_osts_between_active_ones_and_old_summary() -> None:
    text = fixture_text("lfs-df", IML_INACTIVE)  # real: IML docs, Lustre 2.10 client
    result = lfs_df.parse(text)
    assert result.issues == []  # the author's line of dashes is a separator
    rows = result.rows("lustre_target")
    inactive = [r for r in rows if r["status"]]
    assert [(r["uuid"], r["target_index"], r["fsname"], r["line"], r["status"]) for r in inactive] == [
        ("OST0001", 1, "fs", 5, "inactive device"), ("OST0003", 3, "fs", 7, "inactive device"),
        ("OST0005", 5, "fs", 9, "inactive device"), ("OST0007", 7, "fs", 11, "inactive device"),
    ]  # fmt: skip
    assert all(r["size_bytes"] is None and r["use_pct"] is None for r in inactive)
    active = [r for r in rows if r["target_type"] == "OST" and not r["status"]]
    assert [(r["target_index"], r["mount_target"], r["used_printed"]) for r in active] == [
        (0, "[OST:0]", "33.1M"), (2, "[OST:2]", "33.1M"), (4, "[OST:4]", "33.1M"), (6, "[OST:6]", "33.1M"),
    ]  # fmt: skip
    summary = rows[-1]
    assert (summary["target_type"], summary["line"], summary["size_printed"], summary["used_printed"]) == (
        "summary", 13, "11.6G", "132.6M",
    )  # fmt: skip
    assert summary["used_bytes"] == int(132.6 * 1024**2) and summary["fsname"] == "fs"


def test_inactive_with_prompt_annotation_srun_and_crlf() -> None:
    body = fixture_text("lfs-df", IML_INACTIVE).replace(
        "OST0003             : inactive device", "OST0003             : inactive device   <-- the one we lost"
    )
    text = "$ lfs df -h /mnt/fs\n" + body  # derived: a prompt line and an annotation added
    for variant in (text, srun(text), crlf(text)):
        assert parsers.detect_kind(variant) == "lfs-df"
        result = lfs_df.parse(variant)
        assert result.issues == []
        rows = result.rows("lustre_target")
        third = next(r for r in rows if r["uuid"] == "OST0003")
        assert (third["line"], third["status"]) == (8, "inactive device")
        assert len(rows) == 10 and rows[0]["size_printed"] == "1.7G"


def test_inodes_fenced_with_prompt() -> None:
    text = fixture_text("lfs-df", GSI_INODES)  # real: GSI vagrant notes, Lustre 2.15.2, ``` fences kept
    assert parsers.detect_kind(text) == "lfs-df"
    result = lfs_df.parse(text)
    assert result.issues == []
    rows = result.rows("lustre_target")
    assert [(r["uuid"], r["line"], r["inodes_total"], r["inodes_used"], r["inodes_free"]) for r in rows] == [
        ("phoenix-MDT0000_UUID", 4, 4194304, 12280, 4182024),
        ("phoenix-OST0001_UUID", 5, 655360, 266, 655094),
        ("phoenix-OST0002_UUID", 6, 655360, 265, 655095),
        (None, 8, 1322469, 12280, 1310189),
    ]
    assert {(r["size_header"], r["size_bytes"], r["inode_use_pct"], r["use_printed"]) for r in rows} == {
        ("Inodes", None, 1.0, "1%")
    }
    assert rows[-1]["fsname"] == "phoenix" and rows[-1]["mountpoint"] == "/lustre"


def test_inodes_three_filesystems_one_summary_each() -> None:
    result = lfs_df.parse(fixture_text("lfs-df", TFS_3FS))  # real: lustre admin notes, 3 file systems
    assert result.issues == []
    rows = result.rows("lustre_target")
    assert len(rows) == 18
    summaries = [(r["fsname"], r["line"], r["inodes_total"], r["mountpoint"]) for r in rows if not r["uuid"]]
    assert summaries == [
        ("tfs1", 11, 1965594, "/mnt/lustre0/tfs1"),
        ("tfs2", 20, 1965508, "/mnt/lustre1/tfs2"),
        ("tfs3", 28, 1310513, "/mnt/lustre2/tfs3"),
    ]
    tfs3 = [(r["target_type"], r["target_index"]) for r in rows if r["fsname"] == "tfs3" and r["uuid"]]
    assert tfs3 == [("MDT", 0), ("MDT", 1), ("OST", 2), ("OST", 3)]


def test_1k_blocks_then_inodes_with_user_prompts_and_prose_between() -> None:
    text = fixture_text(
        "lfs-df", EXACT
    )  # real: tutorial with [exact@master ~]$ prompts, 'and' between blocks
    result = lfs_df.parse(text)
    assert result.issues == []  # 'and' is prose, not data
    rows = result.rows("lustre_target")
    assert len(rows) == 12
    blocks, inodes = rows[:6], rows[6:]
    assert {r["size_header"] for r in blocks} == {"1K-blocks"} and {r["size_header"] for r in inodes} == {
        "Inodes"
    }
    assert (blocks[-1]["target_type"], blocks[-1]["line"], blocks[-1]["size_bytes"]) == (
        "summary",
        10,
        31230490000 * 1024,
    )  # fmt: skip  -- 'filesystem summary:' with a space
    assert (blocks[1]["uuid"], blocks[1]["used_bytes"], blocks[1]["use_pct"]) == (
        "lustre-OST0000_UUID", 5787591216 * 1024, 74.0,
    )  # fmt: skip
    assert (inodes[0]["uuid"], inodes[0]["inodes_used"], inodes[0]["inode_use_pct"], inodes[0]["line"]) == (
        "lustre-MDT0000_UUID", 11666032, 63.0, 17,
    )  # fmt: skip
    # derived: a mangled target line and a stray number line are data-like: issues with their line numbers
    spoiled = text.replace(
        "lustre-OST0002_UUID     15257856     2941300", "lustre-OST0002_UUID  ???"
    ).replace("and\n", "and 42 more\n")
    result = lfs_df.parse(spoiled)
    assert [(i.line_no, i.line[:22]) for i in result.issues] == [
        (12, "and 42 more"), (20, "lustre-OST0002_UUID  ?"),
    ]  # fmt: skip
    assert len(result.rows("lustre_target")) == 11


def test_verbose_flags_inactive_and_bracket_index_differing_from_uuid() -> None:
    result = lfs_df.parse(fixture_text("lfs-df", MAN_HV))  # real (man page example): lfs df -hv
    assert result.issues == []
    rows = result.rows("lustre_target")
    assert [(r["uuid"], r["flags"], r["status"]) for r in rows] == [
        ("testfs-MDT0000_UUID", None, None), ("testfs-OST0000_UUID", None, None),
        ("testfs-OST0001_UUID", "D", None), ("testfs-OST0002_UUID", "DR", None),
        ("OST0003", None, "inactive device"), ("testfs-OST0006_UUID", None, None), (None, None, None),
    ]  # fmt: skip
    ost6 = rows[5]  # the UUID says index 6, the mount path says [OST:3]: both kept
    assert (ost6["target_index"], ost6["mount_target"], ost6["avail_printed"]) == (6, "[OST:3]", "417.8G")
    assert rows[3]["human_base"] == 1024 and rows[3]["avail_bytes"] == int(570.3 * 1024**3)


def test_human_inode_counts_with_capital_h_and_without_prompt() -> None:
    text = fixture_text("lfs-df", MAN_IH)  # real (man page example): lfs df -iH, counts like 932.2k
    rows = lustre(text)
    assert (rows[0]["inodes_total"], rows[0]["inodes_used"], rows[0]["human_base"]) == (932200, 884600, 1000)
    assert (rows[0]["size_printed"], rows[0]["use_printed"], rows[0]["size_bytes"]) == ("932.2k", "95%", None)
    assert [r["flags"] for r in rows] == [None, None, "D", "DR", None, None, None]
    # derived: without the prompt nothing says -H: the letters are read as powers of 1024
    rows = lustre(text.split("\n", 1)[1])
    assert (rows[0]["inodes_total"], rows[0]["human_base"]) == (int(932.2 * 1024), 1024)


def test_hex_bracket_index_and_grepped_lines_without_header() -> None:
    text = (  # synthetic: an [OST:0x1a] suffix, as the issue describes, in a grep'd excerpt with a prompt
        "$ lfs df | grep -E 'OST001[9a]'\n"
        "scratch-OST0019_UUID 90767651352 65387344040 24423870832  73% /scratch[OST:25]\n"
        "scratch-OST001a_UUID 90767651352 64867282280 24943933072  72% /scratch[OST:0x1a]\n"
    )
    assert parsers.detect_kind(text) == "lfs-df"
    result = lfs_df.parse(text)
    assert result.issues == []
    assert [(r["target_index"], r["mount_target"], r["size_bytes"]) for r in result.rows("lustre_target")] == [
        (25, "[OST:25]", 90767651352 * 1024), (26, "[OST:0x1a]", 90767651352 * 1024),
    ]  # fmt: skip
    # synthetic: a line whose UUID has no index still takes it from the hex suffix
    (row,) = lustre("UUID  1K-blocks  Used  Available Use% Mounted on\nfilesystem_summary: 10 5 5 50% /s\n")
    assert row["target_type"] == "summary" and row["size_bytes"] == 10240


# --- cloudwatch -------------------------------------------------------------------------------------------


def test_get_metric_statistics_indented_with_command_line_hints() -> None:
    text = fixture_text("cloudwatch", CW_2014_04)  # real: aws-cli example, command then 'Output::'
    assert parsers.detect_kind(text) == "cloudwatch"
    result = cloudwatch.parse(text)
    assert result.issues == []
    rows = result.rows("cw_metric")
    assert len(rows) == 23
    assert [r["ts"] for r in rows] == sorted(r["ts"] for r in rows)
    assert (rows[0]["ts"], rows[0]["value"], rows[0]["line"]) == ("2014-04-08T23:18:00", 46.88, 93)
    peak = max(rows, key=lambda r: r["value"])
    assert (peak["ts"], peak["value"], peak["line"]) == ("2014-04-09T03:18:00", 76.84, 28)
    assert {
        (
            r["namespace"],
            r["metric"],
            r["statistic"],
            r["unit"],
            r["period_s"],
            r["dimension_value"],
            r["dimensions"],
        )
        for r in rows
    } == {("AWS/EC2", "CPUUtilization", "Maximum", "Percent", 3600, "i-abcdef", '{"InstanceId": "i-abcdef"}')}


def test_two_dimensions_from_a_root_prompt_command() -> None:
    text = fixture_text("cloudwatch", CW_TWO_DIMS)  # real: steampipe issue 1311, CLI v2, '# aws ...'
    result = cloudwatch.parse(text)
    assert result.issues == []
    (row,) = result.rows("cw_metric")
    assert (row["ts"], row["value"], row["unit"], row["statistic"], row["line"]) == (
        "2022-11-08T00:00:00", 5133326726.0, "Bytes", "Maximum", 6,
    )  # fmt: skip
    assert (row["namespace"], row["metric"], row["label"], row["period_s"]) == (
        "AWS/S3", "BucketSizeBytes", "BucketSizeBytes", 86400,
    )  # fmt: skip
    assert (row["dimension_name"], row["dimension_value"]) == (
        "BucketName", "s3-preprod-myproject1-eu-west-3-012345678901",
    )  # fmt: skip
    assert json.loads(row["dimensions"]) == {
        "BucketName": "s3-preprod-myproject1-eu-west-3-012345678901",
        "StorageType": "IntelligentTieringIAStorage",
    }


def test_empty_datapoints_is_an_answer_not_an_error() -> None:
    text = fixture_text("cloudwatch", CW_EMPTY)  # real: steampipe issue 1311, "Datapoints": []
    assert parsers.detect_kind(text) == "cloudwatch"
    result = cloudwatch.parse(text)
    assert result.tables == {"cw_metric": []} and result.issues == []


def test_python_reprs_of_real_boto_responses_are_read() -> None:
    # real: boto #1398 (a boto 2 list, cut inside its 9th datapoint) and boto3 #212 (empty answer)
    text = fixture_text("cloudwatch", "boto-1398-python2-repr-datetime-list-cut.txt")
    assert parsers.detect_kind(text) == "cloudwatch"
    result = cloudwatch.parse(text)
    rows = result.rows("cw_metric")
    assert [(r["ts"], r["value"], r["statistic"], r["unit"]) for r in rows[:2]] == [
        ("2013-03-18T15:49:00", 31.838, "Average", "Percent"),
        ("2013-03-18T15:54:00", 50.154, "Average", "Percent"),
    ]
    assert len(rows) == 8 and rows[0]["line"] == 8 and rows[0]["period_s"] == 300
    assert any("truncated JSON" in i.reason for i in result.issues)
    empty = cloudwatch.parse(fixture_text("cloudwatch", "boto3-212-python2-repr-u-prefix-empty.txt"))
    assert empty.rows("cw_metric") == [] and not empty.issues


def test_python_repr_with_decimal_is_read() -> None:
    text = "{'Datapoints': [{'Timestamp': '2024-05-01', 'Sum': Decimal('1.5')}]}"  # synthetic
    assert [(r["ts"], r["value"]) for r in cloudwatch.parse(text).rows("cw_metric")] == [
        ("2024-05-01T00:00:00", 1.5)
    ]


def test_every_statistic_extended_statistics_and_units_kept() -> None:
    text = json.dumps(  # synthetic: a get-metric-statistics answer with every statistic
        {
            "Label": "DataReadBytes",
            "Datapoints": [
                {
                    "Timestamp": "2024-05-01T10:00:00.000Z",
                    "SampleCount": 60.0,
                    "Average": 2.5,
                    "Sum": 150.0,
                    "Minimum": 0.0,
                    "Maximum": 9.0,
                    "Unit": "Bytes",
                    "ExtendedStatistics": {"p99": 8.5, "p99.9": 9.0},
                },
            ],
        },  # fmt: skip
        indent=2,
    )
    rows = cloudwatch.parse(text, filename="fs-0123456789abcdef0_DataReadBytes.json").rows("cw_metric")
    assert [(r["statistic"], r["value"], r["unit"]) for r in rows] == [
        ("Sum", 150.0, "Bytes"), ("Average", 2.5, "Bytes"), ("Minimum", 0.0, "Bytes"), ("Maximum", 9.0, "Bytes"),
        ("SampleCount", 60.0, "Bytes"), ("p99", 8.5, "Bytes"), ("p99.9", 9.0, "Bytes"),
    ]  # fmt: skip
    assert {(r["namespace"], r["metric"], r["dimension_value"], r["line"]) for r in rows} == {
        ("AWS/FSx", "DataReadBytes", "fs-0123456789abcdef0", 5)
    }


@pytest.mark.parametrize(
    ("stamp", "ts"),
    [
        ("2024-05-01T10:00:00Z", "2024-05-01T10:00:00"),
        ("2024-05-01T12:00:00+02:00", "2024-05-01T10:00:00"),
        ("2024-05-01T10:00:00.123Z", "2024-05-01T10:00:00.123000"),
        ("2024-05-01T05:30:00.5-04:30", "2024-05-01T10:00:00.500000"),
        ("2024-05-01 10:00:00+0000", "2024-05-01T10:00:00"),
        (1714557600, "2024-05-01T10:00:00"),
        (1714557600000, "2024-05-01T10:00:00"),
        ("1714557600.0", "2024-05-01T10:00:00"),
    ],
)
def test_timestamps_epoch_iso_offsets_fractions(stamp: Any, ts: str) -> None:
    text = json.dumps({"Datapoints": [{"Timestamp": stamp, "Sum": 1.0, "Unit": "Count"}]})  # synthetic
    (row,) = cw(text)
    assert row["ts"] == ts


def test_get_metric_data_partial_next_token_and_messages_kept() -> None:
    doc = json.loads(fixture_text("cloudwatch", CW_BILLING))
    doc["MetricDataResults"][0]["StatusCode"] = "PartialData"  # derived: a partial page of the real answer
    doc["NextToken"] = "xxxxxxxx-page-2"
    doc["Messages"] = [{"Code": "MaxDatapointsExceeded", "Value": "too many"}]
    for text in (json.dumps(doc, indent=4), json.dumps([doc, doc], indent=4)):
        rows = cw(text)
        assert {(r["query_id"], r["status_code"], r["value"], r["label"]) for r in rows} == {
            ("m1", "PartialData", 542.38, "EstimatedCharges")
        }
        extra = json.loads(rows[0]["extra"])
        assert extra == {"NextToken": "xxxxxxxx-page-2", "Messages": doc["Messages"]}


def _as_text_output(doc: dict[str, Any]) -> str:
    """Render a get-metric-statistics answer the way awscli/text.py does (sorted scalar keys)."""
    keys = sorted({k for dp in doc["Datapoints"] for k in dp})
    rows = ["\t".join(["DATAPOINTS", *(str(dp.get(k, "")) for k in keys)]) for dp in doc["Datapoints"]]
    return "\n".join([doc["Label"], *rows]) + "\n"


def test_output_text_of_get_metric_statistics() -> None:
    body = fixture_text("cloudwatch", CW_2014_04)
    command = body.splitlines()[0].strip() + " --output text"
    doc = json.loads(body[body.index("{") :])
    text = "$ " + command + "\n" + _as_text_output(doc)  # derived: the real answer re-rendered as text
    assert parsers.detect_kind(text) == "cloudwatch"
    result = cloudwatch.parse(text)
    assert result.issues == []
    rows = result.rows("cw_metric")
    assert len(rows) == 23
    assert (rows[0]["ts"], rows[0]["value"], rows[0]["statistic"], rows[0]["unit"], rows[0]["line"]) == (
        "2014-04-08T23:18:00", 46.88, "Maximum", "Percent", 20,
    )  # fmt: skip
    assert {(r["label"], r["metric"], r["namespace"], r["dimension_value"]) for r in rows} == {
        ("CPUUtilization", "CPUUtilization", "AWS/EC2", "i-abcdef")
    }
    # synthetic: two statistics come in sorted key order (Average before Sum); without the command they are unnamed
    two = "DataReadBytes\nDATAPOINTS\t10.5\t630.0\t2024-05-01T10:01:00+00:00\tBytes\n"
    named = cw("$ aws cloudwatch get-metric-statistics --statistics Sum Average --output text\n" + two)
    assert [(r["statistic"], r["value"]) for r in named] == [("Average", 10.5), ("Sum", 630.0)]
    result = cloudwatch.parse(two)
    assert [(r["statistic"], r["value"]) for r in result.rows("cw_metric")] == [(None, 10.5), (None, 630.0)]
    assert [(i.line_no, i.reason[:30]) for i in result.issues] == [(2, "text output names no statistic")]


def test_output_text_of_get_metric_data() -> None:
    text = (  # synthetic, in the awscli/text.py layout
        "METRICDATARESULTS\tm1\tEstimatedCharges\tPartialData\n"
        "TIMESTAMPS\t2024-09-26T12:00:00+00:00\n"
        "TIMESTAMPS\t2024-09-26T06:00:00+00:00\n"
        "VALUES\t542.38\n"
        "VALUES\t540.0\n"
        "METRICDATARESULTS\tm2\tDataReadBytes\tComplete\n"
        "TIMESTAMPS\t2024-09-26T12:00:00+00:00\n"
        "VALUES\t7\n"
    )
    assert parsers.detect_kind(text) == "cloudwatch"
    rows = cw(text)
    assert [(r["query_id"], r["ts"], r["value"], r["status_code"], r["line"]) for r in rows] == [
        ("m1", "2024-09-26T06:00:00", 540.0, "PartialData", 3),
        ("m1", "2024-09-26T12:00:00", 542.38, "PartialData", 2),
        ("m2", "2024-09-26T12:00:00", 7.0, "Complete", 7),
    ]


TABLE = """\
-----------------------------------------------------
|                GetMetricStatistics                |
+-------+-------------------------------------------+
|  Label|  DataReadBytes                            |
+-------+-------------------------------------------+
||                    Datapoints                   ||
|+---------+----------+------------------+---------+|
||  Average|   Sum    |    Timestamp     |  Unit   ||
|+---------+----------+------------------+---------+|
||  10.5   |  630.0   |  2024-05-01T10:01:00Z | Bytes ||
||  20.0   |  1200.0  |  2024-05-01T10:00:00Z | Bytes ||
|+---------+----------+------------------+---------+|
"""


def test_output_table_of_get_metric_statistics() -> None:
    assert parsers.detect_kind(TABLE) == "cloudwatch"  # synthetic, in the awscli table layout
    result = cloudwatch.parse(TABLE)
    assert result.issues == []
    assert [
        (r["ts"], r["statistic"], r["value"], r["unit"], r["label"], r["line"])
        for r in result.rows("cw_metric")
    ] == [
        ("2024-05-01T10:00:00", "Average", 20.0, "Bytes", "DataReadBytes", 11),
        ("2024-05-01T10:01:00", "Average", 10.5, "Bytes", "DataReadBytes", 10),
        ("2024-05-01T10:00:00", "Sum", 1200.0, "Bytes", "DataReadBytes", 11),
        ("2024-05-01T10:01:00", "Sum", 630.0, "Bytes", "DataReadBytes", 10),
    ]
    with pytest.raises(ParseError, match="use --output json"):
        cloudwatch.parse("|  GetMetricData  |\n|| Id | Label | StatusCode ||\n|| m1 | X | Complete ||\n")


def test_console_csv_label_per_column_and_label_timestamp_value_rows() -> None:
    wide = (  # synthetic: the console's 'Download as .csv' shape, one column per metric label
        "Label,DataReadBytes,DataWriteBytes\n"
        "2024-05-01T10:00:00.000Z,1073741824,0\n"
        "2024-05-01T10:01:00.000Z,52428800,1048576\n"
    )
    rows = cloudwatch.parse(wide, filename="fs-0123456789abcdef0.csv").rows("cw_metric")
    assert [(r["metric"], r["ts"], r["value"], r["line"], r["period_s"]) for r in rows] == [
        ("DataReadBytes", "2024-05-01T10:00:00", 1073741824.0, 2, 60),
        ("DataReadBytes", "2024-05-01T10:01:00", 52428800.0, 3, 60),
        ("DataWriteBytes", "2024-05-01T10:00:00", 0.0, 2, 60),
        ("DataWriteBytes", "2024-05-01T10:01:00", 1048576.0, 3, 60),
    ]
    assert {(r["namespace"], r["dimension_value"]) for r in rows} == {("AWS/FSx", "fs-0123456789abcdef0")}
    long = (  # synthetic: the other shape, Label/Timestamp/Value rows
        "Label,Timestamp,Value\n"
        "DataReadBytes,2024-05-01 10:00:00,1073741824\n"
        "DataReadBytes,2024-05-01 10:01:00,52428800\n"
        "DataReadBytes,2024-05-01 10:02:00,lost\n"
    )
    assert parsers.detect_kind(long) == "cloudwatch"
    result = cloudwatch.parse(long)
    assert [(r["label"], r["metric"], r["value"]) for r in result.rows("cw_metric")] == [
        ("DataReadBytes", None, 1073741824.0), ("DataReadBytes", None, 52428800.0),
    ]  # fmt: skip
    assert [i.line_no for i in result.issues] == [4]


def test_bare_datapoints_list_from_query() -> None:
    body = fixture_text("cloudwatch", CW_TWO_DIMS)
    command, doc = body.splitlines()[0], json.loads(body[body.index("{") :])
    text = command + " --query Datapoints\n" + json.dumps(doc["Datapoints"], indent=4) + "\n"  # derived
    assert parsers.detect_kind(text) == "cloudwatch"
    (row,) = cw(text)
    assert (row["ts"], row["value"], row["statistic"], row["metric"], row["line"], row["label"]) == (
        "2022-11-08T00:00:00", 5133326726.0, "Maximum", "BucketSizeBytes", 4, None,
    )  # fmt: skip
