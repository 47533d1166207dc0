"""Kernel-log faults of the signature catalog: disks, file systems, Lustre, NFS, memory, EFA, NICs.

Why it matters: these are the failures public node-health monitors have long watched the kernel log for
(Kubernetes node-problem-detector, gpud, NVSentinel; docs/sources.md#kernel-signatures) and that no GPU
check sees: NVMe I/O errors and controller resets, an ext4 journal abort that leaves the root file system
read-only, an XFS shutdown, a Lustre client losing its servers (ptlrpc network errors, LNet "timed out
tx", obd_ping -107, evictions), an NFS server not responding, EDAC memory errors, EFA admin-queue
timeouts, NIC watchdogs.  Every line class is one row of ``parsers/kernel_signatures.toml`` (pattern,
family, severity with its reason, route, sources); this rule judges the families whose ``rule`` is
``host.kernel.fault`` (panics, lockups, MCEs, hung tasks, OOM kills and AER errors keep their own rules).
One finding per node and family, at the worst severity of its signatures there, routed by the family
(Lustre and NFS to the storage owner, disks and memory to node hardware), with the first line of each
signature as evidence.
False positives: a burst during a storage fail-over recovers (the lines are still what happened); the
counts and times say how long it lasted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.kernel_time import KernelClock, stamp_sql
from parsers._kernel_catalog import BY_ID, FAMILIES, SIGNATURES, families_of_rule

RULE = RuleInfo(
    id="host.kernel.fault",
    node_local=True,
    title="Kernel-log faults of the signature catalog (disk, file system, Lustre, NFS, memory, EFA, NIC)",
    severity=Severity.CRITICAL,
    requires=("kernel_event",),
    passed="no kernel-log line of a catalogued fault family",
    route=Route("node-hardware", "hyperpod-node-debugger § F", "drain; see the family's route"),
    severity_reason=(
        "Each finding takes the worst severity of its family's signatures in the catalog "
        "(parsers/kernel_signatures.toml), each with its reason: critical where data or the device is lost "
        "(an I/O error, a journal abort, a read-only remount, an XFS shutdown, a Lustre eviction, an "
        "uncorrected memory error, an EFA admin queue that timed out), warning where I/O stalled or a "
        "server was lost for a while (an NVMe timeout, ptlrpc/LNet errors, NFS not responding, corrected "
        "memory errors). Sources: the node-health monitors' catalogs (Kubernetes node-problem-detector, "
        "gpud, NVIDIA NVSentinel's syslog monitor) and the Linux kernel documentation or Lustre code that prints "
        "each line (docs/sources.md#kernel-signatures)."
    ),
)

JUDGED = families_of_rule(RULE.id)
_SIGS = tuple(s.id for s in SIGNATURES if s.family in JUDGED and not s.claims_only)
_RANK = {"critical": 0, "warning": 1, "info": 2}
#: lines cited per finding: the first of each signature, at most this many
EVIDENCE_MAX = 4


def check(ctx: Context) -> Iterable[Finding]:
    marks = ", ".join("?" for _ in _SIGS)
    rows = ctx.rows(
        f"""
        SELECT bundle_id, node, source_file, line, signature, device, pci, message, {stamp_sql()} AS stamp
        FROM kernel_event WHERE signature IN ({marks}) ORDER BY bundle_id, node, line
        """,
        *_SIGS,
    )
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["bundle_id"], r["node"], BY_ID[r["signature"]].family), []).append(r)
    clock = KernelClock.load(ctx)
    for (bundle_id, node, family_id), events in groups.items():
        family = FAMILIES[family_id]
        sigs = list(dict.fromkeys(e["signature"] for e in events))
        worst = min((BY_ID[s].severity for s in sigs), key=_RANK.__getitem__)
        devices = sorted({d for e in events for d in (e["device"], e["pci"]) if d})
        first, last = clock.at(bundle_id, events[0]["stamp"]), clock.at(bundle_id, events[-1]["stamp"])
        cited = [next(e for e in events if e["signature"] == s) for s in sigs][:EVIDENCE_MAX]
        worst_sig = next(s for s in sigs if BY_ID[s].severity == worst)
        when = (
            f" at {first.shown}"
            if first.shown and last.shown in (None, first.shown)
            else (f" between {first.shown} and {last.shown}" if first.shown else "")
        )
        yield RULE.finding(
            severity=Severity(worst),
            node=node,
            message=(
                f"{node}: {family.title.lower()}: {len(events)} line(s) of {', '.join(sigs)}"
                + (f" on {', '.join(devices[:4])}" if devices else "")
                + f"{when}: {BY_ID[worst_sig].reason}"
            ),
            params={
                "family": family_id,
                "signatures": sigs,
                "count": len(events),
                "devices": devices,
                "first_seen": first.seen,
                "last_seen": last.seen,
                **first.params(),
            },
            route=Route(family.owner, family.target, family.action),
            evidence=[
                ctx.evidence(e["source_file"], e["line"]) for e in sorted(cited, key=lambda e: e["line"])
            ],
            bundle_id=bundle_id,
            key=(family_id,),
        )
