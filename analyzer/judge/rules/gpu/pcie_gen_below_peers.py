"""A GPU's PCIe link runs a lower generation than most GPUs of the same model in the same power state.

Why it matters: a link that trained at Gen3 instead of Gen5 has a quarter of the bandwidth (mfu-debugger node
diagnostics: "gen below max"; docs/sources.md#pcie).  But GPUs lower their link generation at idle by design,
so a GPU is never judged against its own maximum: only against peers, i.e. GPUs of the same product name at
the same performance state (P0, P8, ...) across the bundle set, when there are enough of them and a strict
majority shares one generation.  Read from ``-q``, else the CSV (``pcie.link.gen.current``).  A GPU
in a smaller group, or in one without a majority, has nothing to be judged against: its node is not
examined by this rule ("too few peers"), unless another of its GPUs is found below its peers.
False positives: a GPU switching P-state between the snapshot of two nodes; the pstate is shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo, too_few_peers
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.signals.gpus import GpuState, gpu_states

RULE = RuleInfo(
    id="gpu.pcie.gen_below_peers",
    title="GPU PCIe generation below its peers",
    severity=Severity.WARNING,
    requires=("node",),
    requires_any=("gpu.pcie_gen_current", "gpu_query.pcie_gen_current"),
    peers="min_peers",
    passed="every GPU PCIe link at its peers' generation",
    route=Route("node-hardware", "hyperpod-node-debugger § G", "reboot; reseat or replace if it persists"),
    severity_reason=(
        "A link that trained at a lower generation than its peers in the same power state loses bandwidth "
        "but not correctness. Source: HyperPod mfu-debugger node diagnostics (awslabs/agent-plugins: "
        "generation below max); ours: judged against peers, since GPUs lower the generation at idle by "
        "design."
    ),
)


def check(ctx: Context) -> Iterable[Finding]:
    min_peers = ctx.threshold(RULE, "min_peers")
    groups: dict[tuple[str | None, str | None], list[GpuState]] = {}
    for s in gpu_states(ctx):
        if s.get("pcie_gen_current") is not None:
            groups.setdefault((s.get("name"), s.get("pstate")), []).append(s)
    unjudged: dict[str, set[str]] = {}  # node -> why one of its GPUs was not judged
    flagged: set[str] = set()
    for (name, pstate), members in groups.items():
        label = f"{name or 'GPUs'} at {pstate or 'unknown pstate'}"
        if len(members) < min_peers:
            for s in members:
                unjudged.setdefault(s.node, set()).add(too_few_peers(len(members), min_peers, "GPUs", label))
            continue
        gen, n = Counter(s.get("pcie_gen_current") for s in members).most_common(1)[0]
        if n * 2 <= len(members):  # no majority: nothing to judge against
            for s in members:
                unjudged.setdefault(s.node, set()).add(f"no majority generation among {len(members)} {label}")
            continue
        for s in members:
            cur = s.get("pcie_gen_current")
            if cur >= gen:
                continue
            flagged.add(s.node)
            yield RULE.finding(
                node=s.node,
                gpu=s.index,
                message=(
                    f"{s.label} PCIe link runs gen {cur} while {n} of {len(members)} {name or 'GPUs'} "
                    f"at {pstate or 'unknown pstate'} in this bundle set run gen {gen}"
                ),
                params={
                    "pci": s.pci,
                    "gen_current": cur,
                    "gen_max": s.get("pcie_gen_max"),
                    "peer_gen": gen,
                    "peers_at_gen": n,
                    "peers": len(members),
                    "pstate": pstate,
                    "name": name,
                },
                evidence=s.evidence(ctx, "pcie"),
                bundle_id=s.bundle_id,
                key=(s.pci,),
            )
    for node, why in unjudged.items():
        if node not in flagged:
            for reason in why:
                ctx.not_judged([node], reason)
