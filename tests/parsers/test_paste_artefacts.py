"""Paste artefacts of any tool: blocks pasted indented, commented out or quoted, tables taken out of PDFs,
CloudWatch answers that travelled as something else (tabs turned to spaces, JSON with comments, a Python repr).

Each case takes a REAL fixture and applies the artefact to it (every derivation is written out here), then
asserts the parse gives the same values as the real file, and that detection names the kind.
"""

from __future__ import annotations

import pytest

import parsers
from parsers._text import clean_lines, common_prefix, split_flat_table, unprefixed
from tests.conftest import fixture_text

#: kind, real fixture (tests/fixtures/<kind>/), table
REAL = [
    ("dmesg", "gpud-readme-dmesg-ctime-xid13-109.txt", "kernel_event"),
    ("nvidia-smi-q", "jp-simulator-8xh100-565-complete.txt", "gpu"),
    ("df", "jc-ubuntu-18.04-df-h.out", "filesystem_usage"),
    ("lfs-df", "fsx-workshop-mnt-fsx-3ost.txt", "lustre_target"),
    ("mounts", "jc-centos-7.7-findmnt-l.out", "mount"),
    ("iostat", "sysstat-222-ydx-json-quoted-backticks.txt", None),
]
PREFIXES = ["    ", "\t", "# ", "    # ", "> ", ">> ", "> > "]


def _values(result: parsers.ParseResult, table: str | None) -> list[dict[str, object]]:
    tables = [table] if table else sorted(result.table_rows())
    return [
        {k: v for k, v in row.items() if k not in ("host", "raw")} for t in tables for row in result.rows(t)
    ]


def _prefixed(text: str, prefix: str) -> str:
    return "".join(
        prefix + line if line.strip() else prefix.rstrip() + "\n" for line in text.splitlines(True)
    )


@pytest.mark.optional("a fixture already quoted is not quoted again: no paste looks so", skips="already a")
@pytest.mark.parametrize("prefix", PREFIXES, ids=repr)
@pytest.mark.parametrize(("kind", "name", "table"), REAL, ids=[r[1] for r in REAL])
def test_a_block_pasted_with_a_prefix_parses_as_the_original(
    kind: str, name: str, table: str | None, prefix: str
) -> None:
    text = fixture_text(kind, name)
    if prefix.startswith(">") and text.lstrip().startswith(">"):
        pytest.skip("already a markdown quote")
    pasted = _prefixed(text, prefix)
    original = parsers.parse(kind, text)
    again = parsers.parse(kind, pasted)
    assert _values(again, table) == _values(original, table)
    assert _values(original, table)
    assert parsers.detect_kind(pasted) == parsers.detect_kind(text) == kind


def test_only_the_common_part_of_the_indentation_goes() -> None:
    text = fixture_text("nvidia-smi-q", "jp-simulator-8xh100-565-complete.txt")
    pasted = _prefixed(text, "    ")
    cleaned = clean_lines(pasted)
    assert cleaned.prefix == "    "
    first_key = next(line for line in cleaned.lines if "Product Name" in line)
    assert first_key.startswith("    Product Name")  # the tool's own indentation stays


def test_a_kernel_log_costs_one_test_and_keeps_the_fast_path() -> None:
    log = "[    0.000000] Linux version 6.1\n" * 1000 + "    indented continuation\n"
    assert common_prefix(log.splitlines()) == ""
    assert clean_lines(log).prefix == "" and clean_lines(log).noise == []


def test_marks_that_are_text_are_no_prefix() -> None:
    assert common_prefix(["#define A 1", "#define B 2"]) == ""
    assert common_prefix(["# nvidia-smi"]) == ""  # one line: a root prompt, not a commented block
    assert common_prefix(["//fs01/share on /mnt type cifs", "//fs02/x on /y type cifs"]) == ""
    assert unprefixed("  a\n  b\n") == "a\nb\n"


def test_df_table_that_lost_its_newlines_gives_the_same_rows() -> None:
    text = fixture_text("df", "jc-centos-7.7-df.out")
    flat = " ".join(text.split())
    assert "\n" not in flat
    assert parsers.detect_kind(flat) == "df"
    rows = parsers.parse("df", flat).rows("filesystem_usage")
    original = parsers.parse("df", text).rows("filesystem_usage")
    assert [(r["device"], r["size_bytes"], r["mountpoint"]) for r in rows] == [
        (r["device"], r["size_bytes"], r["mountpoint"]) for r in original
    ]
    assert {r["line"] for r in rows} == {1}


def test_lfs_df_table_that_lost_its_newlines() -> None:
    flat = " ".join(fixture_text("lfs-df", "fsx-workshop-mnt-fsx-3ost.txt").split())
    assert parsers.detect_kind(flat) == "lfs-df"
    rows = parsers.parse("lfs-df", flat).rows("lustre_target")
    assert [(r["uuid"], r["target_type"], r["use_printed"]) for r in rows] == [
        ("fsx-MDT0000_UUID", "MDT", "4%"),
        ("fsx-OST0000_UUID", "OST", "0%"),
        ("fsx-OST0001_UUID", "OST", "0%"),
        ("fsx-OST0002_UUID", "OST", "0%"),
        (None, "summary", "0%"),
    ]


