"""No false alarms at boot: NVLink down, fewer GPUs and a fabric "In Progress" on a node collected within
the settle window after its boot (from its uptime) are reported as settling (info, with the boot time),
not as faults; the same states on a node up for days stay faults.  Built from real captures: the 8xH100
``nvidia-smi -q``, an H100 ``nvidia-smi nvlink -s`` and ``/proc/uptime``."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.judge.findings import Severity
from tests.rules.helpers import analyze, fixture, write_node

P5 = {"instance_type": "p5.48xlarge"}
Q = "jp-simulator-8xh100-565-complete.txt"
#: /proc/uptime 95 s after boot (the fixture's layout: uptime and idle seconds), and the fixture itself (4 days)
JUST_BOOTED = "95.20 1410.37\n"
IN_PROGRESS = {
    "State                             : Completed": "State                             : In Progress"
}
LINK_DOWN = {"Link 3: 26.562 GB/s": "Link 3: <inactive>"}


def bundle(
    tmp_path: Path, uptime: str, q_edit: dict[str, str], nvlink_edit: dict[str, str], drop_gpu: bool
) -> Path:
    q = fixture("nvidia-smi-q", Q, q_edit)
    if drop_gpu:  # the dump of a node where the last GPU did not come up: 7 GPU blocks
        head, *blocks = q.split("\nGPU 00000000:")
        q = "\nGPU 00000000:".join([head, *blocks[:-1]]).replace(
            "Attached GPUs                             : 8", "Attached GPUs                             : 7"
        )
    files = {
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", q),
        "cmd/nvidia-smi-nvlink.txt": (
            "nvidia-smi-nvlink",
            fixture("nvidia-smi-nvlink", "h100-status-i0-18links.txt", nvlink_edit),
        ),
        "cmd/uptime.txt": ("uptime", uptime),
    }
    root = tmp_path / "c"
    write_node(root, "p5-a", files, meta=P5)
    return root


@pytest.mark.parametrize(
    ("rule", "q_edit", "nvlink_edit", "drop_gpu"),
    [
        ("gpu.fabric.state", IN_PROGRESS, {}, False),
        ("gpu.nvlink.inactive", {}, LINK_DOWN, False),
        ("gpu.count.low", {}, {}, True),
    ],
)
def test_states_of_a_booting_node_are_settling_not_faults(
    tmp_path: Path, rule: str, q_edit: dict[str, str], nvlink_edit: dict[str, str], drop_gpu: bool
) -> None:
    booting = analyze(bundle(tmp_path / "boot", JUST_BOOTED, q_edit, nvlink_edit, drop_gpu))
    (f,) = booting.of(rule)
    assert f.severity == Severity.INFO, f.message
    assert f.params["settling"] is True and f.params["boot_utc"] == "2026-12-01T07:58:24Z"
    assert "settling" in f.message and "booted 2026-12-01T07:58:24Z" in f.message

    up_for_days = analyze(
        bundle(
            tmp_path / "days", fixture("uptime", "handwritten-proc-uptime.txt"), q_edit, nvlink_edit, drop_gpu
        )
    )
    (g,) = up_for_days.of(rule)
    assert g.severity == Severity.CRITICAL and g.params["settling"] is False and "settling" not in g.message


def test_a_failed_fabric_is_a_fault_even_right_after_boot(tmp_path: Path) -> None:
    failed = {
        "State                             : Completed": "State                             : Completed",
        "Status                            : Success": "Status                            : Failure",
    }
    res = analyze(bundle(tmp_path, JUST_BOOTED, failed, {}, False))
    (f,) = res.of("gpu.fabric.state")
    assert f.severity == Severity.CRITICAL
