"""fs.device.saturated on real iostat -x captures (tests/fixtures/iostat/PROVENANCE.md, "Per-device saturation").

Real: an Alibaba Cloud ECS ``iostat -xdk 2 3`` (the collector's two interval reports, a quiet vda), an
Intel 750 NVMe at 93 % util with 0.13 ms await (Percona's ``iostat -x nvme0n1 5``), a laptop sda written
flat out for 29 reports (100 % util, w_await above a second), plain ``iostat`` without -x (jc's CentOS
7.7 fixture).  Derived: the Percona capture with its two interval rows made a root NVMe at 100 % util and
about 90 ms write waits (the held-out case), and the ECS capture with one interval row made a spike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.judge.engine import Context
from analyzer.judge.findings import Severity
from analyzer.judge.settings import load_settings
from analyzer.judge.signals.fs import device_mounts
from analyzer.model.verdict import compute
from tests.rules.helpers import Result, analyze, fixture, write_node

RULE = "fs.device.saturated"
SICK = "derived-percona-nvme0n1-root-saturated-90ms-writes.txt"
ECS = "aliyun-el8-xdk-2-3-vda-prompt.txt"
NVME = "percona-blog-x-nvme0n1-5-intel750-high-util-low-await.txt"
SPIKE = "derived-aliyun-vda-one-interval-spike.txt"
BENCH = "justdoit-notes-x-sda-write-bench-saturated-29reports.txt"
PLAIN = "jc-centos77-plain-d.out"
DLAMI_DF = "dlami-df-Th-ephemeral-ext4.txt"


def _iostat(name: str) -> dict[str, tuple[str, str]]:
    return {"cmd/iostat.txt": ("iostat", fixture("iostat", name))}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """The saturated root NVMe (with the DLAMI's df) among real healthy peers, a spike, and nodes it
    cannot judge."""
    root = tmp_path_factory.mktemp("dev") / "c"
    write_node(root, "sick", {**_iostat(SICK), "cmd/df.txt": ("df", fixture("df", DLAMI_DF))})
    write_node(root, "ecs", _iostat(ECS))
    write_node(root, "nvme", _iostat(NVME))
    write_node(root, "spike", _iostat(SPIKE))
    write_node(root, "plain", _iostat(PLAIN))
    write_node(root, "boot-only", _iostat("aks-node-xy-old-format.txt"))  # one report, since boot
    write_node(root, "no-iostat", {"cmd/df.txt": ("df", fixture("df", DLAMI_DF))})
    return analyze(root)


def test_the_saturated_root_nvme_ranks_among_healthy_peers(cluster: Result) -> None:
    (f,) = cluster.of(RULE)
    assert (f.node, f.params["device"], f.severity) == ("sick", "nvme0n1", Severity.WARNING)
    assert f.params["mounts"] == ["/"] and "/dev/root" in (f.params["mount_inferred"] or "")
    p = f.params
    assert (p["intervals_over"], p["intervals"], p["await_field"]) == (2, 2, "w_await")
    assert (p["await_median_ms"], p["await_max_ms"], p["util_median_pct"]) == (90.08, 91.37, 100.0)
    assert "nvme0n1 on / (inferred" in f.message and "2 of 2 interval reports" in f.message
    assert [e.line for e in f.evidence] == [14, 20] and all("100.00" in (e.text or "") for e in f.evidence)
    assert f.route.owner == "filesystem-capacity"
    nodes = [{"node": n} for n in ("sick", "ecs", "nvme", "spike", "plain", "boot-only", "no-iostat")]
    verdict = compute(cluster.findings, list(cluster.outcomes.values()), nodes)
    assert [w.node for w in verdict.worst_nodes] == ["sick"]


def test_healthy_nvme_and_a_one_interval_spike_are_checked_and_not_flagged(cluster: Result) -> None:
    o = cluster.outcomes[RULE]
    assert cluster.outcome(RULE) == "fail"
    assert {"sick", "ecs", "nvme", "spike"} <= set(o.nodes_checked)
    assert not [f for f in cluster.of(RULE) if f.node in ("ecs", "nvme", "spike")]


def test_without_x_columns_or_interval_reports_a_node_is_not_examined(cluster: Result) -> None:
    o = cluster.outcomes[RULE]
    assert {"plain", "boot-only", "no-iostat"} <= set(o.nodes_without_data)
    assert not {"plain", "boot-only", "no-iostat"} & set(o.nodes_checked)
    assert "without the -x columns" in (o.reason or "") and "0 interval reports" in (o.reason or "")


def test_plain_iostat_alone_is_skipped_not_passed(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_node(root, "a", _iostat(PLAIN))
    write_node(root, "b", _iostat("jc-ubuntu1804-m-plain-mb.out"))
    res = analyze(root)
    assert res.outcome(RULE) == "skipped" and res.outcomes[RULE].nodes_checked == []


def _site(tmp_path: Path, body: str) -> object:
    site = tmp_path / "site.toml"
    site.write_text(f"[{RULE}]\n{body}\n")
    return load_settings(site)


def test_the_await_line_is_what_keeps_a_busy_nvme_healthy(tmp_path: Path) -> None:
    """The real NVMe is above 80 % util in both intervals; only its 0.13 ms await keeps it unflagged."""
    root = tmp_path / "nvme"
    write_node(root, "nvme", _iostat(NVME))
    assert analyze(root).of(RULE) == []
    (f,) = analyze(root, _site(tmp_path, "await_ms = 0.1")).of(RULE)  # type: ignore[arg-type]
    assert (f.params["intervals_over"], f.params["util_median_pct"], f.params["await_max_ms"]) == (
        2,
        93.6,
        0.13,
    )


def test_a_spike_is_one_interval_of_two(tmp_path: Path) -> None:
    root = tmp_path / "spike"
    write_node(root, "spike", _iostat(SPIKE))
    assert analyze(root).of(RULE) == []
    (f,) = analyze(root, _site(tmp_path, "sustained_fraction = 0.5")).of(RULE)  # type: ignore[arg-type]
    assert (f.params["intervals_over"], f.params["intervals"], f.params["await_max_ms"]) == (1, 2, 45.32)


def test_a_real_disk_written_flat_out_is_saturated(tmp_path: Path) -> None:
    root = tmp_path / "bench"
    write_node(root, "bench", _iostat(BENCH))
    res = analyze(root)
    (f,) = res.of(RULE)
    assert (f.params["device"], f.params["intervals_over"], f.params["intervals"]) == ("sda", 29, 29)
    assert (f.params["await_median_ms"], f.params["await_max_ms"]) == (1488.0, 1812.88)
    assert f.params["mounts"] == [] and "sda (no mount found)" in f.message
    assert [e.line for e in f.evidence] == [5, 103]


def test_devices_are_named_by_their_mounts(tmp_path: Path) -> None:
    """df and /proc/mounts of one node: partitions to their disk, /dev/root to the disk of /boot/efi, the
    one dm device to the one /dev/mapper mount; a device on no line is absent."""
    root = tmp_path / "mounts"
    write_node(
        root,
        "n",
        {
            "cmd/df.txt": ("df", fixture("df", DLAMI_DF)),
            "cmd/mounts.txt": ("mounts", fixture("mounts", "handwritten-hyperpod-slurm-proc-mounts.txt")),
        },
    )
    write_node(
        root, "ecs", {"cmd/df.txt": ("df", fixture("df", "aliyun-el8-df-h-vda1-docker-overlay-prompt.txt"))}
    )
    res = analyze(root)
    bundles = dict(res.con.execute("SELECT node, bundle_id FROM node").fetchall())
    found = device_mounts(
        Context(res.con),
        {(bundles["n"], "n"): ["nvme0n1", "nvme1n1", "dm-0", "nvme2n1"], (bundles["ecs"], "ecs"): ["vda"]},
    )
    got = {k[2]: (v.mounts, v.inferred is not None) for k, v in found.items()}
    assert got == {
        "nvme0n1": (("/",), True),
        "nvme1n1": (("/opt/sagemaker",), False),
        "dm-0": (("/opt/dlami/nvme",), True),
        "vda": (("/",), False),
    }
