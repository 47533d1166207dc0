"""fs rules on ``aws cloudwatch get-metric-data`` exports, judged like get-metric-statistics ones.

The exports below are the real aws-cli v2 get-metric-data answer (tests/fixtures/cloudwatch/
awscli-example-get-metric-data-v2-billing.txt: indentation, key order, ``Messages``) with its Label,
Id, Timestamps and Values EDITED to an FSx or EBS series (no real FSx get-metric-data export was
found); ``gmd()`` says what each test changes.  The real AWS/EC2 export is used as it is.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from analyzer.judge import engine
from analyzer.judge.engine import Context
from analyzer.judge.rules.fs import ebs_queue, fsx_free_capacity, fsx_utilization, verdict
from tests.rules.helpers import analyze, fixture, write_node

FS = "fs-0123456789abcdef0"
VOL = "vol-0123456789abcdef0"
BILLING = "awscli-example-get-metric-data-v2-billing.txt"
WAITING = "vm-xz-tail6-headless-cpu.txt"  # iostat, iowait 41.44 %
FS_RULES = (
    "fs.fsx.utilization_sustained",
    "fs.fsx.free_capacity_low",
    "fs.ebs.queue_sustained",
    "fs.verdict",
)


def gmd(label: str, values: list[float], *, query_id: str = "m1", period_s: int = 60) -> str:
    """The real get-metric-data answer with Label, Id and one datapoint per value (newest first, as the
    CLI returns them by default) edited in; timestamps end at 2026-12-01T07:59:00+00:00."""
    end = datetime(2026, 12, 1, 7, 59)
    stamps = [(end - timedelta(seconds=period_s * i)).isoformat() + "+00:00" for i in range(len(values))]
    indent = ",\n" + " " * 20
    return fixture(
        "cloudwatch",
        BILLING,
        {
            '"Id": "m1"': f'"Id": "{query_id}"',
            '"Label": "EstimatedCharges"': f'"Label": "{label}"',
            '"2024-09-26T12:00:00+00:00"': indent.join(f'"{s}"' for s in stamps),
            "542.38": indent.join(repr(float(v)) for v in reversed(values)),
        },
    )


def with_command(root: Path, node: str, path: str, command: str) -> None:
    """Set the manifest ``command`` of one file of a node bundle written by write_node."""
    manifest = root / node / "manifest.tsv"
    rows = manifest.read_text().splitlines(keepends=True)
    for i, row in enumerate(rows):
        cells = row.rstrip("\n").split("\t")
        if cells[0] == path:
            cells[6] = command
            rows[i] = "\t".join(cells) + "\n"
    manifest.write_text("".join(rows))


def test_fsx_saturation_from_get_metric_data_without_a_statistic(tmp_path: Path) -> None:
    """The acceptance case: the only FSx export is get-metric-data, over 80 % for an hour, nodes wait on
    I/O.  The Label names metric, namespace and file system; nothing names the statistic."""
    values = [40.0] * 20 + [93.0] * 60 + [45.0] * 10  # 60 one-minute datapoints at/above the line
    root = tmp_path / "c"
    write_node(
        root,
        "n1",
        {
            "cmd/iostat.txt": ("iostat", fixture("iostat", WAITING)),
            "extra/cw-fsx.json": ("-", gmd(f"FSx DiskIopsUtilization {FS}", values)),
        },
    )
    res = analyze(root)
    (f,) = res.of("fs.fsx.utilization_sustained")
    assert f.severity.value == "critical"
    assert (f.params["file_system"], f.params["metric"]) == (FS, "DiskIopsUtilization")
    assert f.params["statistic"] is None
    assert (f.params["longest_minutes"], f.params["period_s"]) == (60.0, 60)
    assert "no statistic" in f.params["statistic_note"] and "statistic unknown" in f.message
    assert f.evidence and all(
        e.file == "n1/extra/cw-fsx.json" and "93.0" in (e.text or "") for e in f.evidence
    )
    (v,) = res.of("fs.verdict")
    assert v.params["branch"] == "capacity saturated" and v.route.owner == "filesystem-capacity"
    (signal,) = v.params["capacity_signals"]
    assert signal["signal"] == "fsx_utilization" and signal["statistic"] is None
    assert f"{FS} DiskIopsUtilization (statistic unknown)" == signal["series"]
    assert "no FSx utilisation metrics" not in v.message


def test_statistic_and_metric_from_the_manifest_command(tmp_path: Path) -> None:
    """A file added with its command line in the manifest: the query names metric, dimension and Stat."""
    queries = (
        '[{"Id":"util","MetricStat":{"Metric":{"Namespace":"AWS/FSx","MetricName":"DiskIopsUtilization",'
        f'"Dimensions":[{{"Name":"FileSystemId","Value":"{FS}"}}]}},"Period":60,"Stat":"Maximum"}}}}]'
    )
    command = (
        f"aws cloudwatch get-metric-data --metric-data-queries '{queries}' --start-time 2026-12-01T06:00:00Z"
    )
    root = tmp_path / "c"
    write_node(
        root, "n1", {"extra/answer.json": ("-", gmd("DiskIopsUtilization", [85.0] * 10, query_id="util"))}
    )
    with_command(root, "n1", "extra/answer.json", command)
    (f,) = analyze(root).of("fs.fsx.utilization_sustained")
    assert (f.params["file_system"], f.params["statistic"], f.severity.value) == (FS, "Maximum", "warning")
    assert "statistic_note" not in f.params


def test_statistic_from_the_query_id(tmp_path: Path) -> None:
    root = tmp_path / "c"
    text = gmd(f"{FS} FileServerDiskThroughputUtilization", [97.0] * 20, query_id="fsx_tput_avg")
    write_node(root, "n1", {"extra/cw.json": ("-", text)})
    (f,) = analyze(root).of("fs.fsx.utilization_sustained")
    assert (f.params["metric"], f.params["statistic"]) == ("FileServerDiskThroughputUtilization", "Average")


def test_unknown_statistic_above_100_percent_is_not_judged(tmp_path: Path) -> None:
    """Values over 100 % are a Sum or a SampleCount of the percentage: the rule cannot read them."""
    root = tmp_path / "c"
    write_node(root, "n1", {"extra/cw.json": ("-", gmd(f"DiskIopsUtilization {FS}", [160.0] * 30))})
    res = analyze(root)
    assert res.of("fs.fsx.utilization_sustained") == [] and res.of("fs.verdict") == []


def test_ebs_queue_unknown_statistic_judged_only_at_one_minute(tmp_path: Path) -> None:
    queue = [0.5] * 5 + [3.0] * 10 + [0.4] * 5
    root = tmp_path / "minute"
    write_node(root, "n1", {"extra/cw.json": ("-", gmd(f"VolumeQueueLength {VOL}", queue))})
    (q,) = analyze(root).of("fs.ebs.queue_sustained")
    assert (q.params["volume"], q.params["statistic"], q.params["longest_minutes"]) == (VOL, None, 10.0)
    assert "at most 60 s" in q.params["statistic_note"]
    root = tmp_path / "five-minutes"  # a Sum or a SampleCount of 5 would pass the line by itself
    write_node(root, "n1", {"extra/cw.json": ("-", gmd(f"VolumeQueueLength {VOL}", queue, period_s=300))})
    assert analyze(root).of("fs.ebs.queue_sustained") == []


def test_free_capacity_unknown_statistic_bytes_judged_counts_not(tmp_path: Path) -> None:
    root = tmp_path / "bytes"
    free = [150 * 2**30] * 10 + [40 * 2**30] * 2
    write_node(root, "n1", {"extra/cw.json": ("-", gmd(f"FSx FreeDataStorageCapacity {FS}", free))})
    res = analyze(root)
    (f,) = res.of("fs.fsx.free_capacity_low")
    assert (f.params["free_gib"], f.params["statistic"]) == (40.0, None)
    assert "1 MiB" in f.params["statistic_note"]
    (v,) = res.of("fs.verdict")
    assert [s["signal"] for s in v.params["capacity_signals"]] == ["fsx_free_low"]
    root = tmp_path / "counts"  # how many disks reported: a SampleCount, not free bytes
    write_node(root, "n1", {"extra/cw.json": ("-", gmd(f"FSx FreeDataStorageCapacity {FS}", [4.0] * 12))})
    assert analyze(root).of("fs.fsx.free_capacity_low") == []


def test_verdict_headroom_not_shown_by_an_unknown_statistic(tmp_path: Path) -> None:
    """Waiting nodes and FSx utilisation of no named statistic below the line: maybe a Minimum."""
    root = tmp_path / "c"
    write_node(
        root,
        "n1",
        {
            "cmd/iostat.txt": ("iostat", fixture("iostat", WAITING)),
            "extra/cw.json": ("-", gmd(f"DiskIopsUtilization {FS}", [35.0] * 30)),
        },
    )
    (v,) = analyze(root).of("fs.verdict")
    assert v.params["branch"] == "I/O-bound, file-system headroom unknown"
    assert v.route.owner == "support-bundle"
    assert v.params["fsx_series_statistic_unknown"] == 1 and "names no statistic" in v.message
    assert "no FSx utilisation metrics" not in v.message


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        (fsx_utilization, "no FSx utilisation series"),
        (fsx_free_capacity, "no FSx FreeDataStorageCapacity series"),
        (ebs_queue, "no EBS VolumeQueueLength series"),
        (verdict, "no iowait report and no FSx or EBS CloudWatch series"),
    ],
)
def test_rules_say_they_examined_nothing_on_another_metric(
    tmp_path: Path, module: object, reason: str
) -> None:
    """The rules' side of "not examined": each check raises the engine's NotExamined when the only
    CloudWatch export is another metric (the real AWS/EC2 CPUUtilization answer)."""
    root = tmp_path / "c"
    real = fixture("cloudwatch", "awscli-example-2014-cpu-max-unindented.txt")
    write_node(root, "n1", {"extra/cw-ec2.json": ("-", real)})
    res = analyze(root)
    with pytest.raises(engine.NotExamined, match=reason):
        list(module.check(Context(res.con)))  # type: ignore[attr-defined]


def test_fs_rules_not_examined_when_the_only_export_is_another_metric(tmp_path: Path) -> None:
    """No [OK] for a file system nobody exported: skipped, with what was missing."""
    root = tmp_path / "c"
    real = fixture("cloudwatch", "awscli-example-2014-cpu-max-unindented.txt")  # AWS/EC2 CPUUtilization
    write_node(root, "n1", {"extra/cw-ec2.json": ("-", real)})
    res = analyze(root)
    for rule in FS_RULES:
        assert res.outcome(rule) == "skipped", (rule, res.outcomes[rule])
    assert "FreeDataStorageCapacity" in (res.outcomes["fs.fsx.free_capacity_low"].reason or "")
    assert "VolumeQueueLength" in (res.outcomes["fs.ebs.queue_sustained"].reason or "")
