"""gpu.xid and gpu.xid.fallen_off_bus follow NVIDIA's Xid catalog, on bundles built from real dmesg fixtures.

Each node carries one real kernel log, edited only where the test needs another Xid code or a line
added; the added Xid 149 / 154 lines are real GB200 lines quoted in leptonai/gpud
(components/accelerator/nvidia/xid/kmsg_test.go @2acd894a), moved to a GPU of the fixture.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Finding, Severity
from analyzer.judge.settings import load_settings
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

UCE = "uce-runbook-xid48-63-94-dbe.txt"
DBE = "[430954.509105] NVRM: Xid (PCI:0000:52:00): 48, "
REMAP = (
    "[430954.532443] NVRM: Xid (PCI:0000:52:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row "
    "(0x0000000018f31d80) marked for remapping, reset gpu to activate.\n"
)
CONTAINED = (
    "[430954.533994] NVRM: Xid (PCI:0000:52:00): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). "
    "RST: No, D-RST: No\n"
)
ALONE = {REMAP: "", CONTAINED: ""}  # the DBE line of the runbook, without its 63 and 94
OGKM = "ogkm-1150-xid45-after-149-145-syslog.txt"
OGKM_FIRST = "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001"
NETIR = (
    "[171167.620236] NVRM: Xid (PCI:0000:dc:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 "
    "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"
)
NETIR_00 = NETIR.replace("Link 01 (0x021425c6", "Link 00 (0x021405c6")
RECOVERY = (
    "[171167.621162] NVRM: Xid (PCI:0000:dc:00): 154, GPU recovery action changed from 0x0 (None) to "
    "0x4 (Drain and Reset)"
)
FELL = "nvsentinel-155-fallen-off-bus-multiline.txt"
FELL_FIRST = "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
XID79 = "[ 1843.308100] NVRM: Xid (PCI:0000:b3:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"

Files = dict[str, tuple[str, str]]


def dmesg(name: str, edit: dict[str, str] | None = None) -> Files:
    return {"cmd/dmesg.txt": ("dmesg", fixture("dmesg", name, edit))}


def code(xid: int, times: int = 1) -> Files:
    """The runbook's DBE line with its code replaced (its 63/94 removed), repeated ``times``."""
    line = fixture("dmesg", UCE).splitlines(keepends=True)[0].replace("): 48, ", f"): {xid}, ")
    return {"cmd/dmesg.txt": ("dmesg", line * times)}


def run(tmp_path: Path, nodes: dict[str, Files]) -> Result:
    root = tmp_path / "bundle"
    root.mkdir(parents=True)
    for name, files in nodes.items():
        write_node(root, name, files, meta={"instance_type": "p5.48xlarge"})
    con = connect(None)
    load(con, [root], tmp_path / "work", Limits(), jobs=1)
    modules = [
        importlib.import_module(f"analyzer.judge.rules.gpu.{m}") for m in ("xid", "xid_fallen_off_bus")
    ]
    findings, outcomes = run_rules(con, modules, load_settings())
    assert all(o.outcome != "error" for o in outcomes), outcomes
    return Result(findings, {o.rule: o for o in outcomes}, con)


CODES = (38, 44, 54, 56, 57, 61, 62, 64, 74, 92, 95, 106, 107, 108, 122, 123, 124, 125, 140, 142, 150, 152)
MORE = (153, 155, 157, 166, 170, 999)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Result:
    nodes: dict[str, Files] = {f"x{c}": code(c) for c in CODES + MORE}
    nodes.update(
        {
            "dbe_alone": dmesg(UCE, ALONE),
            "dbe_remap": dmesg(UCE),
            "x64_thrice": code(64, 3),
            "x38_thrice": code(38, 3),
            "nvlink5": dmesg(OGKM, {OGKM_FIRST: f"{NETIR}\n{RECOVERY}\n{NETIR_00}\n{OGKM_FIRST}"}),
            "fell": dmesg(FELL),
            "fell_twice": dmesg(
                FELL, {FELL_FIRST: XID79 + FELL_FIRST + XID79.replace("1843.308100", "2843.1")}
            ),
        }
    )
    return run(tmp_path_factory.mktemp("xidcat"), nodes)


def one(r: Result, node: str, xid: int, rule: str = "gpu.xid") -> Finding:
    [f] = [f for f in r.of(rule) if f.node == node and f.params["xid"] == xid]
    return f


