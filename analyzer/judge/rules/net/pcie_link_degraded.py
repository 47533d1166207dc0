"""A network device's PCIe link trained below its own maximum: fewer lanes, or a lower speed.

Why it matters: an EFA or InfiniBand adapter moves every byte of inter-node traffic over its PCIe link;
a x16 card that trained at x8, or a Gen5 card at Gen3, caps the node's network bandwidth below what the
fabric gives, and the node becomes the slow rank of every collective (mfu-debugger node diagnostics and
failure patterns: docs/sources.md#pcie).  Unlike a GPU, a network adapter does not lower its link speed
at idle, so both the width and the speed are judged against the device's own maximum: ``lspci -vv``'s
``LnkSta`` (the link as trained) against its ``LnkCap`` (read from the collector's lspci, or the
nvidia-bug-report's ``lspci -nnDvvvxxxx``).  Network devices are PCI class 02 (Ethernet, InfiniBand);
a link of x0 or an unknown speed (nothing trained, or nothing read) is not judged here.
False positives: a card in a slot that is narrower or of an older generation than the card (the
platform's limit, not a fault; the slot's own maximum is not in the output).
"""

from __future__ import annotations

from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity

RULE = RuleInfo(
    id="net.pcie.link_degraded",
    node_local=True,
    title="Network adapter PCIe link below its maximum",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("pci_device.link_width",),
    passed="every network adapter's PCIe link at full width and speed",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "reboot; reseat or replace if it persists"),
    severity_reason=(
        "A network adapter whose PCIe link trained narrower or slower than its maximum caps the node's "
        "inter-node bandwidth while every transfer still works: the node slows every collective. Source: "
        "HyperPod mfu-debugger node diagnostics and failure patterns (awslabs/agent-plugins: PCIe link "
        "width and generation below their maximum)."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    rows = ctx.rows(
        """SELECT bundle_id, node, address, class_code, class_name, description, link_speed_gts, link_width,
                  link_speed_max_gts, link_width_max, source_file, link_line
           FROM pci_device
           WHERE (class_code LIKE '02%' OR lower(class_name) IN ('ethernet controller', 'infiniband controller',
                                                                 'network controller'))
             AND link_width > 0 AND link_width_max IS NOT NULL
             AND (link_width < link_width_max
                  OR (link_speed_gts IS NOT NULL AND link_speed_max_gts IS NOT NULL
                      AND link_speed_gts < link_speed_max_gts))
           ORDER BY node, address"""
    )
    for r in rows:
        now = f"{_speed(r['link_speed_gts'])} x{r['link_width']}"
        top = f"{_speed(r['link_speed_max_gts'])} x{r['link_width_max']}"
        name = r["description"] or r["class_name"] or "network device"
        yield RULE.finding(
            node=r["node"],
            message=f"{r['node']} {name} ({r['address']}) PCIe link is {now}, its maximum is {top}",
            params={
                "pci": r["address"],
                "device": name,
                "width_current": r["link_width"],
                "width_max": r["link_width_max"],
                "speed_gts": r["link_speed_gts"],
                "speed_max_gts": r["link_speed_max_gts"],
            },
            evidence=[ctx.evidence(r["source_file"], r["link_line"])],
            bundle_id=r["bundle_id"],
            key=(r["address"],),
        )


def _speed(gts: float | None) -> str:
    return f"{gts:g}GT/s" if gts is not None else "speed unknown"
