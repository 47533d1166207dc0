"""GPU rules on small bundles built from real fixtures (values edited to trigger)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Finding, Severity
from analyzer.judge.settings import Settings, load_settings
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

H100_Q = "jp-simulator-8xh100-565-complete.txt"
P5 = {"instance_type": "p5.48xlarge", "nproc": "192"}


Files = dict[str, tuple[str, str]]


def run(
    tmp_path: Path,
    nodes: dict[str, Files | tuple[Files, dict[str, str]]],
    meta: dict[str, str] | None = None,
    settings: Settings | None = None,
) -> Result:
    """Write the nodes (files, or (files, meta)) and run the gpu and host rules only."""
    root = tmp_path / "bundle"
    root.mkdir(parents=True)
    for name, spec in nodes.items():
        files, node_meta = spec if isinstance(spec, tuple) else (spec, meta)
        write_node(root, name, files, meta=node_meta)
    con = connect(None)
    load(con, [root], tmp_path / "work", Limits(), jobs=1)
    modules = []
    for area in ("gpu", "host"):
        package = importlib.import_module(f"analyzer.judge.rules.{area}")
        modules += [importlib.import_module(f"analyzer.judge.rules.{area}.{name}") for name in package.RULES]
    findings, outcomes = run_rules(con, modules, settings or load_settings())
    for o in outcomes:
        assert o.outcome != "error", o
    return Result(findings, {o.rule: o for o in outcomes}, con)


def q_text(gpu: int | None = None, edit: dict[str, str] | None = None) -> str:
    """The 8xH100 -q dump, with edits applied (first occurrence) inside one GPU's block only."""
    text = fixture("nvidia-smi-q", H100_Q)
    if gpu is None or not edit:
        return text
    head, *blocks = text.split("\nGPU 00000000:")
    block = blocks[gpu]
    for old, new in edit.items():
        assert old in block, old
        block = block.replace(old, new, 1)
    blocks[gpu] = block
    return "\nGPU 00000000:".join([head, *blocks])


