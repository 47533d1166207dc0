"""A cluster assembled from the healthy real samples of every kind raises no concern from any rule."""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, fixture, write_node

HEALTHY = {
    "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", "jp-simulator-8xh100-565-complete.txt"),
    "cmd/nvidia-smi-topo.txt": ("nvidia-smi-topo", "della-h100-nic-legend-empty-cpu-affinity.txt"),
    "cmd/dmesg.txt": ("dmesg", "returnn-1486-reltime-aer-no-xid.txt"),
    # fi-info is left out: every real capture is a fragment listing 1-4 devices, which a p5 (32 EFA)
    # rightly reports as missing devices (tests/rules/test_net.py covers it)
    "cmd/fabricmanager.txt": ("fabricmanager", "sber-590-running-clean-pager-cut.txt"),
    "cmd/cpu-governor.txt": ("cpu-governor", "cpupower-frequency-info-intel_pstate-performance.txt"),
    "cmd/df.txt": ("df", "dlami-df-Th-ephemeral-ext4.txt"),
    "cmd/lfs-df.txt": ("lfs-df", "fsx-workshop-mnt-fsx-3ost.txt"),
    "cmd/dcgmi-diag.txt": ("dcgmi-diag", "dcgm-124-442-r2-1gpu-pass-complete.txt"),
}


def test_healthy_real_samples_raise_no_concern(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    for i in range(1, 5):
        files = {path: (kind, fixture(kind, name)) for path, (kind, name) in HEALTHY.items()}
        meta = {"instance_type": "p5.48xlarge", "availability_zone": "us-east-1a", "placement_group": "pg-a"}
        write_node(cluster, f"node-{i}", files, meta=meta)
    result = analyze(cluster)
    concerns = [
        f"{f.rule}: {f.message}" for f in result.findings if f.severity.value in ("critical", "warning")
    ]
    assert not concerns, "\n".join(concerns)
    assert result.outcome("gpu.ecc.uncorrectable") == "pass"
    assert result.outcome("gpu.fabric.state") == "pass" and result.outcome("gpu.topo.pcie_path") == "pass"
