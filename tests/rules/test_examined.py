"""A rule passes on a node only when the inputs it judges were collected and read there.

Each rule names its inputs in ``requires`` / ``requires_any`` (tables, or columns of a table where a
specific value is judged: the instance type, nproc, the uptime of a rate); the engine lists, per rule,
the nodes it checked and the nodes it could not examine (analyzer.judge.coverage).  These tests build
bundles that lack inputs and check that no rule reports [OK] for what it never saw.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from analyzer.judge.rules import load_rules
from tests.collector.test_collector import BASE_PATH, FAKES, make_bin, run
from tests.rules.helpers import analyze, fixture, write_node

#: Rules judged from the kernel log alone.
KERNEL_LOG_RULES = (
    "gpu.xid",
    "gpu.xid.fallen_off_bus",
    "gpu.sxid",
    "host.kernel.panic",
    "host.oom",
    "host.hung_task",
    "host.pcie.aer",
)
#: Rules once seen passing on a bundle that had none of their input (collector.sh on a host without
#: GPUs, fi_info or instance type): each must now be skipped, or not count the node as checked.
ONCE_FALSE_PASSES = (
    "net.fi_info.no_efa",
    "net.ofi_plugin.missing",
    "version.cuda_driver.compat",
    "gpu.ecc.corrected_rate",
    "host.vcpu.low",
    "fs.nvme.not_mounted",
    "fs.verdict",
)
#: A host uptime (hand-written /proc/uptime: 4 days).
UPTIME = {"cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt"))}


def clean_dmesg() -> str:
    """A real kernel log (an H100 host, dmesg --ctime) with its NVRM lines removed: nothing to report."""
    text = fixture("dmesg", "gpud-readme-dmesg-ctime-xid13-109.txt")
    kept = "".join(line for line in text.splitlines(keepends=True) if "NVRM" not in line)
    assert kept.strip() and "Xid" not in kept
    return kept


def test_meta_env_alone_passes_no_rule(tmp_path: Path) -> None:
    """Only meta.env and manifest.tsv: every rule is skipped or has the node as not examined."""
    root = tmp_path / "b"
    write_node(root, "n1", {})
    res = analyze(root)
    assert set(res.outcomes) == {m.RULE.id for m in load_rules()}
    for rule, o in res.outcomes.items():
        assert o.outcome != "pass", rule
        assert o.outcome in ("skipped", "fail"), (rule, o.outcome, o.reason)
        if rule != "bundle.coverage":  # its input is the bundle itself: it reports the empty node
            assert "n1" not in o.nodes_checked, rule
        if o.outcome == "skipped":
            assert o.reason and o.reason.startswith("no input: "), rule


def _missing_tool(name: str) -> str:
    return f"#!/bin/bash\necho '{name}: command not found' >&2\nexit 127\n"


@pytest.fixture(scope="module")
def no_gpu_host(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """collector.sh under fakes for a host without GPUs: no nvidia-smi, no fi_info, no iostat (fakes
    that answer 'command not found', so a real tool on this machine is not used), a clean dmesg; no
    instance type (no IMDS)."""
    tmp = tmp_path_factory.mktemp("no-gpu")
    log = tmp / "dmesg.txt"
    log.write_text(clean_dmesg())
    fakes = dict(FAKES)
    fakes.update({name: _missing_tool(name) for name in ("nvidia-smi", "fi_info", "iostat")})
    fakes["dmesg"] = f"#!/bin/bash\nexec cat '{log}'\n"
    r = run(tmp, "--node", "cpu-node-1", path=f"{make_bin(tmp / 'bin', fakes)}:{BASE_PATH}")
    assert r.proc.returncode == 0, r.proc.stderr
    return r.tarball, r.members()


def test_no_gpu_host_bundle_passes_only_what_it_read(no_gpu_host: tuple[Path, dict[str, bytes]]) -> None:
    tarball, members = no_gpu_host
    with tarfile.open(tarball) as tar:
        meta = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/meta.env")))
        assert meta is not None and b"instance_type=" not in meta.read()
    res = analyze(tarball)
    passed = {rule: o for rule, o in res.outcomes.items() if o.outcome == "pass"}
    for rule, o in passed.items():
        assert o.nodes_checked == ["cpu-node-1"] or rule.startswith(("nccl.", "fs.fsx.", "fs.ebs.")), rule
        assert "cpu-node-1" not in o.nodes_without_data, rule
    toolkit = b"cuda=" in members["cmd/versions.txt"]  # the host's own /usr/local/cuda, if any
    for rule in ONCE_FALSE_PASSES:
        if rule == "version.cuda_driver.compat" and not toolkit:
            continue  # no toolkit on this host: nothing to judge either way
        assert rule not in passed, (rule, res.outcomes[rule])
    # no GPU tool output: no GPU rule passes, except those judged from the kernel log (which was read)
    # and the fabric check, whose probe answered (systemctl: the unit could not be found; read from the
    # probe's stderr: on a type that is no NVSwitch system that answer is no fault)
    answers = res.con.execute("SELECT family, answer FROM probe_answer").fetchall()
    gpu_passed = {r for r in passed if r.startswith(("gpu.", "straggler.gpu."))}
    assert ("fabricmanager", "unit-not-found") in answers
    assert gpu_passed == {"gpu.xid", "gpu.xid.fallen_off_bus", "gpu.sxid", "gpu.fabric.state"}
    for rule in KERNEL_LOG_RULES:
        assert rule in passed, (rule, res.outcomes[rule])


def test_clean_kernel_log_is_a_checked_kernel_log(tmp_path: Path) -> None:
    root = tmp_path / "b"
    write_node(root, "n1", {"cmd/dmesg.txt": ("dmesg", clean_dmesg())})
    res = analyze(root)
    for rule in KERNEL_LOG_RULES:
        o = res.outcomes[rule]
        assert (o.outcome, o.nodes_checked, o.nodes_without_data) == ("pass", ["n1"], []), rule


def test_node_without_kernel_log_is_not_examined(tmp_path: Path) -> None:
    root = tmp_path / "b"
    write_node(root, "n1", {"cmd/dmesg.txt": ("dmesg", clean_dmesg())})
    write_node(root, "n2", UPTIME)
    res = analyze(root)
    for rule in KERNEL_LOG_RULES:
        o = res.outcomes[rule]
        assert o.nodes_checked == ["n1"] and o.nodes_without_data == ["n2"], rule


@pytest.mark.parametrize(
    ("rule", "meta", "examined"),
    [
        # the vCPU count needs both the instance type and nproc from meta.env
        ("host.vcpu.low", {"nproc": "192"}, False),
        ("host.vcpu.low", {"instance_type": "p5.48xlarge"}, False),
        ("host.vcpu.low", {"instance_type": "p5.48xlarge", "nproc": "192"}, True),
    ],
)
def test_meta_env_columns_are_requirements(
    tmp_path: Path, rule: str, meta: dict[str, str], examined: bool
) -> None:
    root = tmp_path / "b"
    write_node(root, "n1", {}, meta=meta)
    write_node(root, "n2", {}, meta={"instance_type": "p5.48xlarge", "nproc": "192"})
    o = analyze(root).outcomes[rule]
    assert o.outcome == "pass" and ("n1" in o.nodes_checked) is examined
    assert ("n1" in o.nodes_without_data) is not examined


def test_rate_needs_uptime_as_well_as_the_counter(tmp_path: Path) -> None:
    """gpu.ecc.corrected_rate divides by uptime: a node with nvidia-smi -q but no uptime is not examined."""
    q = {
        "cmd/nvidia-smi-q.txt": (
            "nvidia-smi-q",
            fixture("nvidia-smi-q", "jp-simulator-8xh100-565-complete.txt"),
        )
    }
    root = tmp_path / "b"
    write_node(root, "n1", q)
    res = analyze(root)
    assert res.outcome("gpu.ecc.corrected_rate") == "skipped"
    assert res.outcomes["gpu.ecc.corrected_rate"].reason == "no input: host_uptime.uptime_s"
    write_node(root, "n2", {**q, **UPTIME})
    o = analyze(root).outcomes["gpu.ecc.corrected_rate"]
    assert o.nodes_checked == ["n2"] and o.nodes_without_data == ["n1"]
