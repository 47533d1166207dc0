"""File-system rules on bundles built from real df, lfs df, iostat, shm and CloudWatch captures.

No real FSx/EBS CloudWatch export exists in tests/fixtures (the real samples are EC2 CPUUtilization):
the FSx and EBS series below are SYNTHETIC, written in the long-CSV shape parsers/cloudwatch.py accepts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.helpers import analyze, fixture, write_node

FS = "fs-0123456789abcdef0"
VOL = "vol-0123456789abcdef0"
DLAMI = "dlami-df-Th-ephemeral-ext4.txt"
WORKSHOP = "hyperpod-workshop-controller-opt-sagemaker-fsx.txt"
SLINKY = "hyperpod-eks-slinky-compute-pod-hash-prefixed.txt"
SHM = "handwritten-collector-p5-stale-nccl.txt"
CALM = "ssd-blog-comma-decimal-64threads.txt"  # iowait 4.62 %
WAITING = "vm-xz-tail6-headless-cpu.txt"  # iowait 41.44 %


def synthetic_cw(series: list[tuple[str, str, str, str, str, list[float]]]) -> str:
    """SYNTHETIC long CSV: (namespace, metric, dimension, id, statistic, one value per minute)."""
    out = ["timestamp,namespace,metric_name,dimension_name,dimension_value,stat,value,unit,period"]
    for ns, metric, dim, ident, stat, values in series:
        unit = "Percent" if metric.endswith("Utilization") else "Bytes" if "Capacity" in metric else "Count"
        for i, v in enumerate(values):
            out.append(f"2026-12-01T07:{i:02d}:00Z,{ns},{metric},{dim},{ident},{stat},{v},{unit},60")
    return "\n".join(out) + "\n"


def _fsx(metric: str, values: list[float], ident: str = FS) -> tuple[str, str, str, str, str, list[float]]:
    return ("AWS/FSx", metric, "FileSystemId", ident, "Maximum", values)


def _cw(text: str) -> dict[str, tuple[str, str]]:
    return {"cmd/cloudwatch.csv": ("cloudwatch", text)}


def test_fs_fsx_utilization_sustained_by_duration(tmp_path: Path) -> None:
    long_run = [40.0] * 10 + [92.0] * 20 + [50.0] * 30  # 20 min at/above 80 %: critical
    short_run = [30.0] * 10 + [85.0] * 7 + [30.0] * 43  # 7 min: warning
    burst = [30.0] * 10 + [99.0] * 2 + [30.0] * 48  # 2 min: not sustained
    text = synthetic_cw(
        [
            _fsx("DiskIopsUtilization", long_run),
            _fsx("FileServerDiskThroughputUtilization", short_run, "fs-0aaaaaaaaaaaaaaaa"),
            _fsx("NetworkThroughputUtilization", burst, "fs-0bbbbbbbbbbbbbbbb"),
        ]
    )
    root = tmp_path / "c"
    write_node(root, "n1", _cw(text))
    found = {f.params["metric"]: f for f in analyze(root).of("fs.fsx.utilization_sustained")}
    assert set(found) == {"DiskIopsUtilization", "FileServerDiskThroughputUtilization"}
    crit = found["DiskIopsUtilization"]
    assert crit.severity.value == "critical" and crit.params["longest_minutes"] == 20.0
    assert crit.params["minutes_over"] == 20.0 and crit.params["window_minutes"] == 60.0
    assert "20 of 60 minutes" in crit.message and crit.evidence[0].line == 12
    assert found["FileServerDiskThroughputUtilization"].severity.value == "warning"


def test_fs_fsx_rules_ignore_the_real_ec2_cpu_sample(tmp_path: Path) -> None:
    root = tmp_path / "c"
    real = fixture(
        "cloudwatch", "awscli-example-2014-cpu-max-unindented.txt"
    )  # AWS/EC2 CPUUtilization, peak 99.67
    write_node(root, "n1", {"cmd/cw-ec2.json": ("cloudwatch", real)})
    res = analyze(root)
    for rule in (
        "fs.fsx.utilization_sustained",
        "fs.ebs.queue_sustained",
        "fs.fsx.free_capacity_low",
        "fs.verdict",
    ):
        # nothing of their own in the export: not examined (skipped with the reason), never [OK]
        assert res.outcome(rule) == "skipped", rule


def test_fs_ebs_queue_sustained_and_fsx_free_capacity_low(tmp_path: Path) -> None:
    queue = [0.5] * 5 + [3.0] * 10 + [0.4] * 5
    free = [150 * 2**30] * 10 + [40 * 2**30] * 2
    text = synthetic_cw(
        [
            ("AWS/EBS", "VolumeQueueLength", "VolumeId", VOL, "Average", queue),
            ("AWS/FSx", "FreeDataStorageCapacity", "FileSystemId", FS, "Minimum", free),
        ]
    )
    root = tmp_path / "c"
    write_node(root, "n1", _cw(text))
    res = analyze(root)
    (q,) = res.of("fs.ebs.queue_sustained")
    assert (q.params["volume"], q.params["longest_minutes"], q.severity.value) == (VOL, 10.0, "warning")
    (f,) = res.of("fs.fsx.free_capacity_low")
    assert f.params["free_gib"] == 40.0 and f.params["file_system"] == FS
    calm = synthetic_cw([("AWS/EBS", "VolumeQueueLength", "VolumeId", VOL, "Average", [0.5] * 20)])
    root2 = tmp_path / "calm"
    write_node(root2, "n1", _cw(calm))
    assert analyze(root2).outcome("fs.ebs.queue_sustained") == "pass"


def test_fs_iowait_high_excludes_since_boot(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write_node(root, "waiting", {"cmd/iostat.txt": ("iostat", fixture("iostat", WAITING))})
    write_node(root, "calm", {"cmd/iostat.txt": ("iostat", fixture("iostat", CALM))})
    booted = fixture("iostat", "netflix60s-xz1-narrow-device-col.txt", {"3.73    0.03": "3.73   30.03"})
    write_node(root, "since-boot", {"cmd/iostat.txt": ("iostat", booted)})
    (f,) = analyze(root).of("fs.iowait.high")
    assert (f.node, f.params["iowait_pct"], f.severity.value) == ("waiting", 41.44, "warning")
    assert "41.44" in (f.evidence[0].text or "")


def test_fs_rootvol_full_warning_and_critical(tmp_path: Path) -> None:
    root = tmp_path / "c"
    line = "ext4      117G   69G   48G  60% /\n"
    write_node(
        root,
        "warn",
        {"cmd/df.txt": ("df", fixture("df", DLAMI, {line: "ext4      117G   99G   18G  85% /\n"}))},
    )
    write_node(
        root,
        "crit",
        {"cmd/df.txt": ("df", fixture("df", DLAMI, {line: "ext4      117G  110G  7.0G  94% /\n"}))},
    )
    write_node(root, "ok", {"cmd/df.txt": ("df", fixture("df", DLAMI))})
    found = {f.node: f.severity.value for f in analyze(root).of("fs.rootvol.full")}
    assert found == {"warn": "warning", "crit": "critical"}


def test_fs_data_full_local_and_shared(tmp_path: Path) -> None:
    root = tmp_path / "c"
    opt = {"500G  711M  500G   1% /opt/sagemaker": "500G  470G   30G  94% /opt/sagemaker"}
    fsx = {"1.2T  5.5G  1.2T   1% /fsx": "1.2T  1.2T   50G  96% /fsx"}
    write_node(root, "a", {"cmd/df.txt": ("df", fixture("df", WORKSHOP, {**opt, **fsx}))})
    write_node(root, "b", {"cmd/df.txt": ("df", fixture("df", WORKSHOP, fsx))})
    found = analyze(root).of("fs.data.full")
    local = [f for f in found if f.params["mountpoint"] == "/opt/sagemaker"]
    shared = [f for f in found if f.params["mountpoint"] == "/fsx"]
    assert [(f.node, f.params["use_pct"]) for f in local] == [("a", 94.0)]
    assert [(f.node, f.params["nodes"]) for f in shared] == [(None, ["a", "b"])]
    assert len(found) == 2  # the /snap loop images at 100 % are not data mounts


def test_fs_lustre_ost_imbalance(tmp_path: Path) -> None:
    root = tmp_path / "c"
    edit = {"9.5G      970.8M        8.6G  10%": "9.5G        9.0G        0.5G  95%"}
    text = fixture("lfs-df", "iml-zfsmo-dashed-separator.txt", edit)
    write_node(root, "a", {"cmd/lfs-df.txt": ("lfs-df", text)})
    write_node(root, "b", {"cmd/lfs-df.txt": ("lfs-df", text)})
    (f,) = analyze(root).of("fs.lustre.ost_imbalance")
    assert (f.params["fsname"], f.params["spread_pct"], f.params["full_osts"]) == ("zfsmo", 86.0, [0])
    assert "OST0000" in f.message and f.evidence[0].line == 4


def test_fs_shm_small_from_shm_and_df(tmp_path: Path) -> None:
    root = tmp_path / "c"
    big = "tmpfs          1040297627648 19275776 1040278351872       1% /dev/shm"
    small = "tmpfs             2147483648 19275776    2128207872       1% /dev/shm"
    write_node(root, "big", {"cmd/shm.txt": ("shm", fixture("shm", SHM))})
    write_node(root, "two-gib", {"cmd/shm.txt": ("shm", fixture("shm", SHM, {big: small}))})
    write_node(root, "pod", {"cmd/df.txt": ("df", fixture("df", SLINKY))})  # shm 64M, df only
    found = {f.node: f for f in analyze(root).of("fs.shm.small")}
    assert set(found) == {"two-gib", "pod"}
    assert found["two-gib"].severity.value == "warning" and found["two-gib"].params["size_gib"] == 2.0
    assert found["pod"].severity.value == "critical" and found["pod"].params["size_gib"] == 0.062


def test_fs_verdict_branches(tmp_path: Path) -> None:
    waiting = {"cmd/iostat.txt": ("iostat", fixture("iostat", WAITING))}
    saturated = synthetic_cw([_fsx("DiskIopsUtilization", [95.0] * 30)])
    headroom = synthetic_cw([_fsx("DiskIopsUtilization", [35.0] * 30)])

    root = tmp_path / "capacity"
    write_node(root, "n1", {**waiting, **_cw(saturated)})
    (f,) = analyze(root).of("fs.verdict")
    assert f.params["branch"] == "capacity saturated" and f.route.owner == "filesystem-capacity"

    root = tmp_path / "pattern"
    write_node(root, "n1", {**waiting, **_cw(headroom)})
    (g,) = analyze(root).of("fs.verdict")
    assert g.params["branch"] == "headroom but I/O-bound" and g.route.owner == "io-pattern"
    assert g.params["fsx_peak_pct"] == 35.0 and g.params["io_signals"][0]["node"] == "n1"

    root = tmp_path / "unknown"
    write_node(root, "n1", waiting)
    (h,) = analyze(root).of("fs.verdict")
    assert h.severity.value == "info" and h.route.owner == "support-bundle"

    root = tmp_path / "quiet"
    write_node(root, "n1", {"cmd/iostat.txt": ("iostat", fixture("iostat", CALM)), **_cw(headroom)})
    assert analyze(root).outcome("fs.verdict") == "pass"


def test_fs_verdict_reads_the_lines_of_the_rules_that_own_them(tmp_path: Path) -> None:
    """fs.verdict has no utilization_pct / iowait_pct of its own: a site override of
    fs.fsx.utilization_sustained or fs.iowait.high (--config) moves the verdict too."""
    from analyzer.judge.settings import SettingsError, load_settings

    waiting = {"cmd/iostat.txt": ("iostat", fixture("iostat", WAITING))}  # iowait 41.44 %
    headroom = synthetic_cw([_fsx("DiskIopsUtilization", [35.0] * 30)])
    root = tmp_path / "c"
    write_node(root, "n1", {**waiting, **_cw(headroom)})

    (f,) = analyze(root).of("fs.verdict")
    assert f.params["branch"] == "headroom but I/O-bound"
    assert (f.params["utilization_pct"], f.params["iowait_pct"]) == (80, 20)

    site = tmp_path / "site.toml"
    site.write_text("[fs.fsx.utilization_sustained]\nutilization_pct = 30\n")
    (g,) = analyze(root, load_settings(site)).of("fs.verdict")
    assert g.params["branch"] == "capacity saturated" and g.params["utilization_pct"] == 30
    assert g.params["capacity_signals"][0]["signal"] == "fsx_utilization"

    site.write_text("[fs.iowait.high]\niowait_pct = 50\n")
    res = analyze(root, load_settings(site))
    assert res.outcome("fs.verdict") == "pass" and res.of("fs.iowait.high") == []

    site.write_text("[fs.verdict]\nutilization_pct = 30\n")
    with pytest.raises(SettingsError, match=r"unknown section \[fs.verdict\]"):
        load_settings(site)


def test_healthy_real_samples_raise_nothing_from_fs_rules(tmp_path: Path) -> None:
    root = tmp_path / "c"
    names = (DLAMI, WORKSHOP, "awsdocs-fsx-df-1k-backtick-mountname.txt", "lab105-df-T-lustre-type.txt")
    for i, name in enumerate(names, start=1):
        write_node(
            root,
            f"n{i}",
            {
                "cmd/df.txt": ("df", fixture("df", name)),
                "cmd/shm.txt": ("shm", fixture("shm", SHM)),
                "cmd/iostat.txt": ("iostat", fixture("iostat", CALM)),
                "cmd/lfs-df.txt": ("lfs-df", fixture("lfs-df", "fsx-workshop-mnt-fsx-3ost.txt")),
            },
        )
    res = analyze(root)
    bad = [
        f for f in res.findings if f.rule.startswith("fs.") and f.severity.value in ("warning", "critical")
    ]
    assert bad == []


def test_fs_verdict_counts_ebs_queue_and_free_capacity(tmp_path: Path) -> None:
    text = synthetic_cw(
        [
            ("AWS/EBS", "VolumeQueueLength", "VolumeId", VOL, "Average", [4.0] * 10),
            ("AWS/FSx", "FreeDataStorageCapacity", "FileSystemId", FS, "Minimum", [20 * 2**30] * 3),
        ]
    )
    root = tmp_path / "c"
    write_node(root, "n1", _cw(text))
    (f,) = analyze(root).of("fs.verdict")
    assert f.params["branch"] == "capacity saturated"
    assert sorted(s["signal"] for s in f.params["capacity_signals"]) == ["ebs_queue", "fsx_free_low"]


def test_nvme_not_mounted_on_p5_and_mounted_on_dlami(tmp_path: Path) -> None:
    """fs.nvme.not_mounted: the real HyperPod controller df has no /opt/dlami/nvme; the DLAMI df has it."""
    from tests.rules.helpers import analyze as run_all
    from tests.rules.helpers import fixture as real
    from tests.rules.helpers import write_node as node

    cluster = tmp_path / "nvme"
    p5 = {"instance_type": "p5.48xlarge"}
    node(
        cluster,
        "bare",
        {"cmd/df.txt": ("df", real("df", "hyperpod-workshop-controller-opt-sagemaker-fsx.txt"))},
        meta=p5,
    )
    node(cluster, "dlami", {"cmd/df.txt": ("df", real("df", "dlami-df-Th-ephemeral-ext4.txt"))}, meta=p5)
    node(
        cluster,
        "cpu",
        {"cmd/df.txt": ("df", real("df", "hyperpod-workshop-controller-opt-sagemaker-fsx.txt"))},
        meta={"instance_type": "ml.m5.xlarge"},
    )
    node(cluster, "nodata", {}, meta=p5)
    found = run_all(cluster).of("fs.nvme.not_mounted")
    assert [(f.node, f.severity.value) for f in found] == [("bare", "warning")]
    assert found[0].evidence[0].file == "bare/cmd/df.txt"


# SYNTHETIC: no real `df -i` capture is in the samples; the layout is coreutils' `df -P -i`.
DF_INODES = """Filesystem                 Inodes   IUsed    IFree IUse% Mounted on
/dev/root                 6553600 6029312   524288   92% /
tmpfs                    4096000 4096000        0  100% /dev/shm
/dev/nvme1n1            32768000  120000 32648000    1% /opt/sagemaker
"""


def test_inode_exhausted_on_root_not_on_tmpfs(tmp_path: Path) -> None:
    """fs.inode.exhausted fires on / at 92 %, not on a full tmpfs nor a nearly empty volume."""
    from tests.rules.helpers import analyze as run_all
    from tests.rules.helpers import write_node as node

    cluster = tmp_path / "inodes"
    node(cluster, "full", {"cmd/df-inodes.txt": ("df", DF_INODES)})
    node(
        cluster,
        "fine",
        {"cmd/df-inodes.txt": ("df", DF_INODES.replace("6029312   524288   92%", "1029312  5524288   16%"))},
    )
    found = run_all(cluster).of("fs.inode.exhausted")
    assert [(f.node, f.params["mountpoint"], f.params["inode_use_pct"]) for f in found] == [
        ("full", "/", 92.0)
    ]
    assert found[0].evidence[0].line == 2