def q(gpu: int | None = None, edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", q_text(gpu, edit))}


def dmesg(name: str, edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/dmesg.txt": ("dmesg", fixture("dmesg", name, edit))}


def nvlink(name: str, edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/nvidia-smi-nvlink.txt": ("nvidia-smi-nvlink", fixture("nvidia-smi-nvlink", name, edit))}


def uptime(edit: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    return {"cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt", edit))}


def fm(name: str) -> dict[str, tuple[str, str]]:
    return {"cmd/fabricmanager.txt": ("fabricmanager", fixture("fabricmanager", name))}


def sevs(r: Result, rule: str) -> list[str]:
    return [f.severity.value for f in r.of(rule)]


MY_RULES = ("gpu.", "host.")


# --- the bundle sets ------------------------------------------------------------------------------

P4D = {"instance_type": "p4d.24xlarge"}
CORR = "DRAM Correctable              : 0"
TEMP = "GPU Current Temp                  : 30 C"
PM = "Persistence Mode                      : Enabled"
STATE = "State                             : Completed"
WIDTH = "Current                   : 16x"
GEN = "Current                   : 5\n                Device Current            : 5"
OGKM = "ogkm-1150-xid45-after-149-145-syslog.txt"
OGKM_FIRST = "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001"
OGKM_CAUSE = "kernel: NVRM: Xid (PCI:0000:dc:00): 149, pid=1818990, name=python3, NETIR Link Interrupt"
SXID = "sber-nvswitch3-sxid-22013-nonfatal-3lines.txt"
FM_FAILED = "devrel-580-failed-signal-kill-script-redacted.txt"


def smi_q(name: str) -> Files:
    return {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", name))}


def csv(edit: dict[str, str]) -> Files:
    return {
        "cmd/nvidia-smi-query-gpu.txt": (
            "nvidia-smi-csv",
            fixture("nvidia-smi-csv", "hpc-h100-595-11cols.txt", edit),
        )
    }


def active(line: str) -> dict[str, str]:
    return {line: line.replace("Not Active", "Active")}


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """One bundle set, one fault per node (all p5.48xlarge unless said otherwise)."""
    a10 = smi_q("a10-550-hw-power-brake-active-testfixture.txt")
    nodes: dict[str, Files | tuple[Files, dict[str, str]]] = {
        "xid48": {**q(), **dmesg("uce-runbook-xid48-63-94-dbe.txt")},
        "xid13": dmesg("gpud-readme-dmesg-ctime-xid13-109.txt"),
        "xid45": {**q(), **dmesg(OGKM)},
        "xid45c": dmesg(OGKM, {OGKM_FIRST: OGKM_CAUSE + "\n" + OGKM_FIRST}),
        "fell": dmesg("nvsentinel-155-fallen-off-bus-multiline.txt"),
        "aer": dmesg("returnn-1486-reltime-aer-no-xid.txt"),
        "sxid": dmesg(SXID),
        "sxidf": dmesg(SXID, {"22013, Non-fatal": "22013, Fatal"}),
        "ecc": q(3, {"DRAM Uncorrectable            : 0": "DRAM Uncorrectable            : 2"}),
        "ecccsv": csv(
            {
                "memory.used [MiB]": "memory.used [MiB], ecc.errors.uncorrected.volatile.total",
                ", 0 MiB": ", 0 MiB, 3",
            }
        ),
        "corr": {**q(2, {CORR: CORR.replace("0", "500")}), **uptime()},  # 4.06 days of uptime
        "corrhi": {**q(2, {CORR: CORR.replace("0", "5000")}), **uptime()},
        "young": {**q(2, {CORR: CORR.replace("0", "5000")}), **uptime({"350735.47": "7200.00"})},
        "remap": q(
            5,
            {
                "Remapping Failure Occurred        : No": "Remapping Failure Occurred        : Yes",
                "Pending                           : No": "Pending                           : Yes",
            },
        ),
        # the real CSV with its header swapped for the collector's --query-remapped-rows fields
        "remapcsv": csv(
            {
                "index, name, driver_version, pstate, pcie.link.gen.current, temperature.gpu, utilization.gpu [%], "
                "utilization.memory [%], memory.total [MiB], memory.free [MiB], memory.used [MiB]": (
                    "index, name, remapped_rows.pending, remapped_rows.failure"
                ),
                "0, NVIDIA H100 80GB HBM3, 595.71.05, P0, 5, 29, 0 %, 0 %, 81559 MiB, 81081 MiB, 0 MiB": (
                    "0, NVIDIA H100 80GB HBM3, 1, 0"
                ),
            }
        ),
        "retired": q(
            1, {"Pending Page Blacklist            : N/A": "Pending Page Blacklist            : Yes"}
        ),
        "hot": q(0, {TEMP: TEMP.replace("30", "88")}),
        "hotter": q(0, {TEMP: TEMP.replace("30", "95")}),
        "hwslow": q(4, active("HW Slowdown                       : Not Active")),
        "powercap": q(4, active("SW Power Cap                      : Not Active")),
        "a10": a10,
        "narrow": q(7, {WIDTH: WIDTH.replace("16x", "8x")}),
        "gen3": q(6, {GEN: GEN.replace(": 5", ": 3")}),
        "v100": nvlink("azhpc-73-v100-inactive-links.txt"),
        "dcgmdown": nvlink("dcgmi-nvlink-link-status-all-down.txt"),
        "h100slow": nvlink("h100-status-i0-18links.txt", {"Link 5: 26.562 GB/s": "Link 5: 13.281 GB/s"}),
        "h100few": nvlink("h100-status-i0-18links.txt", {"         Link 17: 26.562 GB/s\n": ""}),
        "h100ok": nvlink("h100-status-i0-18links.txt"),
        # GPU 0's last link slow on one A100 node, missing on another
        "a100slow": (
            nvlink("gpud-a100-nvlink-status.txt", {"Link 11: 25 GB/s\nGPU 1:": "Link 11: 12.5 GB/s\nGPU 1:"}),
            P4D,
        ),
        "a100few": (
            nvlink("gpud-a100-nvlink-status.txt", {"         Link 11: 25 GB/s\nGPU 1": "GPU 1"}),
            P4D,
        ),
        "one": smi_q("della-h100-545-single-no-blank-after-banner.txt"),
        "untyped": (q(), {}),
        "pmoff": q(2, {PM: PM.replace("Enabled", "Disabled")}),
        "smioff": {"cmd/nvidia-smi.txt": ("nvidia-smi", fixture("nvidia-smi", "gpud-525-err-fan.txt"))},
        "fabric": q(1, {STATE: STATE.replace("Completed", "In Progress")}),
        "fmfail": {**q(), **fm(FM_FAILED)},
        "fmonly": fm(FM_FAILED),
        "a10fm": {**a10, **fm(FM_FAILED)},
        "dcgm": {
            "cmd/dcgmi-diag.txt": (
                "dcgmi-diag",
                fixture("dcgmi-diag", "go-dcgm-52-midtable-fail-wrapped.txt"),
            )
        },
    }
    return run(tmp_path_factory.mktemp("faulty"), nodes, meta=P5)


def on(r: Result, rule: str) -> set[str]:
    """The nodes a rule fired on (so every other node of the set is a non-firing case)."""
    return {f.node for f in r.of(rule) if f.node}


def only(r: Result, rule: str, node: str) -> Finding:
    [f] = [f for f in r.of(rule) if f.node == node]
    return f


# --- healthy baseline -------------------------------------------------------------------------------


def test_healthy_samples_raise_nothing(tmp_path: Path) -> None:
    files = {
        **q(),
        **nvlink("h100-status-i0-18links.txt"),
        **uptime(),
        **dmesg("returnn-1486-reltime-aer-no-xid.txt"),
        **fm("sber-590-running-clean-pager-cut.txt"),
        "cmd/dcgmi-diag.txt": ("dcgmi-diag", fixture("dcgmi-diag", "dcgm-124-442-r2-1gpu-pass-complete.txt")),
        "cmd/cpu-governor.txt": (
            "cpu-governor",
            fixture("cpu-governor", "cpupower-frequency-info-intel_pstate-performance.txt"),
        ),
    }
    a100 = (nvlink("gpud-a100-nvlink-status.txt"), P4D)
    r = run(tmp_path, {"n1": files, "n2": files, "n3": files, "n4": files, "a1": a100}, meta=P5)
    bad = [f for f in r.findings if f.rule.startswith(MY_RULES) and f.severity != Severity.INFO]
    assert bad == []
    # their DCGM run is a 1-GPU host's (no passing 8-GPU capture is public): gpu.count.low says, as
    # information, that DCGM tested fewer GPUs than nvidia-smi lists, and nothing else
    counted = r.of("gpu.count.low")
    assert {(f.node, f.severity, f.params["counts"]["DCGM"]) for f in counted} == {
        (n, Severity.INFO, 1) for n in ("n1", "n2", "n3", "n4")
    }
    for rule in (
        "gpu.temperature.high",
        "gpu.nvlink.inactive",
        "gpu.nvlink.count",
        "gpu.nvlink.slow",
        "gpu.fabric.state",
        "gpu.dcgm.failed",
        "gpu.ecc.corrected_rate",
        "gpu.xid",
        "gpu.pcie.gen_below_peers",
    ):
        assert r.outcome(rule) == "pass", rule


# --- Xid --------------------------------------------------------------------------------------------


def test_xid_hardware_burst_is_critical(faulty: Result) -> None:
    by_xid = {f.params["xid"]: f for f in faulty.of("gpu.xid") if f.node == "xid48"}
    assert by_xid[48].severity == Severity.CRITICAL and by_xid[48].evidence[0].line == 1
    assert by_xid[94].severity == Severity.WARNING and by_xid[63].severity == Severity.INFO
    assert on(faulty, "gpu.xid") == {"xid48", "xid13", "xid45", "xid45c"}  # not on aer, fell, sxid, ...


def test_xid_app_class_repeating_is_warning_and_burst_is_one_finding(faulty: Result) -> None:
    by_xid = {f.params["xid"]: f for f in faulty.of("gpu.xid") if f.node == "xid13"}
    assert by_xid[13].params["count"] == 3 and by_xid[13].severity == Severity.WARNING
    assert by_xid[13].params["first_seen"] == "2024-08-30T11:43:09"
    assert by_xid[109].severity == Severity.CRITICAL


def test_xid_caused_by_missing_cause_is_folded_and_capped(faulty: Result) -> None:
    found = [f for f in faulty.of("gpu.xid") if f.node == "xid45"]
    assert {f.params["xid"] for f in found} == {145, 149}  # no separate Xid 45 findings
    dc = next(f for f in found if f.params["pci"] == "0000:dc:00.0")
    assert dc.params["folded"] == {"45": 2} and dc.params["cause_logged"] is False
    assert "not in the log" in dc.message and dc.severity == Severity.WARNING
    ba = next(f for f in found if f.params["pci"] == "0000:ba:00.0")
    assert ba.gpu == 6  # 0000:ba:00.0 is GPU 6 in the -q dump


def test_xid_caused_by_logged_cause_is_one_finding(faulty: Result) -> None:
    dc = [f for f in faulty.of("gpu.xid") if f.node == "xid45c" and f.params["pci"] == "0000:dc:00.0"]
    assert len(dc) == 1 and dc[0].params["cause_logged"] is True
    assert dc[0].params["count"] == 1 and dc[0].params["folded"] == {"45": 2}


def test_fallen_off_bus_is_its_own_critical_rule(faulty: Result) -> None:
    f = only(faulty, "gpu.xid.fallen_off_bus", "fell")
    assert f.severity == Severity.CRITICAL and f.params["pci"] == "0000:b3:00.0"
    assert on(faulty, "gpu.xid.fallen_off_bus") == {"fell"}
    assert "fell" not in on(faulty, "gpu.xid")  # not reported twice


def test_sxid_nonfatal_info_fatal_critical(faulty: Result) -> None:
    f = only(faulty, "gpu.sxid", "sxid")
    assert f.severity == Severity.INFO and f.params["count"] == 1 and f.params["sxid"] == 22013
    assert only(faulty, "gpu.sxid", "sxidf").severity == Severity.CRITICAL
    assert on(faulty, "gpu.sxid") == {"sxid", "sxidf"}


# --- memory -----------------------------------------------------------------------------------------


def test_ecc_uncorrectable_from_q_and_from_csv(faulty: Result) -> None:
    f = only(faulty, "gpu.ecc.uncorrectable", "ecc")
    assert f.gpu == 3 and f.params["volatile"] == 2 and f.severity == Severity.CRITICAL
    assert "DRAM Uncorrectable" in (f.evidence[0].text or "")
    c = only(faulty, "gpu.ecc.uncorrectable", "ecccsv")  # no -q on that node: the CSV columns are read
    assert c.params["source"] == "gpu_query" and c.params["volatile"] == 3 and c.evidence[0].line == 2
    assert on(faulty, "gpu.ecc.uncorrectable") == {"ecc", "ecccsv"}


def test_ecc_corrected_rate_bands(faulty: Result) -> None:
    f = only(faulty, "gpu.ecc.corrected_rate", "corr")
    assert (
        f.severity == Severity.WARNING and f.gpu == 2 and f.params["per_day"] == pytest.approx(123.2, abs=0.1)
    )
    assert only(faulty, "gpu.ecc.corrected_rate", "corrhi").severity == Severity.CRITICAL
    young = only(faulty, "gpu.ecc.corrected_rate", "young")
    assert (
        young.severity == Severity.INFO
        and "not judged" in young.message
        and young.params["uptime_hours"] == 2.0
    )
    assert on(faulty, "gpu.ecc.corrected_rate") == {"corr", "corrhi", "young"}


def test_ecc_corrected_rate_nd_line_is_a_setting(tmp_path: Path) -> None:
    site = tmp_path / "site.toml"
    site.write_text("[gpu.ecc.corrected_rate]\ncritical_per_day = 100\n")
    r = run(
        tmp_path / "b",
        {"n1": {**q(2, {CORR: CORR.replace("0", "500")}), **uptime()}},
        settings=load_settings(site),
    )
    assert sevs(r, "gpu.ecc.corrected_rate") == ["critical"]


def test_remap_failed_and_pending(faulty: Result) -> None:
    failed = only(faulty, "gpu.remap.failed", "remap")
    pending = only(faulty, "gpu.remap.pending", "remap")
    assert failed.gpu == 5 and failed.severity == Severity.CRITICAL and failed.evidence[0].line
    assert pending.gpu == 5 and pending.severity == Severity.WARNING
    assert only(faulty, "gpu.remap.pending", "remapcsv").params["source"] == "gpu_query"
    assert on(faulty, "gpu.remap.failed") == {"remap"}
    assert on(faulty, "gpu.remap.pending") == {"remap", "remapcsv"}


def test_retired_pages_pending(faulty: Result) -> None:
    f = only(faulty, "gpu.retired_pages", "retired")
    assert f.gpu == 1 and f.severity == Severity.WARNING
    assert on(faulty, "gpu.retired_pages") == {"retired"}


# --- thermal, clocks, PCIe ---------------------------------------------------------------------------


def test_temperature_warning_and_critical(faulty: Result) -> None:
    f = only(faulty, "gpu.temperature.high", "hot")
    assert (
        f.severity == Severity.WARNING and f.params["temp_c"] == 88.0 and "88" in (f.evidence[0].text or "")
    )
    assert only(faulty, "gpu.temperature.high", "hotter").severity == Severity.CRITICAL
    assert on(faulty, "gpu.temperature.high") == {"hot", "hotter"}  # the plain-table node "smioff" is at 38


def test_throttle_hw_slowdown_fires_power_cap_alone_does_not(faulty: Result) -> None:
    f = only(faulty, "gpu.clocks.throttled", "hwslow")
    assert f.gpu == 4 and f.params["reasons"] == ["hw_slowdown"]
    a10 = only(faulty, "gpu.clocks.throttled", "a10")  # real sample: HW power brake active
    assert a10.params["reasons"] == ["hw_power_brake_slowdown", "hw_slowdown"]
    assert on(faulty, "gpu.clocks.throttled") == {"hwslow", "a10", "a10fm"}  # not "powercap"


def test_pcie_width_degraded(faulty: Result) -> None:
    f = only(faulty, "gpu.pcie.width_degraded", "narrow")
    assert f.gpu == 7 and f.params == {
        "pci": "0000:db:00.0",
        "width_current": 8,
        "width_max": 16,
        "source": "gpu",
    }
    assert on(faulty, "gpu.pcie.width_degraded") == {"narrow"}


def test_pcie_gen_judged_only_against_peers(faulty: Result) -> None:
    f = only(faulty, "gpu.pcie.gen_below_peers", "gen3")
    assert f.gpu == 6 and f.params["peer_gen"] == 5 and f.params["gen_current"] == 3
    # the A10s idle at gen 1 of max 4 have no peers: not judged
    assert on(faulty, "gpu.pcie.gen_below_peers") == {"gen3"}


# --- NVLink -----------------------------------------------------------------------------------------


def test_nvlink_inactive_some_and_all(faulty: Result) -> None:
    f = only(faulty, "gpu.nvlink.inactive", "v100")
    assert f.gpu == 3 and f.params["links_down"] == [3, 5] and f.params["active"] == 4
    assert f.severity == Severity.CRITICAL and "<inactive>" in (f.evidence[0].text or "")
    down = [f for f in faulty.of("gpu.nvlink.inactive") if f.node == "dcgmdown"]
    assert sorted(f.gpu for f in down) == [0, 1] and all("all NVLinks are down" in f.message for f in down)
    assert on(faulty, "gpu.nvlink.inactive") == {"v100", "dcgmdown"}


def test_nvlink_slow_against_sku_and_peers(faulty: Result) -> None:
    f = only(faulty, "gpu.nvlink.slow", "h100slow")
    assert f.params["links"] == [5] and f.params["expected_gbps"] == 26.562
    a = only(faulty, "gpu.nvlink.slow", "a100slow")  # p4d has no per-link speed in sku.toml: peers only
    assert a.gpu == 0 and a.params["peer_median_gbps"] == 25.0 and a.params["expected_gbps"] is None
    assert on(faulty, "gpu.nvlink.slow") == {"h100slow", "a100slow"}


def test_nvlink_count_verified_is_critical_unverified_warning(faulty: Result) -> None:
    f = only(faulty, "gpu.nvlink.count", "h100few")
    assert f.severity == Severity.CRITICAL and f.params["links"] == 17 and f.params["expected"] == 18
    a = only(faulty, "gpu.nvlink.count", "a100few")
    assert a.severity == Severity.WARNING and a.gpu == 0 and a.params["peer_links"] == 12
    assert on(faulty, "gpu.nvlink.count") == {"h100few", "a100few"}


# --- inventory and fabric ---------------------------------------------------------------------------


def test_gpu_count_low_and_unknown_type(faulty: Result) -> None:
    f = only(faulty, "gpu.count.low", "one")
    assert f.severity == Severity.CRITICAL and f.params["seen"] == 1 and f.params["expected"] == 8
    info = only(faulty, "gpu.count.low", "untyped")
    assert info.severity == Severity.INFO and "not judged" in info.message
    warn_or_worse = {f.node for f in faulty.of("gpu.count.low") if f.severity != Severity.INFO}
    # p5 nodes with fewer than 8 GPUs: the single-GPU dumps and the one-row CSV samples
    assert warn_or_worse == {"one", "a10", "a10fm", "ecccsv", "remapcsv", "smioff"}


def test_persistence_off_one_finding_per_node(faulty: Result) -> None:
    f = only(faulty, "gpu.persistence.off", "pmoff")
    assert f.params["gpus"] == [2] and f.severity == Severity.INFO
    assert only(faulty, "gpu.persistence.off", "smioff").params["source"] == "smi_gpu"
    assert on(faulty, "gpu.persistence.off") == {"pmoff", "smioff"}


def test_fabric_state(faulty: Result) -> None:
    f = only(faulty, "gpu.fabric.state", "fabric")
    assert f.severity == Severity.CRITICAL and f.params["gpus"] == [1]
    assert only(faulty, "gpu.fabric.state", "fmfail").severity == Severity.CRITICAL
    # no fabric state to confirm, but a p5 is an NVSwitch system: Fabric Manager down is critical there
    fmonly = only(faulty, "gpu.fabric.state", "fmonly")
    assert fmonly.severity == Severity.CRITICAL and fmonly.params["nvswitch_type"]
    # a10fm's GPUs print no fabric, but its meta.env says p5.48xlarge, an NVSwitch type: Fabric Manager down
    # is judged by the type where the GPUs cannot confirm it
    assert on(faulty, "gpu.fabric.state") == {"fabric", "fmfail", "fmonly", "a10fm"}
    assert only(faulty, "gpu.fabric.state", "a10fm").severity == Severity.CRITICAL


def test_dcgm_failed(faulty: Result) -> None:
    found = [f for f in faulty.of("gpu.dcgm.failed") if f.node == "dcgm"]
    assert found and all(f.severity == Severity.CRITICAL for f in found)
    assert {f.params["test"] for f in found} >= {"GPU Memory"}
    assert on(faulty, "gpu.dcgm.failed") == {"dcgm"}
