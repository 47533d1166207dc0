"""GPU pairs that talk over PCIe where NVLink is expected (``nvidia-smi topo -m``).

What it detects: a GPU<->GPU cell that is a PCIe path (PIX, PXB, PHB, NODE, SYS or the old SOC) while
NVLink (NV#) is expected for that pair.  NVLink is expected when (a) the pair is NV# on most peer
nodes of the same instance type in the bundle set, (b) one of its GPUs has fewer NVLink peers than
most GPUs of the same node (one GPU cut off an NVSwitch box shows 0 NVLink peers where the others show
7), or (c) the instance type's sku.toml entry lists NVLinks per GPU (p4d/p5/p5e/p5en/p6: NVSwitch, every
pair NV#).  One finding per node, listing the pairs and naming the GPU(s) common to them.
Why it matters: peer traffic that should ride NVLink goes over PCIe and the host bridge, an order of
magnitude slower; intra-node all-reduce drags the whole job (NCCL diagnose script;
node-debugger issue catalog § 2.4: "should show NV links, not PHB"; NCCL debugging guide § 14;
docs/sources.md#gpu-topology).
False positives: a box built without NVLink (PCIe-only P40/T4/L4 cards) is not a finding: no peer,
sibling GPU or SKU entry expects NV#.  Partial-mesh designs (DGX-1 hybrid cube-mesh, NVLink bridges
on PCIe cards) give every GPU the same number of NVLink peers, so (b) stays quiet on them.  Nodes
whose instance type is unknown are not compared with peers.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from analyzer.judge.engine import Context, RuleInfo
from analyzer.judge.findings import Finding, Route, Severity
from analyzer.judge.peers import NODE_TYPE_SQL

RULE = RuleInfo(
    id="gpu.topo.pcie_path",
    title="GPU pair on a PCIe path where NVLink is expected",
    severity=Severity.WARNING,
    requires=("topo_link.link_class",),
    passed="GPU pairs use NVLink wherever NVLink is expected",
    route=Route(
        "nccl-network",
        "hyperpod-nccl debugging-guide § 14",
        "check NVLink and Fabric Manager on the node; drain and replace if the NVLinks are down",
    ),
    severity_reason=(
        "GPU pairs that should use NVLink talk over PCIe, an order of magnitude slower, so intra-node "
        "collectives drag while results stay correct; check NVLink and Fabric Manager soon. Source: HyperPod "
        "node-debugger skill and NCCL debugging guide (awslabs/agent-plugins: topo -m should show NV links, "
        "not PHB)."
    ),
)

_PCIE = ("pcie_switch", "pcie_host", "numa", "cross_socket")
_GPU = re.compile(r"^GPU(\d+)$")


def check(ctx: Context) -> Iterable[Finding]:
    majority = ctx.threshold(RULE, "peer_nvlink_share")
    nodes: dict[tuple[str, str], dict[tuple[int, int], dict]] = defaultdict(dict)
    for r in ctx.rows(
        "SELECT t.bundle_id, t.node, t.device, t.peer, t.link, t.link_class, t.source_file, t.line "
        "FROM topo_link t WHERE t.device LIKE 'GPU%' AND t.peer LIKE 'GPU%' AND t.device <> t.peer "
        "ORDER BY t.bundle_id, t.line"
    ):
        a, b = _GPU.match(r["device"]), _GPU.match(r["peer"])
        if not (a and b):
            continue
        x, y = sorted((int(a[1]), int(b[1])))
        pair = (x, y)
        old = nodes[(r["bundle_id"], r["node"])].get(pair)
        if old is None or (old["link_class"] == "nvlink" and r["link_class"] in _PCIE):
            nodes[(r["bundle_id"], r["node"])][pair] = r  # the worse direction wins
    types = {(t["bundle_id"], t["node"]): t["instance_type"] for t in ctx.rows(NODE_TYPE_SQL)}
    # per instance type and GPU pair: (nodes that list the pair, of which over NVLink), counted once
    listed: dict[tuple[str, tuple[int, int]], list[int]] = defaultdict(lambda: [0, 0])
    same_type: Counter[str] = Counter()
    for key, pairs in nodes.items():
        itype = types.get(key, "unknown")
        same_type[itype] += 1
        for pair, r in pairs.items():
            tally = listed[(itype, pair)]
            tally[0] += 1
            tally[1] += r["link_class"] == "nvlink"
    for (bundle_id, node), pairs in sorted(nodes.items(), key=lambda x: x[0][1]):
        itype = types.get((bundle_id, node), "unknown")
        n_peers = same_type[itype] - 1 if itype != "unknown" else 0
        nv_peers = Counter({g: 0 for pair in pairs for g in pair})
        nv_peers.update(g for pair, r in pairs.items() if r["link_class"] == "nvlink" for g in pair)
        counts = Counter(nv_peers.values())
        usual = max(counts, key=lambda n: (counts[n], n))
        sku = ctx.settings.instance(itype) or {}
        bad = []
        for pair, r in sorted(pairs.items()):
            if r["link_class"] not in _PCIE:
                continue
            # the peers' view of this pair: this node's own (PCIe) entry taken out of the tally
            with_pair, over_nvlink = listed[(itype, pair)] if n_peers else (1, 0)
            seen_n = with_pair - 1
            why = (
                "peers" if seen_n and over_nvlink / seen_n > majority
                else "node" if usual > 0 and min(nv_peers[pair[0]], nv_peers[pair[1]]) < usual
                else "sku" if (sku.get("nvlinks_per_gpu") or 0) > 0
                else None
            )  # fmt: skip
            if why:
                bad.append((pair, r, why))
        if not bad:
            continue
        common = sorted(set.intersection(*(set(p) for p, _, _ in bad)))
        gpu = common[0] if len(common) == 1 and len(bad) > 1 else None
        shown = [f"GPU{a}-GPU{b} {r['link']}" for (a, b), r, _ in bad]
        reasons = sorted({w for _, _, w in bad})
        yield RULE.finding(
            node=node,
            gpu=gpu,
            message=f"{node} ({itype}): {len(bad)} GPU pair(s) connect over PCIe where NVLink is expected "
            f"({', '.join(reasons)}): {', '.join(shown[:8])}{' ...' if len(shown) > 8 else ''}"
            + (f"; GPU {gpu} is in every one" if gpu is not None else ""),
            params={"instance_type": itype, "pairs": shown, "count": len(bad), "expected_from": reasons,
                    "common_gpu": gpu, "usual_nvlink_peers": usual, "peer_nodes": n_peers},
            evidence=list(dict.fromkeys(ctx.evidence(r["source_file"], r["line"]) for _, r, _ in bad))[:8],
            bundle_id=bundle_id,
        )  # fmt: skip