def test_codes_missing_from_the_old_catalog_are_known(bundle: Result) -> None:
    for c in (106, 107, 108, 142, 152, 153, 166, 170):
        f = one(bundle, f"x{c}", c)
        assert "not in" not in f.message, (c, f.message)
        assert f.params["catalog_source"].startswith("NVIDIA Xid catalog"), c
    assert one(bundle, "x106", 106).severity == Severity.INFO  # SMBPBI test message: IGNORE / IGNORE


def test_codes_unused_on_ampere_and_later_are_info(bundle: Result) -> None:
    for c in (56, 57, 61, 122, 123, 124, 125):
        f = one(bundle, f"x{c}", c)
        assert f.severity == Severity.INFO, c
        assert f.route.action == "not expected on Ampere and later; if seen, contact support"
        assert "unused on Ampere and later" in f.message


def test_ignore_codes_are_info(bundle: Result) -> None:
    for c in (38, 44, 92, 157):
        f = one(bundle, f"x{c}", c)
        assert f.severity == Severity.INFO and f.params["immediate"] == "IGNORE", c


def test_reset_gpu_nvlink_codes_are_critical(bundle: Result) -> None:
    for c in (150, 155):
        f = one(bundle, f"x{c}", c)
        assert f.severity == Severity.CRITICAL, c
        assert f.route.action.startswith("reset the GPU (on HyperPod that is a node reboot"), c


def test_reset_first_codes_say_reset_not_replace(bundle: Result) -> None:
    cases = {"dbe_alone": 48, "x62": 62, "x64": 64, "x74": 74, "x95": 95, "x140": 140}
    for node, c in cases.items():
        f = one(bundle, node, c)
        assert f.severity == Severity.CRITICAL, c
        assert f.route.action.startswith("reset the GPU"), (c, f.route.action)
        assert "auto-recovery" in f.route.action and "replace" not in f.route.action, c


def test_dbe_with_row_remap_is_drain_and_reset(bundle: Result) -> None:
    f = one(bundle, "dbe_remap", 48)
    assert f.severity == Severity.CRITICAL and f.route.action.startswith("drain the node's jobs, then reset")


def test_fallen_off_bus_is_restart_and_54_is_check_seating(bundle: Result) -> None:
    fell = one(bundle, "fell", 79, "gpu.xid.fallen_off_bus")
    assert fell.severity == Severity.CRITICAL and fell.params["immediate"] == "RESTART_BM"
    assert fell.route.action.startswith("restart the machine") and "replace" not in fell.route.action
    aux = one(bundle, "x54", 54)
    assert aux.severity == Severity.CRITICAL and "seated" in aux.route.action
    assert "replace" not in aux.route.action


def test_recurrence_escalates_to_replace_only_when_the_catalog_says(bundle: Result) -> None:
    once, thrice = one(bundle, "x64", 64), one(bundle, "x64_thrice", 64)
    assert not once.params["recurring"] and thrice.params["recurring"]
    assert "replace the node" in thrice.route.action and "3x" in thrice.route.action
    ignore_thrice = one(bundle, "x38_thrice", 38)  # IGNORE / CONTACT_SUPPORT: support, not replace
    assert ignore_thrice.severity == Severity.WARNING and "contact support" in ignore_thrice.route.action
    assert "replace" not in ignore_thrice.route.action
    twice = one(bundle, "fell_twice", 79, "gpu.xid.fallen_off_bus")
    assert twice.params["recurring"] and "replace the node" in twice.route.action


def test_nvlink5_subcode_is_decoded_from_a_real_line(bundle: Result) -> None:
    f = one(bundle, "nvlink5", 149)
    assert f.severity == Severity.CRITICAL and f.params["folded"] == {"45": 2}
    [d] = f.params["nvlink"]
    assert d["subcode"] == "NETIR_LINK_EVT" and d["format"] == "V1 (<R575)"
    assert d["intr_info"] == ["0x021425c6", "0x021405c6"] and d["link_down_reason"] == 0b100001
    assert (d["immediate"], d["investigatory"], d["nvidia_severity"]) == (
        "RESET_GPU",
        "INVESTIGATE_PEER_DEVICE",
        "Link Fatal",
    )
    assert d["links"] == [1, 0]
    assert not f.params["recurring"]  # two links hit once each: one fault, not a recurrence
    assert "peer" in f.route.action
    recovery = one(bundle, "nvlink5", 154)
    assert recovery.severity == Severity.CRITICAL and recovery.route.action.startswith(
        "drain the node's jobs"
    )


def test_unknown_code_is_a_warning_that_says_so(bundle: Result) -> None:
    f = one(bundle, "x999", 999)
    assert f.severity == Severity.WARNING and "not in NVIDIA's Xid catalog" in f.message
