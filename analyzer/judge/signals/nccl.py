"""Shared reading of nccl-tests runs for the NCCL rules: one ``Run`` per parsed log.

A run is one test of an nccl-tests file (``bundle_id`` + ``source_file`` + ``run``; a log may hold several
tests, e.g. all_reduce_perf then all_gather_perf): in a node bundle (``node`` set) or in a
cluster bundle's ``extra/`` (``node`` NULL).  Its hosts come from the rank lines and are matched back to
node bundles with :mod:`analyzer.judge.hosts`; an unmatched host keeps its printed name.  The large-message
busbw is the highest busbw (out-of-place, else in-place) over sizes >= ``min_bytes``; a run that never
reached that size is judged at its largest size and says so (``reached_min_bytes`` False).  The
``# Avg bus bandwidth`` line is never used: it averages tiny messages in.

The localisation of slow pairs (:func:`localise`, :func:`localisations`) lives here too: nccl.pair.slow
reports it, and the pair rules (nccl.busbw.below_expected) leave out the pairs it explains by a node, so
one bad node is one finding, not one per pair.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from analyzer.judge.engine import Context
from analyzer.judge.findings import Evidence
from analyzer.judge.hosts import HostIndex


@dataclass
class Run:
    bundle_id: str
    source_file: str
    node: str | None  # the bundle's node; None for a cluster extra/
    line: int
    collective: str | None
    transport: str | None
    hosts: list[str]
    members: list[str]  # node names (matched) or host names (unmatched), in rank order
    instance_type: str | None
    run: int = 1  # the test's number in its file (nccl_run.run): a log may hold several tests
    busbw: float | None = None
    size_bytes: int | None = None
    busbw_line: int | None = None
    reached_min_bytes: bool = False

    @property
    def scope(self) -> str | None:
        """'single_node', 'multi_node', or None when the log has no rank lines."""
        if not self.hosts:
            return None
        return "single_node" if len(self.hosts) == 1 else "multi_node"

    @property
    def label(self) -> str:
        return self.node or ",".join(self.members) or self.source_file


@dataclass
class Pair:
    members: tuple[str, str]
    busbw: float
    runs: list[Run] = field(default_factory=list)

    @property
    def run(self) -> Run:
        """The run that gave the pair its busbw (its best run when the pair was re-run)."""
        return max(self.runs, key=lambda r: r.busbw or 0.0)


PairKey = tuple[str, str]
#: nccl.pair.slow's thresholds that :func:`localise` reads.
LOCALISE_KEYS = ("below_median_fraction", "node_share", "node_min_slow_pairs", "rest_factor", "block_share")
PAIR_SLOW = "nccl.pair.slow"


@dataclass
class Localisation:
    """Which pairs are slow and what they have in common."""

    median: float
    slow: list[PairKey]
    total: Counter[str]
    count: Counter[str]
    suspects: list[str] = field(default_factory=list)
    rest: int = 0  # the most slow pairs any non-suspect node is in
    left: list[PairKey] = field(default_factory=list)  # slow pairs no suspect explains
    blocks: list[str] = field(default_factory=list)  # topology blocks the unexplained pairs share

    def explained(self, suspect: str) -> list[PairKey]:
        """The slow pairs the suspect node explains (the pair findings folded into its finding)."""
        return [k for k in self.slow if suspect in k]

    def explainer(self, key: PairKey) -> str | None:
        """The suspect node that explains this pair, or None (not slow, or no suspect in it)."""
        if key not in self.slow:
            return None
        return next((m for m in self.suspects if m in key), None)


def localise(
    values: Mapping[PairKey, float], blocks: Mapping[str, str | None], t: Mapping[str, Any]
) -> Localisation:
    """Mark pairs >= below_median_fraction under the median slow, then find their common node or block."""
    mid = round(median(values.values()), 2)
    slow = sorted(k for k, v in values.items() if v <= mid * (1 - t["below_median_fraction"]))
    loc = Localisation(mid, slow, Counter(m for k in values for m in k), Counter(m for k in slow for m in k))
    if not slow:
        return loc
    share = {
        m for m in loc.total if loc.count[m] >= max(t["node_min_slow_pairs"], t["node_share"] * loc.total[m])
    }
    loc.rest = max((loc.count[m] for m in loc.total if m not in share), default=0)
    loc.suspects = sorted(m for m in share if loc.count[m] >= t["rest_factor"] * max(loc.rest, 1))
    loc.left = [k for k in slow if not set(k) & set(loc.suspects)]
    of = {m: blocks.get(m) for m in loc.total}
    everyone = set(of.values()) if len(set(of.values())) == 1 else set()  # a block all nodes share
    touching = Counter(b for k in loc.left for b in {of[k[0]], of[k[1]]} if b and b not in everyone)
    loc.blocks = sorted(b for b, c in touching.items() if c >= t["block_share"] * len(loc.left))
    return loc


def topology_blocks(ctx: Context) -> dict[str, str | None]:
    """Each node's topology block: the last network_node_layers entry, else its placement group."""
    blocks: dict[str, str | None] = {}
    for n in node_rows(ctx):
        layers = [x.strip() for x in (n["network_node_layers"] or "").split(",") if x.strip()]
        blocks[n["node"]] = layers[-1] if layers else n["placement_group"]
    return blocks


