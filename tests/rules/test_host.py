"""Host rules on small bundles built from real fixtures (kernel log lines edited in to trigger)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.judge.findings import Severity
from analyzer.judge.settings import load_settings
from tests.rules.helpers import Result, fixture
from tests.rules.test_gpu import Files, dmesg, run

P5 = {"instance_type": "p5.48xlarge", "nproc": "192"}
UCE_FIRST = "[430954.509105]"
AER = "returnn-1486-reltime-aer-no-xid.txt"


def kernel(*lines: str) -> Files:
    """The real Xid 48 log with extra kernel lines (the events under test) put before its first line."""
    stamped = "".join(f"[430954.40000{i}] {text}\n" for i, text in enumerate(lines))
    return dmesg("uce-runbook-xid48-63-94-dbe.txt", {UCE_FIRST: stamped + UCE_FIRST})


def governor(name: str) -> Files:
    return {"cmd/cpu-governor.txt": ("cpu-governor", fixture("cpu-governor", name))}


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Result:
    nodes: dict[str, Files | tuple[Files, dict[str, str]]] = {
        "panic": kernel("Kernel panic - not syncing: Fatal exception in interrupt"),
        "lockup": kernel(
            "watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [python3:4242]",
            "watchdog: BUG: soft lockup - CPU#5 stuck for 23s! [python3:4243]",
        ),
        "mce": kernel("mce: [Hardware Error]: Machine check events logged"),
        "nmi": kernel("Uhhuh. NMI received for unknown reason 3d on CPU 12."),
        "oom": kernel(
            "Out of memory: Killed process 4242 (python3) total-vm:123456kB, anon-rss:1000kB",
            "Out of memory: Killed process 4250 (pt_data_worker) total-vm:123456kB, anon-rss:1000kB",
        ),
        "hung": kernel("INFO: task python3:4242 blocked for more than 120 seconds."),
        "clean": dmesg("uce-runbook-xid48-63-94-dbe.txt"),
        "aer": dmesg(AER),
        "aerunc": dmesg(AER, {"severity=Corrected": "severity=Uncorrected (Non-Fatal)"}),
        "powersave": governor("scaling_governor-cat-8cpus-powersave.txt"),
        "performance": governor("cpupower-frequency-info-intel_pstate-performance.txt"),
        "halfcpu": (
            {**governor("cpupower-frequency-info-intel_pstate-performance.txt")},
            {**P5, "nproc": "96"},
        ),
        "untyped": (governor("cpupower-frequency-info-intel_pstate-performance.txt"), {"nproc": "8"}),
    }
    return run(tmp_path_factory.mktemp("host"), nodes, meta=P5)


def on(r: Result, rule: str) -> set[str]:
    return {f.node for f in r.of(rule) if f.node}


def test_kernel_panic_lockup_and_mce_are_critical(faulty: Result) -> None:
    assert on(faulty, "host.kernel.panic") == {"panic", "lockup", "mce", "nmi"}
    assert all(f.severity == Severity.CRITICAL for f in faulty.of("host.kernel.panic"))
    [lockup] = [f for f in faulty.of("host.kernel.panic") if f.node == "lockup"]
    assert lockup.params["count"] == 2 and len(lockup.evidence) == 2  # a burst is one finding
    [mce] = [f for f in faulty.of("host.kernel.panic") if f.node == "mce"]
    assert mce.params["event"] == "mce" and mce.route.target == "hyperpod-node-debugger § F"
    [nmi] = [f for f in faulty.of("host.kernel.panic") if f.node == "nmi"]
    assert nmi.params["event"] == "nmi" and nmi.route.target == "hyperpod-node-debugger § F"
    assert "Kernel panic" in (
        next(f for f in faulty.of("host.kernel.panic") if f.node == "panic").evidence[0].text or ""
    )


def test_oom_one_finding_per_node(faulty: Result) -> None:
    [f] = faulty.of("host.oom")
    assert f.node == "oom" and f.severity == Severity.WARNING
    assert f.params["count"] == 2 and f.params["processes"] == ["pt_data_worker", "python3"]


def test_hung_task_is_warning(faulty: Result) -> None:
    [f] = faulty.of("host.hung_task")
    assert f.node == "hung" and f.severity == Severity.WARNING and f.params["processes"] == ["python3"]


def test_pcie_aer_uncorrected_critical_few_corrected_nothing(faulty: Result) -> None:
    [f] = faulty.of("host.pcie.aer")
    assert f.node == "aerunc" and f.severity == Severity.CRITICAL and f.params["uncorrected"] == 3
    assert f.params["pci"] == "0000:00:03.0"


def test_pcie_aer_many_corrected_is_info(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text("[host.pcie.aer]\ncorrected_info_count = 3\n")
    r = run(tmp_path / "b", {"aer": dmesg(AER)}, settings=load_settings(site))
    [f] = r.of("host.pcie.aer")
    assert f.severity == Severity.INFO and f.params["corrected"] == 3


def test_cpu_governor_not_performance(faulty: Result) -> None:
    [f] = faulty.of("host.cpu.governor")
    assert f.node == "powersave" and f.severity == Severity.WARNING
    assert f.params["governors"] == {"powersave": 8} and f.route.owner == "nccl-network"


def test_vcpu_low(faulty: Result) -> None:
    [f] = faulty.of("host.vcpu.low")
    assert f.node == "halfcpu" and f.params == {"nproc": 96, "expected": 192, "instance_type": "p5.48xlarge"}


def test_healthy_nodes_raise_nothing(faulty: Result) -> None:
    for node in ("clean", "performance", "untyped"):
        assert not [f for f in faulty.findings if f.rule.startswith("host.") and f.node == node]
