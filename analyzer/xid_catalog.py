"""The Xid catalog: meaning, cause class, severity and action per code.

Source: ../shared/rules-facts.md § 2 (NVIDIA Xid catalog for Ampere and later, with the cause classes
carried over by Modal's GPU-health page and the AWS HyperPod skills' view).  Severity is ours.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.findings import Severity


@dataclass(frozen=True)
class XidEntry:
    code: int
    meaning: str
    cause_class: str
    severity: Severity
    action: str


C, W, I = Severity.CRITICAL, Severity.WARNING, Severity.INFO  # noqa: E741 - short names keep the table readable
_DRAIN = "drain and replace"
_RESET = "reset the GPU; replace if it recurs"
_APP = "check the application first; escalate if it recurs on this node"

_ROWS: list[tuple[tuple[int, ...], str, str, Severity, str]] = [
    ((8,), "GPU stopped processing", "DRV/APP/BUS/THERM", W, "restart the job; watch for recurrence"),
    (
        (11, 25),
        "invalid push buffer stream",
        "DRV/SYSMEM/BUS/FB",
        W,
        "restart the job; check the application",
    ),
    ((13,), "graphics engine exception", "APP (rarely HW)", I, _APP),
    ((14,), "fake / injected error", "-", I, "ignore"),
    ((31,), "GPU memory page fault", "APP (HW if persistent)", I, _APP),
    ((32,), "invalid or corrupted push buffer (PBDMA)", "BUS/DRV", W, "restart; often PCIe quality"),
    ((37,), "driver firmware error", "DRV", I, "ignore unless it recurs"),
    ((38,), "driver firmware error (FECS watchdog)", "DRV", W, "contact support if it recurs"),
    ((39, 40, 41), "copy engine exception", "HW/DRV", W, "restart the job; contact support if it recurs"),
    ((43,), "GPU stopped processing (reset-channel verify)", "APP", I, _APP),
    ((44,), "graphics engine fault during context switch", "DRV", W, "contact support if it recurs"),
    ((45,), "preemptive cleanup after another error", "DRV/APP", I, "follow the Xid that caused it"),
    ((46,), "GPU stopped processing (timeout)", "DRV", C, _RESET),
    ((48,), "double-bit ECC error", "HW", C, _DRAIN),
    ((54,), "auxiliary power not connected", "HW", C, _DRAIN),
    (
        (56, 57),
        "unused on Ampere+ (legacy display/memory error)",
        "legacy",
        W,
        "unexpected code: contact support",
    ),
    ((60,), "video processor exception", "DRV", W, "restart the job"),
    ((61,), "micro-controller breakpoint (legacy; treat like 62)", "legacy", C, _DRAIN),
    ((62,), "internal micro-controller halt", "HW/DRV/THERM", C, _DRAIN),
    ((63,), "row remap / page retirement recorded", "HW/DRV/FB", I, "watch the rate; replace if it climbs"),
    ((64,), "row remap / page retirement failure", "HW/DRV", C, _DRAIN),
    ((66, 67), "illegal access by driver", "DRV/APP", I, "investigate software"),
    ((68,), "NVDEC0 exception", "HW/DRV", W, "restart the job"),
    ((69,), "graphics engine class error", "HW/DRV", W, "restart; critical if it repeats after reboot"),
    ((70, 71, 72, 75, 76, 77), "copy engine error", "HW/DRV", W, "contact support if it recurs"),
    ((74,), "NVLink error", "HW/DRV/BUS", C, _DRAIN),
    ((78,), "vGPU start error", "DRV", W, "update software"),
    ((79,), "GPU has fallen off the bus", "HW/BUS/THERM", C, "drain now and replace"),
    ((80,), "corrupted data sent to GPU", "HW/DRV/BUS", W, "restart the job; check PCIe"),
    ((82, 83, 84, 85, 86, 88, 89), "NVJPG/NVDEC/OFA engine error", "HW/DRV", W, "restart the job"),
    ((92,), "high single-bit ECC error rate", "HW/DRV", W, "monitor and plan replacement"),
    ((93,), "InfoROM wear-limit violation", "DRV/APP", I, "ignore unless it recurs"),
    ((94,), "contained memory (ECC) error", "HW/DRV/FB", W, "restart the app; reset the GPU when convenient"),
    ((95,), "uncontained memory error", "HW/DRV/FB", C, _DRAIN),
    (tuple(range(96, 106)), "NVDEC/NVJPG engine error", "HW/DRV", W, "restart the job"),
    ((109,), "context-switch timeout", "all", C, _RESET),
    ((110,), "security fault", "HW", C, _RESET),
    ((119,), "GSP RPC timeout", "HW/DRV", C, _RESET),
    ((120,), "GSP error", "HW/DRV", C, _RESET),
    ((121,), "C2C corrected error", "HW/BUS", I, "reset at a maintenance window"),
    ((122, 123, 124, 125), "unused on Ampere+ (legacy SPI/InfoROM failure)", "legacy", W, "contact support"),
    (tuple(range(126, 136)), "copy engine error (Blackwell)", "HW/DRV", W, "contact support if it recurs"),
    ((136,), "link training failed", "HW/BUS", C, _RESET),
    ((137,), "NVLink privilege error", "APP", I, "check the application"),
    ((139,), "OFA1 error", "HW/DRV", W, "restart the job"),
    ((140,), "uncorrectable ECC that escaped remapping", "HW/DRV/FB", C, _DRAIN),
    ((141,), "CUDA fast-path error", "-", I, "ignore unless it recurs"),
    ((143,), "GPU initialization error", "HW/DRV/FB", C, _RESET),
    (tuple(range(144, 151)), "NVLink5 error", "HW", W, "decode the subcode; reset if fatal"),
    ((151,), "key rotation error", "-", W, "restart the VM"),
    ((154,), "GPU recovery action changed", "-", W, "follow the recovery action it names"),
    ((155,), "NVLink software-defined link down", "-", W, "investigate software"),
    ((156, 157), "resource retirement event / failure", "-", W, "reset the GPU"),
    ((158,), "GPU fatal timeout", "-", C, _RESET),
    ((159,), "CHI non-data error", "-", W, "check UVM"),
    ((160, 161), "channel retirement event / failure", "-", I, "investigate software"),
    ((162, 163, 164), "power-smoothing event", "-", I, "none"),
    ((165,), "power-smoothing exhausted", "-", W, "replace the GPU if swings are unacceptable"),
    ((167,), "PCIe fatal timeout", "HW/BUS", C, _DRAIN),
    ((168,), "reduced GPU memory capacity", "HW", W, "enable ECC"),
    ((169,), "SEC2 micro-controller halt", "HW/DRV", C, _DRAIN),
    ((171, 172), "uncorrectable DRAM / SRAM error", "HW", C, _DRAIN),
]

CATALOG: dict[int, XidEntry] = {
    code: XidEntry(code, meaning, cls, sev, action)
    for codes, meaning, cls, sev, action in _ROWS
    for code in codes
}


def xid_entry(code: int) -> XidEntry:
    """The catalog entry, or a warning entry for a code the catalog does not know.

    >>> xid_entry(79).severity.value, xid_entry(13).severity.value, xid_entry(999).meaning
    ('critical', 'info', 'not in the catalog (unexpected on this GPU generation)')
    """
    return CATALOG.get(
        code,
        XidEntry(code, "not in the catalog (unexpected on this GPU generation)", "-", W, "contact support"),
    )


#: Xid 154 names the recovery action the driver wants; these need a reset or reboot (NV-XID).
_RECOVERY_CRITICAL = ("reset required", "reboot required", "drain and reset")


def event_severity(code: int, message: str | None) -> Severity:
    """The catalog severity, refined by what one event's text says (Xid 154 carries its action).

    >>> event_severity(154, "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)").value
    'critical'
    >>> event_severity(154, "GPU recovery action changed from 0x0 (None) to 0x0 (None)").value
    'info'
    """
    entry = xid_entry(code)
    if code == 154 and message:
        text = message.lower().rsplit(" to ", 1)[-1]  # the new action, not the old one
        if any(k in text for k in _RECOVERY_CRITICAL):
            return C
        if "drain p2p" in text:
            return W
        return I
    return entry.severity
