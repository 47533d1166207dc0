"""Xid events in the kernel log: one finding per node, GPU and Xid code (a burst is one finding).

Why it matters: an Xid is the NVIDIA driver reporting a GPU error.  Severity and action follow
NVIDIA's Xid catalog (``analyzer/judge/xid_catalog.py``): the immediate resolution bucket sets the severity
(RESET_GPU / RESTART_BM / CHECK_MECHANICALS critical, RESTART_APP / CONTACT_SUPPORT warning, IGNORE and
codes unused on Ampere+ info) and the first action (a GPU reset is a node reboot on HyperPod, which its
auto-recovery does).  The investigatory bucket applies when the same Xid recurs on the same GPU
(``repeat_escalation`` times in the bundle): info becomes warning, and a reset-class Xid whose
investigation is CONTACT_SUPPORT (or the Xid 48 RMA flow) becomes "replace the node".  Xid 144-150
lines are decoded (sub-code, IntrInfo, error status, link) with NVIDIA's "XID 144-150 Decode" table,
and the decoded row sets the buckets; the decoded fields are in ``params["nvlink"]``.  Xid 154 is rated
by the recovery action it names; Xid 48 with 63/64 on the same GPU is "drain and reset"; Xid 45 alone
on a node is "restart Fabric Manager".  An Xid the driver says was "caused by previous Xid N" (45
after 149/145, ...) is folded into the finding of its cause, so one fault gives one finding.  When the
cause itself is not in the log (the log was cut), the finding names the cause and says so, at warning
at most.  Xid 79 / "fallen off the bus" is left to ``gpu.xid.fallen_off_bus``.  A code not in the
catalog is a warning that says so.  An Xid line whose device the log does not give as an address (a
redacted ``Xid (PCI:...)``, ``Xid (GPU3)``) is still judged, on the node: the finding says the GPU is
unknown, or names it by the driver's number (``GPU3``, which need not be nvidia-smi's index).  False
positives: application-class Xids (13, 31, 43, 45) usually
come from the job's own code; they are info unless they recur on one GPU.  The same event found in two
logs of one bundle (a bug report's dmesg, journal and /var/log/messages) counts once
(``analyzer.judge.signals.kernel_events``); events of a log of an earlier boot (``journalctl -b -1``) are
a finding of their own that says "in a previous boot (boot -1)", with ``params["boot"]``, at warning for
a hardware Xid (48, 79, 94, 95, CONTACT_SUPPORT investigations) and info for the others: the reboot
since has done the reset or restart their immediate action asks for.
Reference: NVIDIA Xid catalog, docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html
(docs/sources.md#xid-catalog).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import GPU_BY_PCI
from analyzer.judge.signals.kernel_events import (
    HARDWARE_INVESTIGATION,
    HARDWARE_XIDS,
    boot_words,
    columns_sql,
    distinct,
    previous_boot,
    previous_boot_action,
    previous_boot_severity,
)
from analyzer.judge.signals.kernel_time import KernelClock, span, stamp_sql
from analyzer.judge.xid_catalog import assess, worst, xid_entry

RULE = RuleInfo(
    id="gpu.xid",
    node_local=True,
    title="Xid errors in the kernel log",
    severity=Severity.CRITICAL,
    version=3,  # 3: an event in several logs counts once; events of earlier boots are findings of their own
    requires=("kernel_event",),
    passed="no Xid in the kernel log (Xid 79 is judged apart)",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "follow the Xid catalog action of each code"),
    severity_reason=(
        "Critical for an Xid whose immediate action is a GPU reset or machine restart (the GPU cannot run "
        "work until then); warning for restart-the-application and contact-support codes, info for IGNORE "
        "and codes unused on this generation, one step up when the same Xid recurs on a GPU, and at most "
        "warning when the Xid that caused it is missing from the log. Logged only in an earlier boot: "
        "warning for an Xid that points at the hardware (48, 79, 94, 95, or CONTACT_SUPPORT / Xid 48 "
        "investigations), info for the others, since the reboot since did the reset or restart the "
        "immediate action asks for (ours). Source: NVIDIA Xid catalog "
        "(docs.nvidia.com/deploy/xid-errors), its immediate and investigatory resolution buckets."
    ),
)


def _occurrences(code: int, events: list[dict[str, Any]]) -> int:
    """How often the Xid recurred on this GPU: its lines, or for Xid 144-150 (one fault prints a line
    per link) its lines on the busiest link (the NVIDIA Xid catalog counts NVLink errors "on the same
    link")."""
    if not 144 <= code <= 150:
        return len(events)
    per_link: dict[Any, int] = {}
    for e in events:
        d = assess(code, e["message"]).nvlink
        link = d["link"] if d else None
        per_link[link] = per_link.get(link, 0) + 1
    return max(per_link.values(), default=0)


def _decoded(events: list[dict[str, Any]], code: int, context: dict[str, Any]) -> list[dict[str, Any]]:
    """The distinct Xid 144-150 decodes of a group, one per sub-code row, with the links (and their
    IntrInfo values) it hit."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in events:
        d = assess(code, e["message"], **context).nvlink
        if d is None:
            continue
        row = {k: v for k, v in d.items() if k not in ("link", "intr_info")}
        item = out.setdefault(tuple(sorted(row.items())), {**row, "links": [], "intr_info": []})
        for key, value in (("links", d["link"]), ("intr_info", d["intr_info"])):
            if value is not None and value not in item[key]:
                item[key].append(value)
    return list(out.values())


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        f"""
        WITH g AS ({GPU_BY_PCI})
        SELECT {columns_sql("e")}, e.caused_by_xid, g.gpu, {stamp_sql("e")} AS stamp
        FROM kernel_event e LEFT JOIN g ON g.bundle_id = e.bundle_id AND g.pci = e.pci
        WHERE e.event_type = 'xid'
        ORDER BY e.bundle_id, e.node, e.pci NULLS LAST, e.gpu_index NULLS LAST, e.line, e.source_file
        """
    )
    rows = distinct(rows)
    clock = KernelClock.load(ctx)
    for r in rows:
        r["at"] = clock.at(r["bundle_id"], r["stamp"])
    repeat = ctx.threshold(RULE, "repeat_escalation")
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    # a GPU is its address, or the driver's number when the log gives no address (both None: unknown)
    present = {(r["bundle_id"], r["node"], _device(r), r["xid"]) for r in rows}
    on_node: dict[tuple[Any, ...], set[int]] = {}
    for r in rows:
        on_node.setdefault((r["bundle_id"], r["node"]), set()).add(r["xid"])
    for r in rows:
        if r["xid"] == 79:
            continue  # gpu.xid.fallen_off_bus reports it
        cause = r["caused_by_xid"]
        # fold into the cause (79 stays apart: gpu.xid.fallen_off_bus reports the cause)
        code = cause if cause not in (None, r["xid"], 79) else r["xid"]
        earlier = r["boot"] is not None and r["boot"] < 0  # logged before the node's last reboot
        key = (r["bundle_id"], r["node"], _device(r), code, earlier)
        g = groups.setdefault(key, {"row": r, "events": [], "folded": {}})
        if code == r["xid"]:
            g["events"].append(r)
        else:
            g["folded"].setdefault(r["xid"], []).append(r)
    for (bundle_id, node, device, code, earlier), g in groups.items():
        entry = xid_entry(code)
        events, folded = g["events"], g["folded"]
        pci, index = g["row"]["pci"], g["row"]["gpu_index"] if g["row"]["pci"] is None else None
        logged = (bundle_id, node, device, code) in present
        context = {
            "count": _occurrences(code, events),
            "repeat": repeat,
            "solo": on_node[(bundle_id, node)] == {code},
            "with_remap": any((bundle_id, node, device, x) in present for x in (63, 64)),
        }
        judged = worst(assess(code, e["message"], **context) for e in events) if events else assess(code)
        severity = judged.severity
        if not logged and severity == Severity.CRITICAL:
            severity = Severity.WARNING  # the cause's own line is missing: not enough to drain on
        every = sorted(
            events + [e for evs in folded.values() for e in evs], key=lambda e: (e["source_file"], e["line"])
        )
        boots = previous_boot(every) if earlier else []
        action = judged.action
        if boots:
            hardware = code in HARDWARE_XIDS or judged.investigatory in HARDWARE_INVESTIGATION
            severity = previous_boot_severity(severity, hardware)
            action = previous_boot_action(action)
        first, last = every[0], every[-1]
        gpu = g["row"]["gpu"]
        where = gpu_where(node, gpu, pci, index)
        times = span(first["at"], last["at"])
        folded_text = ", ".join(f"Xid {x} {len(evs)}x" for x, evs in sorted(folded.items()))
        if logged:
            message = f"{where} logged Xid {code} ({entry.meaning}) {len(events)}x"
        else:
            message = f"{where}: Xid {code} ({entry.meaning}) is named as the cause but is not in the log"
        nvlink = _decoded(events, code, context)
        for d in nvlink:
            links = ", ".join(str(x) for x in d["links"]) or "?"
            message += f"; sub-code {d['subcode']} ({d['nvidia_severity'] or 'not in the decode table'}, link {links})"
        if folded_text:
            message += f"; folded: {folded_text} caused by it"
        if boots:
            message += f" {boot_words(boots)}"
        if times:
            message += f" at {times}"
        evidence = [ctx.evidence(first["source_file"], first["line"])]
        if last["line"] != first["line"]:
            evidence.append(ctx.evidence(last["source_file"], last["line"]))
        yield RULE.finding(
            severity=severity,
            node=node,
            gpu=gpu,
            message=message,
            params={
                "xid": code,
                "pci": pci,
                **({"gpu_index": index} if index is not None else {}),
                "count": len(events),
                "cause_logged": logged,
                "folded": {str(x): len(evs) for x, evs in sorted(folded.items())},
                "first_seen": first["at"].seen,
                "last_seen": last["at"].seen,
                **first["at"].params(),
                "class": entry.cause_class,
                "meaning": entry.meaning,
                "immediate": judged.immediate,
                "investigatory": judged.investigatory,
                "recurring": judged.recurring,
                "catalog_source": entry.source,
                **({"nvlink": nvlink} if nvlink else {}),
                **({"boot": boots[-1], "boots": boots} if boots else {}),
            },
            route=Route(RULE.route.owner, RULE.route.target, action),
            evidence=evidence,
            bundle_id=bundle_id,
            key=((code, pci) if index is None else (code, pci, index))
            + (("previous boot",) if boots else ()),
        )


def _device(r: dict[str, Any]) -> tuple[str | None, int | None]:
    """The GPU an Xid event is on: its PCI address, else the driver's number (None, None: unknown)."""
    return (r["pci"], None) if r["pci"] is not None else (None, r["gpu_index"])


def gpu_where(node: str | None, gpu: int | None, pci: str | None, index: int | None) -> str:
    """How a finding names the GPU of a kernel event: ``node-1 GPU 3 (0000:9b:00.0)``, ``node-1 a GPU
    (0000:9b:00.0)``, and when the log gives no address ``node-1 GPU3 as the driver numbers it (PCI
    address not in the log)`` or ``node-1 an unknown GPU (PCI address not in the log)``.

    >>> gpu_where("n1", None, None, 3), gpu_where("n1", None, None, None)
    ('n1 GPU3 as the driver numbers it (PCI address not in the log)', 'n1 an unknown GPU (PCI address not in the log)')
    """
    if pci is None:
        name = f"GPU{index} as the driver numbers it" if index is not None else "an unknown GPU"
        return f"{node} {name} (PCI address not in the log)"
    return f"{node} {'GPU ' + str(gpu) if gpu is not None else 'a GPU'} ({pci})"