def test_a_flat_line_that_is_not_a_table_stays_one_line() -> None:
    import re

    header = re.compile(r"Filesystem\s+Size\s+Used\s+Avail\s+Use%\s+Mounted\s+on")
    assert split_flat_table("disk at 95% on / and 80% on /home", header) is None
    # a mount point with a blank in it leaves cells over: ambiguous, so not split
    flat = "Filesystem Size Used Avail Use% Mounted on a 1 1 0 50% /x y b 1 1 0 5% /z q"
    assert split_flat_table(flat, header) is None


def test_csv_header_wrapped_mid_field_is_joined() -> None:
    # the real capture with its header hard-wrapped (a PDF's text): in the middle of a field, then also
    # right after a separator; the parse gives the rows of the real file
    text = fixture_text("nvidia-smi-csv", sorted_csv())
    header, *rest = text.splitlines(True)
    original = parsers.parse("nvidia-smi-csv", text)
    assert _values(original, "gpu_query")
    mid = header.index(".", header.index(",") + 1) + 2  # inside the second or a later field
    after_sep = header.index(",", mid) + 1
    for cuts in ([mid], [mid, after_sep]):
        pieces = [header[a:b] for a, b in zip([0, *cuts], [*cuts, len(header)], strict=True)]
        wrapped = "\n".join(p.rstrip("\n") for p in pieces) + "\n" + "".join(rest)
        again = parsers.parse("nvidia-smi-csv", wrapped)
        moved = [{**row, "line": row["line"] + len(cuts)} for row in _values(original, "gpu_query")]
        assert _values(again, "gpu_query") == moved, cuts  # each row one line further down per cut


def sorted_csv() -> str:
    from tests.conftest import fixture_files

    def whole_header(lines: list[str]) -> bool:
        # a real capture whose first line is a complete header: as many fields as the row under it
        return len(lines) > 1 and lines[0].count(",") > 0 and lines[0].count(",") == lines[1].count(",")

    return next(
        p.name
        for p in fixture_files("nvidia-smi-csv")
        if not p.name.startswith("derived-") and whole_header(p.read_text().splitlines())
    )


def test_cloudwatch_output_text_with_spaces_reads_by_shape() -> None:
    text = fixture_text("cloudwatch", "derived-awscli-2014-04-cpu-max-output-text-tabs-expanded.txt")
    assert "\t" not in text and parsers.detect_kind(text) == "cloudwatch"
    rows = parsers.parse("cloudwatch", text).rows("cw_metric")
    assert len(rows) == 23
    assert (rows[0]["ts"], rows[0]["value"], rows[0]["statistic"], rows[0]["unit"]) == (
        "2014-04-08T23:18:00",
        46.88,
        "Maximum",
        "Percent",
    )


def test_cloudwatch_get_metric_data_text_with_spaces_and_a_label_of_words() -> None:
    text = (  # derived: the real math-iops answer (awscli examples) as --output text, tabs as spaces
        "METRICDATARESULTS   m3   Avg Total IOPS   Complete\n"
        "TIMESTAMPS   2024-09-29T15:20:00+00:00\n"
        "VALUES   96.85\n"
    )
    (row,) = parsers.parse("cloudwatch", text).rows("cw_metric")
    assert (row["query_id"], row["label"], row["status_code"], row["value"]) == (
        "m3",
        "Avg Total IOPS",
        "Complete",
        96.85,
    )


def test_cloudwatch_json_with_comments() -> None:
    text = fixture_text("cloudwatch", "handedited-awscli-get-metric-data-v2-billing-js-comments.txt")
    (row,) = parsers.parse("cloudwatch", text).rows("cw_metric")
    assert (row["metric"], row["value"], row["ts"], row["line"], row["value_line"]) == (
        "EstimatedCharges",
        542.38,
        "2024-09-26T12:00:00",
        8,
        11,
    )


def test_cloudwatch_pprint_of_a_boto3_answer() -> None:
    text = fixture_text("cloudwatch", "boto3-1696-pprint-python2-empty-http-headers.txt")
    assert parsers.detect_kind(text) == "cloudwatch"
    result = parsers.parse("cloudwatch", text)
    assert result.rows("cw_metric") == [] and not result.issues
    tz = "{'Datapoints': [{'Timestamp': datetime.datetime(2024, 5, 1, 10, 0, tzinfo=tzlocal()), 'Sum': 1.0}]}"
    (issue,) = parsers.parse("cloudwatch", tz).issues  # a local time: never guessed, said
    assert "timestamp not understood" in issue.reason
