"""The Xid catalog: NVIDIA's resolution buckets per Xid code, and the severity and action we derive.

Source: the NVIDIA Xid catalog (docs/sources.md#xid-catalog): "Analyzing Xid Errors with the Xid Catalog",
docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, the Ampere-and-later catalog of codes
1-172 with its "Resolution Bucket (Immediate Action)" and "(Investigatory Action)" columns, its
"Fault Resolution Buckets" sheet and its "XID 144-150 Decode" sheet (read from a stored copy of the
page text).  Cause classes are NVIDIA's older "potential causes" as the Modal GPU health guide carries
them over ("-" where neither gives one).
Every entry carries a source note; where the catalog gives no bucket (162-172) the note says so and the
severity is ours, with the reason.

Severity comes from the IMMEDIATE bucket through one table (``IMMEDIATE``):

- critical: RESET_GPU, RESTART_BM, CHECK_MECHANICALS, WORKFLOW_XID_48 (its solo and with-63/64 paths
  both reset the GPU), WORKFLOW_NVLINK_ERR (the catalog: "A GPU reset or node reboot is needed").
- warning: RESTART_APP, RESTART_VM, UPDATE_SWFW, CHECK_UVM, CONTACT_SUPPORT (codes in use),
  XID_154_EVAL, WORKFLOW_NVLINK5_ERR when the payload does not decode, XID_154 until its text is read.
- info: IGNORE; WORKFLOW_XID_45 unless Xid 45 is alone on the node (then warning: RESTART_FM); codes
  the catalog marks "Unused" on Ampere and later ("not expected on Ampere and later; if seen, contact
  support").
- Refinements, all from the catalog's text: RESTART_APP whose investigatory bucket is an application
  workflow (WORKFLOW_XID_13/31: "Solo, no burst: CHECK_APP/CUDA") is info until it recurs; Xid 154 is
  rated by the action it names; Xid 144-150 by the decoded sub-code row (a payload that does not
  decode but says "Fatal" is taken as RESET_GPU).

Action text is the immediate bucket's text (on HyperPod a GPU reset or a machine restart is a node
reboot, which HyperPod auto-recovery does when NodeRecovery is Automatic: docs/sources.md#health-checks),
followed by the investigatory bucket's text for when it recurs.  Recurrence (the same Xid on the same GPU
``repeat`` times or more in one bundle) switches to the investigatory action, raises info to warning, and,
where the immediate bucket is a reset/restart and the investigatory bucket is CONTACT_SUPPORT or the Xid 48
RMA flow, says to replace the node: that is the only escalation to "replace".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from analyzer.judge.findings import Severity

C, W, I = Severity.CRITICAL, Severity.WARNING, Severity.INFO  # noqa: E741 - short names keep the tables readable

_REBOOT = (
    "on HyperPod that is a node reboot, which HyperPod auto-recovery does when NodeRecovery is "
    "Automatic, else run batch-reboot-cluster-nodes"
)
_REPLACE = "replace the node (HyperPod batch-replace-cluster-nodes) and open an AWS support case"
UNUSED = "UNUSED"  # the catalog: immediate CONTACT_SUPPORT, investigatory "N/A; Unused"
_UNUSED_ACTION = "not expected on Ampere and later; if seen, contact support"

#: immediate bucket -> (severity, action now).  The one severity mapping of this module.
IMMEDIATE: dict[str, tuple[Severity, str]] = {
    "RESET_GPU": (C, f"reset the GPU ({_REBOOT})"),
    "RESTART_BM": (C, f"restart the machine ({_REBOOT})"),
    "CHECK_MECHANICALS": (
        C,
        "check that the GPU is seated and its power and other connections are secure (on HyperPod "
        "the hardware is AWS's: open a support case with this bundle)",
    ),
    "WORKFLOW_XID_48": (
        C,
        f"reset the GPU ({_REBOOT}), then run field diagnostics (a HyperPod deep health check, or "
        "dcgmi diag -r 3 on the drained node)",
    ),
    "WORKFLOW_NVLINK_ERR": (
        C,
        f"reset the GPU ({_REBOOT}); the fault may sit at the far end of the link (check the peer "
        "GPU or NVSwitch)",
    ),
    "RESTART_APP": (W, "restart the application; no GPU reset or reboot is needed"),
    "RESTART_VM": (W, "restart the VM that owns the GPU (on HyperPod: reboot the node); no GPU reset needed"),
    "UPDATE_SWFW": (W, "update the driver, firmware and software to current versions"),
    "CHECK_UVM": (W, f"if UVM or vGPU is in use, reset the GPU ({_REBOOT}); otherwise nothing to do"),
    "CONTACT_SUPPORT": (W, "contact support (on HyperPod: open an AWS support case with this bundle)"),
    "XID_154_EVAL": (
        W,
        "take the action of the Xid 154 on this GPU if there is one; else restart the application",
    ),
    "WORKFLOW_NVLINK5_ERR": (
        W,
        "decode IntrInfo / errorStatus with NVIDIA's Xid 144-150 table (the line carries no payload "
        "that decodes); reset the GPU if the decoded row is fatal",
    ),
    "XID_154": (W, "follow the recovery action this Xid 154 names"),
    "WORKFLOW_XID_45": (I, "cleanup after another error: follow the other Xid on this node"),
    "IGNORE": (I, "no action needed"),
    UNUSED: (I, _UNUSED_ACTION),
}

#: investigatory bucket (as NVIDIA spells it) -> what to do when the Xid recurs ('' = nothing more).
INVESTIGATORY: dict[str, str] = {
    "CONTACT_SUPPORT": "contact support (on HyperPod: open an AWS support case with this bundle)",
    "CHECK_APP/CUDA": "check the application's data and CUDA calls (the pid in the line names it); "
    "report it if it is the driver",
    "WORKFLOW_XID_13": "if it repeats on the same GPC/TPC, run DCGM diagnostics (possible hardware), then "
    "field diagnostics; otherwise check the application (compute-sanitizer, cuda-gdb)",
    "WORKFLOW_XID_31": "if MMU faults repeat on this GPU, run DCGM diagnostics (possible hardware); on "
    "different GPUs it is the application (compute-sanitizer, cuda-gdb)",
    "WORKFLOW_XID_48": "with Xid 63/64 follow their guidance; for SRAM errors check the SRAM "
    "error-threshold flag and follow the RMA flow if it is set",
    "INVESTIGATE_SW": "investigate the user's or NVIDIA's software (the pid in the line names the process)",
    "INVESTIGATE_SW_USER": "investigate the software or user action behind it if it was not expected",
    "INVESTIGATE_SW/USER": "investigate the software or user action behind it if it was not expected",
    "INVESTIGATE_SW_USER_LINK_SI": "investigate the software or user action if unexpected, then the "
    "link's signal integrity",
    "INVESTIGATE_LINK_SI": "investigate the link's signal integrity",
    "INVESTIGATE_LINK_SI_AND_CABLES": "check the link's cable, temperature, transceiver and seating",
    "INVESTIGATE_PEER_DEVICE": "the device at the other end of the link took it down: investigate the "
    "peer GPU or NVSwitch",
    "INVESTIGATE_HOST": "check the other logs: it is likely a secondary sign of another action or fault",
    "CHECK_NVLINK_FAILURE_FLOW": "if a link in the partition went down in the 30 s before, ignore it; else "
    "report the issue",
    "REPORT_ISSUE (if seen >1 per day)": "report the issue if it is seen more than once a day",
    "XID_137_FLOW": "check the application (cuda-gdb, compute-sanitizer); file a bug if inconclusive",
    "SYMPATHETIC_REPORT_SOLO": "sympathetic: resolve the errors it came with first; report it if alone",
    "IGNORE (sympathetic)": "sympathetic: resolve the errors it came with first; report it if alone",
    "UPDATE_SWFW": "update the driver, firmware and software to current versions",
    "IGNORE": "",
    "N/A": "",
    "RESTART_FM if solo, else IGNORE": "",  # decided by assess(solo=...)
    "WORKFLOW_NVLINK5_ERR": "",  # decided by the decoded sub-code row
}
#: investigatory buckets whose recurrence after a reset means the hardware: replace the node.
_HARDWARE_INVESTIGATION = ("CONTACT_SUPPORT", "WORKFLOW_XID_48")
#: investigatory buckets with nothing to follow up when the Xid recurs.
_NO_FOLLOW_UP = ("IGNORE", "N/A", "RESTART_FM if solo, else IGNORE", "WORKFLOW_NVLINK5_ERR")
#: RESTART_APP codes NVIDIA says are the application's unless they repeat.
_APP_WORKFLOWS = ("WORKFLOW_XID_13", "WORKFLOW_XID_31")


@dataclass(frozen=True)
class XidEntry:
    code: int
    meaning: str
    cause_class: str
    severity: Severity
    action: str
    immediate: str | None = None  # the catalog's immediate bucket; None where it gives none
    investigatory: str | None = None  # the catalog's investigatory bucket; None where none
    source: str = "NVIDIA Xid catalog"
    unused: bool = False


# --- Xid 144-150: the "XID 144-150 Decode" sheet ------------------------------------------------------
#
# The line reads ``<sub-code> <Fatal|Nonfatal> XC<n> i<n> Link <nn> (<IntrInfo> <errorStatus> ...)``
# (the catalog's WORKFLOW_NVLINK5_ERR).  The sub-code is in IntrInfo[9:0] before R575 (V1: [9:5] unit, [4:0]
# the Xid) and IntrInfo[6:0] from R575 (V2); IntrInfo[25:20] is 0 except for the NETIR_LINK_DOWN
# reasons; the error status is the second register.  RLW_RXPIPE's "Action 2" bit is IntrInfo[10] (V1)
# or IntrInfo[7] (V2).


@dataclass(frozen=True)
class _Nl5:
    xid: int
    name: str  # "V1/V2" where the two spell it differently
    v1: int  # IntrInfo[9:0] before R575
    v2: int  # IntrInfo[6:0] from R575
    status: tuple[int, ...] | None  # error status values; None: any
    immediate: str
    investigatory: str
    severity: str  # the catalog's own column: Fatal, Non-fatal, Link Fatal, ...
    hw_sw: str
    reason: int = 0  # IntrInfo[25:20]
    action2: bool = False  # RLW_RXPIPE: the Action 2 bit promotes to RESET_GPU


def _rows_nl5() -> list[_Nl5]:
    b = lambda s: int(s, 2)  # noqa: E731 - NVIDIA writes the masks in binary
    rows: list[_Nl5] = []

    def add(xid: int, name: str, v1: str, v2: str, table: Iterable[tuple[Any, ...]], **kw: Any) -> None:
        for status, immediate, investigatory, sev, hw in table:
            st = None if status is None else tuple(status) if isinstance(status, tuple) else (status,)
            rows.append(_Nl5(xid, name, b(v1), b(v2), st, immediate, investigatory, sev, hw, **kw))

    ii, ic, rc = ("IGNORE", "IGNORE"), ("IGNORE", "CONTACT_SUPPORT"), ("RESET_GPU", "CONTACT_SUPPORT")
    nf, fa = "Non-fatal", "Fatal"
    add(
        144,
        "SAW_MVB",
        "0000100001",
        "0000001",
        [(0x1, *ic, nf, "HW"), (0x2, *rc, fa, "HW"), (0x4, *ii, nf, "HW"), (0x8, *ic, nf, "HW")]
        + [(0x10, *rc, fa, "HW"), (0x20, *ii, nf, "HW")],
    )
    add(145, "RLW_CTRL", "0001100010", "0000011", [(0x80000000, *ic, nf, "SW")])
    add(
        145,
        "RLW_REMAP",
        "0010000010",
        "0000100",
        [((0x1, 0x2), "XID_154_EVAL", "CONTACT_SUPPORT", nf, "SW")]
        + [((0x4, 0x8, 0x10, 0x20), "XID_154_EVAL", "CHECK_NVLINK_FAILURE_FLOW", nf, "SW")]
        + [((0x40, 0x80), *rc, fa, "HW"), ((0x100, 0x200), *ii, nf, "HW"), (0x80000000, *ic, nf, "SW")],
    )
    add(
        145,
        "RLW_RSPCOL",
        "0010100010",
        "0000101",
        [(0x1, *ii, nf, "HW"), (0x2, *rc, fa, "HW"), (0x80000000, *ic, nf, "SW")],
    )
    add(
        145, "RLW_RXPIPE", "0011000010", "0000110", [((0x1, 0x2, 0x4), *ic, "Non-fatal*", "SW")], action2=True
    )
    add(145, "RLW_RXPIPE", "0011000010", "0000110", [(0x8, *ic, nf, "HW/SW"), (0x80000000, *ic, nf, "SW")])
    add(
        145,
        "RLW_SRC_TRACK",
        "0011100010",
        "0000111",
        [(0x1, *rc, fa, "HW"), (0x2, *ii, nf, "HW"), ((0x4, 0x8), "XID_154_EVAL", "IGNORE", nf, "HW/SW")]
        + [((0x10, 0x20), *rc, fa, "HW"), (0x80000000, *ic, nf, "SW")],
    )
    add(
        145,
        "RLW_TAGSTATE",
        "0100000010",
        "0001000",
        [
            (0x1, *ii, nf, "HW"),
            (0x2, *rc, fa, "HW"),
            (0x10000, *ii, nf, "HW"),
            ((0x20000, 0x100000), *rc, fa, "HW"),
        ]
        + [(0x80000000, *ic, nf, "SW")],
    )
    tlw = [(0x1, *ii, nf, "HW"), (0x2, *ic, nf, "HW"), (0x4, *rc, fa, "HW"), (0x80000000, *ic, nf, "SW")]
    add(146, "TLW_CTRL", "0100100011", "0001001", tlw)
    add(146, "TLW_RX/TLW_RX_PIPE0", "0101000011", "0001010", tlw)
    add(146, "TLW_RX/TLW_RX_PIPE1", "0101000011", "0001011", tlw)
    add(146, "TLW_TX/TLW_TX_PIPE0", "0101100011", "0001100", tlw)
    add(146, "TLW_TX/TLW_TX_PIPE1", "0101100011", "0001101", tlw)
    add(147, "TREX", "0110000100", "0001110", [((0x1, 0x80000000), *ic, nf, "SW")])
    add(148, "NVLPW_CTRL/NVLPW", "0000000101", "0001111", [(0x80000000, *ic, nf, "SW")])
    add(
        149,
        "NETIR/NETIR_INT",
        "0000000110",
        "0011000",
        [(None, "RESET_GPU", "SYMPATHETIC_REPORT_SOLO", "Link Fatal", "HW/SW")],
    )
    down = {
        0b000000: ("RESET_GPU", "SYMPATHETIC_REPORT_SOLO", "HW/SW"),
        0b000001: ("RESET_GPU", "REPORT_ISSUE (if seen >1 per day)", "HW/SW"),
        0b000010: ("RESET_GPU", "INVESTIGATE_LINK_SI", "HW/SW"),
        0b000100: ("RESET_GPU", "INVESTIGATE_LINK_SI", "HW"),
        0b001010: ("RESET_GPU", "INVESTIGATE_LINK_SI", "HW"),
        0b001111: ("RESET_GPU", "INVESTIGATE_SW_USER", "SW"),
        0b010000: ("RESET_GPU", "INVESTIGATE_SW_USER_LINK_SI", "SW"),
        0b010001: ("RESET_GPU", "INVESTIGATE_SW_USER", "SW"),
        0b010010: ("RESET_GPU", "INVESTIGATE_SW_USER_LINK_SI", "SW"),
        0b010101: ("RESET_GPU", "INVESTIGATE_PEER_DEVICE", "HW/SW"),
        0b010110: ("RESET_GPU", "INVESTIGATE_SW_USER", "SW"),
        **{r: ("RESET_GPU", "INVESTIGATE_PEER_DEVICE", "HW/SW") for r in range(0b100000, 0b100110)},
        0b100110: ("IGNORE", "INVESTIGATE_SW/USER", "HW/SW"),
        0b101000: ("IGNORE", "INVESTIGATE_HOST", "SW"),
        0b101010: ("RESET_GPU", "INVESTIGATE_LINK_SI_AND_CABLES", "HW"),
        0b101011: ("RESET_GPU", "INVESTIGATE_LINK_SI_AND_CABLES", "HW"),
    }
    for reason, (immediate, investigatory, hw) in down.items():
        sev = "Fatal" if reason == 0b101000 else "Link Fatal"
        add(
            149,
            "NETIR_LINK_EVT/NETIR_LINK_DOWN",
            "0111000110",
            "0010001",
            [(None, immediate, investigatory, sev, hw)],
            reason=reason,
        )
    add(
        149,
        "NETIR_BER_EVENT",
        "1000100110",
        "0010011",
        [((0x0, 0x1, 0x2, 0x3), "IGNORE", "INVESTIGATE_LINK_SI_AND_CABLES", nf, "HW")],
    )
    add(
        149,
        "NETIR_MFDE_EVENT",
        "1001000110",
        "0010100",
        [((0x1, 0x4, 0x5, 0x7), *rc, "Fatal**", "HW/SW"), (0x3, *ii, nf, "NA")],
    )
    add(150, "MSE Degraded", "0000000000", "0000000", [((0x0, 0xFFFFFFFF), *rc, fa, "FW")])
    add(150, "MSE_WATCHDOG", "0000000000", "0000000", [(0x0, *rc, fa, "FW")])
    return rows


NVLINK5_DECODE: list[_Nl5] = _rows_nl5()

#: Xid codes whose decode rows all give the same buckets: their catalog default without a payload.
_NL5_UNIFORM: dict[int, tuple[str, str]] = {
    code: next(iter(pairs))
    for code in range(144, 151)
    if len(pairs := {(r.immediate, r.investigatory) for r in NVLINK5_DECODE if r.xid == code}) == 1
}

_NV = "NVIDIA Xid catalog"
_ALL7 = "HW/DRV/APP/SYSMEM/BUS/THERM/FB"
_GSP = "HW/DRV/SYSMEM/BUS/THERM/FB"

# (codes, meaning, cause class, immediate, investigatory, source note)
_ROWS: list[tuple[tuple[int, ...], str, str, str, str | None, str]] = [
    ((8,), "GPU stopped processing", "DRV/APP/BUS/THERM", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    (
        (11,),
        "invalid or corrupted push buffer stream",
        "DRV/SYSMEM/BUS/FB",
        "RESTART_APP",
        "CHECK_APP/CUDA",
        _NV,
    ),
    ((13,), "graphics engine exception", _ALL7, "RESTART_APP", "WORKFLOW_XID_13", _NV),
    ((14,), "fake or injected error from userspace", "-", "IGNORE", "CONTACT_SUPPORT", _NV),
    (
        (25,),
        "invalid or illegal push buffer stream",
        "DRV/APP/SYSMEM/BUS/FB",
        "RESTART_APP",
        "CHECK_APP/CUDA",
        _NV,
    ),
    ((31,), "GPU memory page fault (MMU)", "HW/DRV/APP", "RESTART_APP", "WORKFLOW_XID_31", _NV),
    (
        (32,),
        "invalid or corrupted push buffer stream (PBDMA)",
        "DRV/SYSMEM/BUS/THERM/FB",
        "RESTART_APP",
        "CHECK_APP/CUDA",
        "NVIDIA Xid catalog (trigger text: mostly PCIe quality, not the application)",
    ),
    ((37,), "driver firmware error", "-", "IGNORE", "CHECK_APP/CUDA", _NV),
    ((38,), "driver firmware error (FECS watchdog timeout)", "DRV", "IGNORE", "CONTACT_SUPPORT", _NV),
    ((39, 40, 41), "copy engine exception", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    ((43,), "GPU stopped processing (reset-channel verify)", "DRV/APP", "IGNORE", "CONTACT_SUPPORT", _NV),
    ((44,), "graphics engine fault during context switch", "DRV", "IGNORE", "CONTACT_SUPPORT", _NV),
    (
        (45,),
        "preemptive cleanup after a previous error",
        "DRV/APP",
        "WORKFLOW_XID_45",
        "RESTART_FM if solo, else IGNORE",
        "NVIDIA Xid catalog (WORKFLOW_XID_45: solo RESTART_FM, not solo IGNORE)",
    ),
    ((46,), "GPU stopped processing (GPU timeout)", "DRV", "RESET_GPU", "CONTACT_SUPPORT", _NV),
    (
        (48,),
        "double-bit ECC error",
        "HW",
        "WORKFLOW_XID_48",
        "WORKFLOW_XID_48",
        "NVIDIA Xid catalog (WORKFLOW_XID_48: solo RESET_GPU, with 63/64 DRAIN_AND_RESET)",
    ),
    (
        (54,),
        "auxiliary power is not connected to the GPU board",
        "-",
        "CHECK_MECHANICALS",
        "CONTACT_SUPPORT",
        _NV,
    ),
    ((60,), "video processor exception (SEC2)", "DRV", "RESTART_APP", "INVESTIGATE_SW", _NV),
    ((62,), "internal micro-controller halt", "HW/DRV/THERM", "RESET_GPU", "CONTACT_SUPPORT", _NV),
    ((63,), "GPU memory row-remapping event", "HW/DRV/FB", "IGNORE", "IGNORE", _NV),
    ((64,), "GPU memory row-remapping failure", "HW/DRV", "RESET_GPU", "CONTACT_SUPPORT", _NV),
    ((66,), "illegal access by driver", "DRV/APP", "IGNORE", "INVESTIGATE_SW", _NV),
    ((67,), "illegal access by driver", "DRV/APP", "IGNORE", "CONTACT_SUPPORT", _NV),
    ((68,), "NVDEC0 exception", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    ((69,), "graphics engine class error", "HW/DRV", "RESTART_APP", "CHECK_APP/CUDA", _NV),
    (
        (70, 71, 72, 75, 76, 77),
        "copy engine (CE3-CE8) unknown error",
        "HW/DRV",
        "RESTART_APP",
        "CONTACT_SUPPORT",
        _NV,
    ),
    (
        (74,),
        "NVLink error",
        "HW/DRV/BUS",
        "WORKFLOW_NVLINK_ERR",
        "CONTACT_SUPPORT",
        "NVIDIA Xid catalog (register bits of WORKFLOW_NVLINK_ERR not decoded here)",
    ),
    ((78,), "vGPU start error", "DRV", "UPDATE_SWFW", "UPDATE_SWFW", _NV),
    ((79,), "GPU has fallen off the bus", "HW/DRV/SYSMEM/BUS/THERM", "RESTART_BM", "CONTACT_SUPPORT", _NV),
    ((80,), "corrupted data sent to GPU", "HW/DRV/SYSMEM/BUS/FB", "RESTART_APP", "CHECK_APP/CUDA", _NV),
    ((82,), "NVJPG0 error", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    ((83, 84, 88, 89), "NVDEC1-4 error", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    ((85,), "copy engine (CE9) unknown error", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    ((86,), "OFA exception", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    ((92,), "high single-bit ECC error rate", "HW/DRV", "IGNORE", "CONTACT_SUPPORT", _NV),
    ((93,), "non-fatal violation of the InfoROM wear limit", "DRV/APP", "IGNORE", "CONTACT_SUPPORT", _NV),
    (
        (94,),
        "contained memory error",
        "HW/DRV/FB",
        "RESTART_APP",
        "IGNORE (sympathetic)",
        "NVIDIA Xid catalog (trigger text: reset the GPU when convenient)",
    ),
    ((95,), "uncontained memory error", "HW/DRV/FB", "RESET_GPU", "IGNORE (sympathetic)", _NV),
    ((96, 97, 98), "NVDEC5-7 error", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    (tuple(range(99, 106)), "NVJPG1-7 error", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    (
        (106,),
        "SMBPBI test message",
        "-",
        "IGNORE",
        "IGNORE",
        "NVIDIA Xid catalog (no cause class in our sources)",
    ),
    (
        (107,),
        "SMBPBI test message (silent)",
        "-",
        "IGNORE",
        "IGNORE",
        "NVIDIA Xid catalog (no cause class in our sources)",
    ),
    (
        (108,),
        "NVLink remote translation error (listed 'Unused')",
        "-",
        "IGNORE",
        "XID_137_FLOW",
        "NVIDIA Xid catalog (no cause class in our sources)",
    ),
    ((109,), "context-switch timeout", _ALL7, "RESET_GPU", "CONTACT_SUPPORT", _NV),
    (
        (110,),
        "security fault",
        "-",
        "RESET_GPU",
        "INVESTIGATE_SW",
        "NVIDIA Xid catalog (trigger text: uncommon unless hardware fails; cold reset, vendor if it persists)",
    ),
    ((119,), "GSP RPC timeout", _GSP, "RESET_GPU", "INVESTIGATE_SW", _NV),
    ((120,), "GSP error", _GSP, "RESET_GPU", "INVESTIGATE_SW", _NV),
    (
        (121,),
        "C2C (Grace-GPU NVLink) corrected error",
        "HW/BUS",
        "IGNORE",
        "CONTACT_SUPPORT",
        "NVIDIA Xid catalog (trigger text: no operational impact; reset at a service window to retrain the link)",
    ),
    (
        tuple(range(126, 136)),
        "copy engine (CE10-CE19) unknown error",
        "HW/DRV",
        "RESTART_APP",
        "CONTACT_SUPPORT",
        _NV,
    ),
    ((136,), "link training failed", "HW/BUS", "RESET_GPU", "INVESTIGATE_LINK_SI", _NV),
    ((137,), "NVLink privilege error (remote MMU fault)", "APP", "IGNORE", "XID_137_FLOW", _NV),
    ((139,), "OFA1 error", "HW/DRV", "RESTART_APP", "CONTACT_SUPPORT", _NV),
    (
        (140,),
        "uncorrectable ECC error that escaped row remapping",
        "HW/DRV/FB",
        "RESET_GPU",
        "CONTACT_SUPPORT",
        _NV,
    ),
    ((141,), "CUDA fast-path error", "-", "IGNORE", "CONTACT_SUPPORT", _NV),
    (
        (142,),
        "NVENC3 error (GB200)",
        "-",
        "CONTACT_SUPPORT",
        None,
        "NVIDIA Xid catalog (no investigatory bucket given; no cause class in our sources)",
    ),
    ((143,), "GPU initialization error", "HW/DRV/FB", "RESET_GPU", "CONTACT_SUPPORT", _NV),
    (
        (144,),
        "NVLink SAW error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode",
    ),
    (
        (145,),
        "NVLink RLW error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode",
    ),
    (
        (146,),
        "NVLink TLW error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode",
    ),
    (
        (147,),
        "NVLink TREX error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode",
    ),
    (
        (148,),
        "NVLink NVLPW_CTRL error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode",
    ),
    (
        (149,),
        "NVLink NETIR error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode",
    ),
    (
        (150,),
        "NVLink MSE error",
        "-",
        "WORKFLOW_NVLINK5_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "NVIDIA Xid catalog + XID 144-150 Decode (every 150 row: RESET_GPU / CONTACT_SUPPORT, fatal)",
    ),
    ((151,), "key rotation error (confidential computing)", "-", "RESTART_VM", "CONTACT_SUPPORT", _NV),
    (
        (152,),
        "DLA SMMU error",
        "-",
        "IGNORE",
        "CONTACT_SUPPORT",
        "NVIDIA Xid catalog (applies to none of A100/H100/B100/GB200; no cause class in our sources)",
    ),
    (
        (153,),
        "DLA timeout error",
        "-",
        "IGNORE",
        "CONTACT_SUPPORT",
        "NVIDIA Xid catalog (applies to none of A100/H100/B100/GB200; no cause class in our sources)",
    ),
    (
        (154,),
        "GPU recovery action changed",
        "-",
        "XID_154",
        "N/A",
        "NVIDIA Xid catalog (informational; names the action)",
    ),
    (
        (155,),
        "NVLink software-defined error (intentional link down)",
        "-",
        "RESET_GPU",
        "INVESTIGATE_SW_USER",
        _NV,
    ),
    ((156,), "resource retirement event", "-", "RESET_GPU", "IGNORE", _NV),
    (
        (157,),
        "resource retirement failure",
        "-",
        "IGNORE",
        "CONTACT_SUPPORT",
        "NVIDIA Xid catalog (trigger text: no repair possible; workloads run but the Xid may come again)",
    ),
    ((158,), "GPU fatal timeout", "-", "RESET_GPU", "CONTACT_SUPPORT", _NV),
    ((159,), "CHI non-data error (C2C-linked GPUs)", "-", "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO", _NV),
    ((160,), "channel retirement event", "-", "IGNORE", "INVESTIGATE_SW", _NV),
    ((161,), "channel retirement failure", "-", "IGNORE", "INVESTIGATE_SW", _NV),
]

# The catalog gives no bucket for 162-172; severity and action are ours:
# (code, meaning, class, sev, action, note)
_NO_BUCKET: list[tuple[int, str, str, Severity, str, str]] = [
    (
        162,
        "power-smoothing circuitry re-engaged",
        "-",
        I,
        "no action needed",
        "NVIDIA Xid catalog gives no bucket and no trigger text; ours: info (the capability came back)",
    ),
    (
        163,
        "power-smoothing circuitry disengaged",
        "-",
        I,
        "no GPU reset needed; resolve the thermal events if power smoothing is wanted; if it timed out, "
        "reload the driver or reset the GPU",
        "NVIDIA Xid catalog gives no bucket; action from its trigger text",
    ),
    (
        164,
        "power-smoothing circuitry low lifetime",
        "-",
        I,
        "monitor power swings; expect to replace the GPU if power smoothing is wanted",
        "NVIDIA Xid catalog gives no bucket; action from its trigger text",
    ),
    (
        165,
        "power-smoothing circuitry lifetime exhausted",
        "-",
        W,
        "power swings will occur: replace the GPU if they are not acceptable",
        "NVIDIA Xid catalog gives no bucket; action from its trigger text",
    ),
    (
        166,
        "confidential-computing traffic before the link was set up for encryption",
        "-",
        W,
        "contact support (NVIDIA: applies to confidential-computing mode only)",
        "NVIDIA Xid catalog gives no bucket; trigger text: CC mode only; ours: warning (unexpected outside CC)",
    ),
    (
        167,
        "PCIe fatal timeout",
        "HW/BUS",
        C,
        f"restart the machine ({_REBOOT}); contact support if it recurs",
        "NVIDIA Xid catalog gives no bucket and no text; ours: critical as the Modal GPU health guide flags it, acted on like Xid 79",
    ),
    (
        168,
        "reduced GPU memory capacity (errors in the write-protected region)",
        "HW",
        W,
        "enable ECC (to allow row remapping) or reboot with a shifted WPR",
        "NVIDIA Xid catalog gives no bucket; action from its trigger text (seen only with ECC disabled)",
    ),
    (
        169,
        "SEC2 internal micro-controller halt",
        "HW/DRV",
        C,
        f"reset the GPU ({_REBOOT}); contact support if it recurs",
        "NVIDIA Xid catalog gives no bucket and no text; ours: as Xid 62 (micro-controller halt: RESET_GPU), "
        "the Modal GPU health guide flags it critical",
    ),
    (
        170,
        "interrupt seen in confidential-computing mode",
        "-",
        W,
        "contact support (NVIDIA: applies to confidential-computing mode only)",
        "NVIDIA Xid catalog gives no bucket; trigger text: CC mode only; ours: warning (unexpected outside CC)",
    ),
    (
        171,
        "uncorrectable DRAM error (detail of an Xid 48)",
        "HW",
        C,
        f"follow the Xid 48 it details: reset the GPU ({_REBOOT})",
        "NVIDIA Xid catalog gives no bucket; trigger text: additional to Xid 48; ours: WORKFLOW_XID_48",
    ),
    (
        172,
        "uncorrectable SRAM error (detail of an Xid 48)",
        "HW",
        C,
        f"follow the Xid 48 it details: reset the GPU ({_REBOOT}); check the SRAM error-threshold flag "
        "and follow the RMA flow if it is set",
        "NVIDIA Xid catalog gives no bucket; trigger text: additional to Xid 48; ours: WORKFLOW_XID_48 (SRAM path)",
    ),
]

#: The NVIDIA Xid catalog: "Unused" on Ampere and later (immediate CONTACT_SUPPORT, investigatory
#: "N/A; Unused"), by NVIDIA's mnemonic; the legacy meaning where the Modal GPU health guide gives one
#: (docs/sources.md#xid-catalog).
_UNUSED_CODES: dict[int, str] = {
    1: "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD",
    2: "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD",
    3: "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD",
    4: "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY",
    5: "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW",
    6: "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR",
    7: "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR",
    9: "ROBUST_CHANNEL_GR_ERROR_INSTANCE",
    10: "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP",
    12: "ROBUST_CHANNEL_GR_ERROR_SW_METHOD",
    15: "ROBUST_CHANNEL_SCANLINE_TIMEOUT",
    16: "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT",
    17: "ROBUST_CHANNEL_PARAMETER_ERROR",
    18: "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR",
    19: "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER",
    20: "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD",
    21: "ROBUST_CHANNEL_ME_ERROR_SW_METHOD",
    22: "ROBUST_CHANNEL_VP_ERROR_SW_METHOD",
    23: "ROBUST_CHANNEL_RC_LOGGING_ENABLED",
    24: "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT",
    26: "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT",
    27: "ROBUST_CHANNEL_VP_ERROR",
    28: "ROBUST_CHANNEL_VP2_ERROR",
    29: "ROBUST_CHANNEL_BSP_ERROR",
    30: "ROBUST_CHANNEL_BAD_ADDR_ACCESS",
    33: "ROBUST_CHANNEL_SEC_ERROR",
    34: "ROBUST_CHANNEL_MSVLD_ERROR",
    35: "ROBUST_CHANNEL_MSPDEC_ERROR",
    36: "ROBUST_CHANNEL_MSPPP_ERROR",
    42: "ROBUST_CHANNEL_VIC_ERROR",
    47: "ROBUST_CHANNEL_NVENC0_ERROR",
    49: "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY",
    50: "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR",
    51: "SILENT_RUNNING_STRESS_TEST_FAILURE",
    52: "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE",
    53: "SILENT_RUNNING_TEMP_REDUCED_CLOCKING",
    55: "SILENT_RUNNING_TEMPERATURE_READ_ERROR",
    56: "DISPLAY_CHANNEL_EXCEPTION: display engine error",
    57: "FB_LINK_TRAINING_FAILURE_ERROR: error programming the video memory interface",
    58: "FB_MEMORY_ERROR",
    59: "PMU_ERROR",
    61: "PMU_BREAKPOINT: internal micro-controller breakpoint",
    65: "ROBUST_CHANNEL_NVENC1_ERROR",
    73: "ROBUST_CHANNEL_NVENC2_ERROR",
    81: "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR",
    87: "NVTELEMETRY_DRIVER_REPORT",
    90: "LTC_ERROR",
    91: "RESERVED_XID",
    111: "BUNDLE_ERROR_EVENT",
    112: "DISP_SUPERVISOR_ERROR",
    113: "DP_LT_FAILURE",
    114: "HEAD_RG_UNDERFLOW",
    115: "CORE_CHANNEL_REGS",
    116: "WINDOW_CHANNEL_REGS",
    117: "CURSOR_CHANNEL_REGS",
    118: "HEAD_REGS",
    122: "SPI_PMU_RPC_READ_FAIL: SPI PMU RPC read failure",
    123: "SPI_PMU_RPC_WRITE_FAIL: SPI PMU RPC write failure",
    124: "SPI_PMU_RPC_ERASE_FAIL: SPI PMU RPC erase failure",
    125: "INFOROM_FS_ERROR: InfoROM file-system failure",
    138: "ROBUST_CHANNEL_DLA_ERROR",
}


def _entry(
    code: int, meaning: str, cls: str, immediate: str, investigatory: str | None, note: str
) -> XidEntry:
    severity, action = IMMEDIATE[immediate]
    then = investigatory
    if immediate == "RESTART_APP" and investigatory in _APP_WORKFLOWS:
        severity = I  # the catalog's WORKFLOW_XID_13/31: "Solo, no burst: CHECK_APP/CUDA"
    if code in _NL5_UNIFORM:  # every row of its decode gives the same buckets (150: RESET_GPU)
        now, then = _NL5_UNIFORM[code]
        severity, action = IMMEDIATE[now]
    if code == 94:  # the catalog's trigger text
        action = f"restart the application that hit it (the others are unaffected); reset the GPU when convenient ({_REBOOT})"
    tail = INVESTIGATORY.get(then or "", "")
    if tail:
        action = f"{action}; if it recurs: {tail}"
    return XidEntry(code, meaning, cls, severity, action, immediate, investigatory, note)


def _build() -> dict[int, XidEntry]:
    out: dict[int, XidEntry] = {}
    for codes, meaning, cls, immediate, investigatory, note in _ROWS:
        for code in codes:
            out[code] = _entry(code, meaning, cls, immediate, investigatory, note)
    for code, meaning, cls, sev, action, note in _NO_BUCKET:
        out[code] = XidEntry(code, meaning, cls, sev, action, None, None, note)
    for code, legacy in _UNUSED_CODES.items():
        out[code] = XidEntry(
            code,
            f"unused on Ampere and later (legacy {legacy})",
            "legacy",
            I,
            _UNUSED_ACTION,
            UNUSED,
            "N/A",
            "NVIDIA Xid catalog: Unused (CONTACT_SUPPORT / N/A)",
            unused=True,
        )
    return dict(sorted(out.items()))


CATALOG: dict[int, XidEntry] = _build()
NOT_IN_CATALOG = "not in NVIDIA's Xid catalog (codes 1-172)"


def xid_entry(code: int) -> XidEntry:
    """The catalog entry, or a warning entry for a code the catalog does not know.

    >>> xid_entry(79).severity.value, xid_entry(13).severity.value, xid_entry(999).meaning
    ('critical', 'info', "not in NVIDIA's Xid catalog (codes 1-172)")
    >>> xid_entry(61).severity.value, xid_entry(61).action
    ('info', 'not expected on Ampere and later; if seen, contact support')
    """
    return CATALOG.get(
        code,
        XidEntry(
            code,
            NOT_IN_CATALOG,
            "-",
            W,
            "contact support (on HyperPod: open an AWS support case with this bundle)",
            None,
            None,
            "not in NVIDIA Xid catalog",
        ),
    )


_NL5_REGS = re.compile(r"[(\[]\s*(0x[0-9a-fA-F]+(?:[\s,]+0x[0-9a-fA-F]+)*)\s*[)\]]")
_NL5_NAME = re.compile(r"^\s*([A-Z][A-Z0-9_]+)\b")
_NL5_FATAL = re.compile(r"\b(Fatal|Non-?fatal)\b", re.IGNORECASE)
_NL5_LINK = re.compile(r"\bLink\s+(\d+)")


def _spelling(name: str, version: str) -> str:
    """NVIDIA writes 'V1/V2' where the two driver generations spell a sub-code differently."""
    names = name.split("/")
    return names[0] if version.startswith("V1") or len(names) == 1 else names[1]


def decode_nvlink5(code: int, message: str | None) -> dict[str, Any] | None:
    """Decode an Xid 144-150 line's sub-code and error status with NVIDIA's "XID 144-150 Decode" sheet.

    Returns the decoded fields (None when the line carries no IntrInfo register).  ``immediate`` is
    None when the sub-code is known but its error status is not in NVIDIA's table.

    >>> d = decode_nvlink5(149, "NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000)")
    >>> d["subcode"], d["format"], d["link"], d["link_down_reason"], d["immediate"], d["investigatory"]
    ('NETIR_LINK_EVT', 'V1 (<R575)', 1, 33, 'RESET_GPU', 'INVESTIGATE_PEER_DEVICE')
    >>> decode_nvlink5(145, "RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000004 0x00000001 0x0 0x0)")["immediate"]
    'XID_154_EVAL'
    """
    if code not in range(144, 151) or not message:
        return None
    regs = _NL5_REGS.search(message)
    if regs is None:
        return None
    values = [int(v, 16) for v in re.split(r"[\s,]+", regs.group(1).strip())]
    intr, status = values[0], values[1] if len(values) > 1 else None
    printed = _NL5_NAME.match(message)
    fatal = _NL5_FATAL.search(message)
    link = _NL5_LINK.search(message)
    reason = (intr >> 20) & 0x3F
    out: dict[str, Any] = {
        "subcode": printed.group(1) if printed else None,
        "format": None,
        "intr_info": f"0x{intr:08x}",
        "error_status": None if status is None else f"0x{status:08x}",
        "link": int(link.group(1)) if link else None,
        "printed_fatal": fatal.group(1) if fatal else None,
        "immediate": None,
        "investigatory": None,
        "nvidia_severity": None,
        "hw_sw": None,
    }
    for version, mask, attr, bit2 in (("V1 (<R575)", 0x3FF, "v1", 10), ("V2 (>=R575)", 0x7F, "v2", 7)):
        cands = [r for r in NVLINK5_DECODE if r.xid == code and getattr(r, attr) == intr & mask]
        if not cands:
            continue
        out["format"] = version
        out["subcode"] = _spelling(cands[0].name, version)
        hits = [r for r in cands if r.reason == reason and (r.status is None or status in r.status)]
        if printed and len(hits) > 1:  # 150: two sub-codes share the mask; the printed name tells them apart
            hits = [r for r in hits if printed.group(1).replace("_", " ") in r.name.replace("_", " ")] or hits
        if not hits:
            break
        row = hits[0]
        out["subcode"] = _spelling(row.name, version)
        if row.name.startswith("NETIR_LINK"):
            out["link_down_reason"] = reason
        action2 = row.action2 and bool(intr >> bit2 & 1)
        out.update(
            immediate="RESET_GPU" if action2 else row.immediate,
            investigatory=row.investigatory,
            nvidia_severity=row.severity,
            hw_sw=row.hw_sw,
        )
        break
    return out


# --- one event or a group: severity and action --------------------------------------------------------

_RECOVERY = re.compile(r"\bto\s+0x[0-9a-fA-F]+\s*\(([^)]*)\)")


def _recovery_154(message: str | None) -> tuple[Severity, str]:
    """Xid 154 names the action for its companion Xids (the NVIDIA Xid catalog): None, Drain P2P,
    Drain and Reset, GPU Reset Required, Node Reboot Required."""
    m = _RECOVERY.search(message or "")
    new = m.group(1).lower() if m else (message or "").lower().rsplit(" to ", 1)[-1]
    if "reboot" in new:
        return C, f"reboot the node, as the driver asks ({_REBOOT})"
    if "drain and reset" in new:
        return C, f"drain the node's jobs, then reset the GPU ({_REBOOT})"
    if "reset" in new:
        return C, f"reset the GPU, as the driver asks ({_REBOOT})"
    if "drain p2p" in new:
        return W, "drain peer-to-peer (NVLink) traffic from this GPU"
    if m and "none" in new:
        return I, "no action needed: the driver's recovery action is None"
    return IMMEDIATE["XID_154"]


@dataclass(frozen=True)
class Assessment:
    """What one Xid event (or a group of the same Xid on one GPU) calls for."""

    code: int
    severity: Severity
    action: str
    immediate: str | None
    investigatory: str | None
    recurring: bool = False
    nvlink: dict[str, Any] | None = field(default=None, compare=False)


def assess(
    code: int,
    message: str | None = None,
    *,
    count: int = 1,
    repeat: int | None = None,
    solo: bool = False,
    with_remap: bool = False,
) -> Assessment:
    """Severity and action for an Xid, from its catalog entry and what the event and bundle say.

    ``count``: how often this Xid was logged on this GPU in the bundle; at ``repeat`` or more the
    investigatory action applies.  ``solo``: no other Xid on the node (Xid 45).  ``with_remap``: an Xid
    63 or 64 on the same GPU (Xid 48).

    >>> a = assess(48)
    >>> a.severity.value, a.action.split(" (")[0]
    ('critical', 'reset the GPU')
    >>> assess(64, count=3, repeat=3).action.endswith("open an AWS support case")
    True
    >>> assess(38).severity.value, assess(38, count=4, repeat=3).severity.value
    ('info', 'warning')
    """
    entry = xid_entry(code)
    severity, action = entry.severity, entry.action
    immediate, investigatory = entry.immediate, entry.investigatory
    nvlink = decode_nvlink5(code, message) if 144 <= code <= 150 else None
    if code == 154:
        severity, action = _recovery_154(message)
    elif code == 45:
        if solo:
            severity, action = W, "restart Fabric Manager (an Xid 45 alone on a node can mean it stopped)"
    elif code == 48 and with_remap:
        action = (
            f"drain the node's jobs, then reset the GPU ({_REBOOT}); the reset also activates the "
            "pending row remap; then follow the Xid 63/64 guidance"
        )
    elif code in _NL5_UNIFORM and (nvlink is None or nvlink["immediate"] is None):
        immediate, investigatory = _NL5_UNIFORM[code]
    elif nvlink is not None:
        if nvlink["immediate"] is not None:
            immediate, investigatory = nvlink["immediate"], nvlink["investigatory"]
            severity, action = IMMEDIATE[nvlink["immediate"]]
            tail = INVESTIGATORY.get(investigatory or "", "")
            if tail:
                action = f"{action}; if it recurs: {tail}"
        elif (nvlink["printed_fatal"] or "").lower() == "fatal":
            severity, base = IMMEDIATE["RESET_GPU"]
            action = f"{base}: the driver printed Fatal and the payload is not in NVIDIA's decode table"
    recurring = repeat is not None and count >= repeat
    if recurring and investigatory is not None and investigatory not in _NO_FOLLOW_UP and not entry.unused:
        tail = INVESTIGATORY.get(investigatory, "") or "investigate"
        head = action.split("; if it recurs:")[0]
        if severity == C and investigatory in _HARDWARE_INVESTIGATION:
            action = f"{head}; it recurred ({count}x on this GPU), so a reset or reboot does not clear it: {_REPLACE}"
        else:
            action = f"{head}; it recurred ({count}x on this GPU): {tail}"
        if severity == I:
            severity = W
    else:
        recurring = False
    return Assessment(code, severity, action, immediate, investigatory, recurring, nvlink)


def worst(assessments: Iterable[Assessment]) -> Assessment:
    """The assessment with the worst severity (the first of equals)."""
    best: Assessment | None = None
    for a in assessments:
        if best is None or a.severity.rank < best.severity.rank:
            best = a
    if best is None:
        raise ValueError("no assessments")
    return best