def localisations(
    ctx: Context,
) -> dict[tuple[str | None, str], tuple[dict[PairKey, Pair], Localisation]]:
    """nccl.pair.slow's reading of the pairwise runs, with its thresholds: per (instance type, collective)
    group of at least ``min_pairs`` pairs with a slow pair, the group's pairs and their localisation."""
    value = ctx.settings.value
    t = {k: value(PAIR_SLOW, k) for k in LOCALISE_KEYS}
    blocks = topology_blocks(ctx)
    out: dict[tuple[str | None, str], tuple[dict[PairKey, Pair], Localisation]] = {}
    for key, group in pairs(load_runs(ctx, value(PAIR_SLOW, "large_message_bytes"))).items():
        if len(group) < value(PAIR_SLOW, "min_pairs"):
            continue
        loc = localise({k: p.busbw for k, p in group.items()}, blocks, t)
        if loc.slow:
            out[key] = (group, loc)
    return out


def explained_pairs(ctx: Context) -> dict[tuple[str | None, str, str, str], str]:
    """(instance type, collective, node a, node b) -> the node nccl.pair.slow localised as the cause of
    that slow pair.  A pair finding of another rule on such a pair is folded into nccl.pair.slow's
    finding for that node instead of being reported again."""
    return {
        (itype, coll, *k): suspect
        for (itype, coll), (_, loc) in localisations(ctx).items()
        for k in loc.slow
        if (suspect := loc.explainer(k)) is not None
    }


def node_rows(ctx: Context) -> list[dict[str, Any]]:
    return ctx.rows(
        "SELECT bundle_id, node, hostname, instance_type, placement_group, network_node_layers FROM node"
    )


def load_runs(ctx: Context, min_bytes: int) -> list[Run]:
    nodes = node_rows(ctx)
    index = HostIndex(nodes)
    types = {n["node"]: n["instance_type"] for n in nodes}
    hosts: dict[tuple[str, str, int], list[str]] = defaultdict(list)
    for r in ctx.rows(
        "SELECT bundle_id, source_file, run, host, min(rank) AS first FROM nccl_rank "
        "WHERE host IS NOT NULL GROUP BY ALL ORDER BY bundle_id, source_file, run, first"
    ):
        hosts[(r["bundle_id"], r["source_file"], r["run"])].append(r["host"])
    best: dict[tuple[str, str, int], dict[str, Any]] = {}
    for r in ctx.rows(
        """
        SELECT bundle_id, source_file, run, size_bytes, line,
               coalesce(oop_busbw_gbps, ip_busbw_gbps) AS busbw
        FROM nccl_result WHERE coalesce(oop_busbw_gbps, ip_busbw_gbps) IS NOT NULL AND size_bytes > 0
        """
    ):
        key = (r["bundle_id"], r["source_file"], r["run"])
        old = best.get(key)
        large = r["size_bytes"] >= min_bytes
        if old is None or _better(r, large, old, old["size_bytes"] >= min_bytes):
            best[key] = r
    runs = []
    for r in ctx.rows(
        "SELECT bundle_id, node, source_file, run, line, collective, net_transport FROM nccl_run "
        "ORDER BY bundle_id, source_file, run"
    ):
        key = (r["bundle_id"], r["source_file"], r["run"])
        printed = hosts.get(key, [])
        members = [index.match(h) or h for h in printed]
        if r["node"] and len(printed) == 1 and members[0] not in types:
            members = [r["node"]]  # a single-host run in a node bundle is that node's run
        if not members and r["node"]:
            members = [r["node"]]
        known = {types[m] for m in members if m in types and types[m]}
        if not known and types.get(r["node"]):
            known = {types[r["node"]]}  # hosts not matched: the bundle's own node ran in it
        run = Run(
            bundle_id=r["bundle_id"],
            source_file=r["source_file"],
            node=r["node"],
            line=r["line"],
            run=r["run"],
            collective=r["collective"],
            transport=r["net_transport"],
            hosts=printed,
            members=members,
            instance_type=next(iter(known)) if len(known) == 1 else None,
        )
        if (res := best.get(key)) is not None:
            run.busbw, run.size_bytes, run.busbw_line = res["busbw"], res["size_bytes"], res["line"]
            run.reached_min_bytes = res["size_bytes"] >= min_bytes
        runs.append(run)
    return runs


def _better(new: dict[str, Any], new_large: bool, old: dict[str, Any], old_large: bool) -> bool:
    """Among sizes >= min_bytes keep the highest busbw; below it keep the largest size."""
    if new_large != old_large:
        return new_large
    if new_large:
        return bool(new["busbw"] > old["busbw"])
    return bool(new["size_bytes"] > old["size_bytes"])


def pairs(runs: list[Run]) -> dict[tuple[str | None, str], dict[tuple[str, str], Pair]]:
    """2-host runs with a busbw, grouped by (instance type, collective); a re-run pair keeps its best."""
    groups: dict[tuple[str | None, str], dict[tuple[str, str], Pair]] = defaultdict(dict)
    for run in runs:
        if run.busbw is None or len(set(run.members)) != 2:
            continue
        a, b = sorted(set(run.members))
        group = groups[(run.instance_type, run.collective or "all_reduce")]
        pair = group.setdefault((a, b), Pair((a, b), run.busbw))
        pair.busbw = max(pair.busbw, run.busbw)
        pair.runs.append(run)
    return groups


def busbw_evidence(ctx: Context, run: Run) -> Evidence:
    return ctx.evidence(run.source_file, run.busbw_line or run.line)


def size_label(size: int | None) -> str:
    if size is None:
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"
