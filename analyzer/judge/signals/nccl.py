"""Shared reading of nccl-tests runs for the NCCL rules: one ``Run`` per test of a parsed log.

A run is one test of an nccl-tests file (``bundle_id`` + ``source_file`` + ``run``; a log may hold several
tests, e.g. all_reduce_perf then all_gather_perf, or a whole pairwise sweep one pair after another): in a
node bundle (``node`` set) or in a cluster bundle's ``extra/`` (``node`` NULL).  Its hosts come from the
rank lines and are matched back to node bundles with :mod:`analyzer.judge.hosts`; an unmatched host keeps
its printed name.  The large-message busbw is the highest busbw (out-of-place, else in-place) over sizes
>= ``min_bytes``; a run that never reached that size is judged at its largest size and says so
(``reached_min_bytes`` False).  The ``# Avg bus bandwidth`` line is never used: it averages tiny messages
in.

Runs are never pooled.  The runs compared with each other form a *sweep* (:func:`sweeps`): the tests of
one log that holds several pairs (or nodes), else the one-test logs of one folder (a cluster ``extra/``),
else the one-test logs of the node bundles; and in each of these, the first run of every pair, then the
second run of every pair that was run again (the same pair in two logs of one folder), and so on.  Two
``extra/`` folders, two logs, two collection days of the same pairs are so many sweeps, each judged on its
own; a sweep too small to compare within (a re-run of one pair) is judged against the sweep it re-runs
(the one sharing the most pairs).  A finding names the run each value comes from and says how the same
pair (or node) fared in the other sweeps (:func:`contrast`): "slow in run A (x GB/s), fine in run B".

The localisation of slow pairs (:func:`localise`, :func:`localisations`) lives here too: nccl.pair.slow
reports it, and the pair rules (nccl.busbw.below_expected) leave out the runs it explains by a node, so
one bad node is one finding, not one per pair.
"""

from __future__ import annotations

import posixpath
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from analyzer.judge.engine import Context, NotExamined, TooFewPeers, too_few_peers
from analyzer.judge.findings import Evidence
from analyzer.judge.hosts import HostIndex

Rows = Callable[[str], list[dict[str, Any]]]
#: A run's identity: (bundle_id, source_file, test number in the file).
RunKey = tuple[str, str, int]
#: What a sweep holds one run of: a pair of nodes (a, b) sorted, or a node alone (a,).
Subject = tuple[str, ...]
PairKey = tuple[str, str]


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
    tests_in_file: int = 1  # how many tests its file holds

    @property
    def scope(self) -> str | None:
        """'single_node', 'multi_node', or None when the log has no rank lines."""
        if not self.hosts:
            return None
        return "single_node" if len(self.hosts) == 1 else "multi_node"

    @property
    def label(self) -> str:
        return self.node or ",".join(self.members) or self.source_file

    @property
    def key(self) -> RunKey:
        return (self.bundle_id, self.source_file, self.run)

    @property
    def name(self) -> str:
        """The run as the user finds it: its file, and the test's number when the file holds several."""
        return self.source_file if self.tests_in_file <= 1 else f"{self.source_file} test {self.run}"

    @property
    def subject(self) -> Subject:
        return tuple(sorted(set(self.members)))


@dataclass
class Pair:
    """One pair of a sweep: its one run there."""

    members: tuple[str, str]
    busbw: float
    runs: list[Run] = field(default_factory=list)

    @property
    def run(self) -> Run:
        """The run that gave the pair its busbw in this sweep (a sweep holds one run of each pair)."""
        return self.runs[0]


@dataclass(eq=False)
class Sweep:
    """Runs compared with each other: one run of each subject (pair, or node alone), of one collection.

    ``label`` names where its runs lie (``extra/``, ``extra/sweep.log``, ``node bundles``), with the
    re-run number when it holds the second (third ...) runs of its folder's pairs.  ``reference`` is set
    when it holds too few subjects to compare within: the sweep of the same group whose values it is
    judged against."""

    label: str
    instance_type: str | None
    collective: str
    runs: dict[Subject, Run] = field(default_factory=dict)
    reference: Sweep | None = None

    @property
    def values(self) -> dict[Subject, float]:
        return {k: r.busbw for k, r in self.runs.items() if r.busbw is not None}

    @property
    def pool(self) -> dict[Subject, float]:
        """The values its subjects are compared with: its own, or its reference's."""
        return self.reference.values if self.reference is not None else self.values

    @property
    def pairs(self) -> dict[PairKey, Pair]:
        return {
            (k[0], k[1]): Pair((k[0], k[1]), r.busbw, [r])
            for k, r in self.runs.items()
            if len(k) == 2 and r.busbw is not None
        }

    def describe(self, what: str = "pairwise runs") -> str:
        """'the 28 pairwise runs of extra/', and, judged against another sweep, which."""
        n = len(self.runs)
        own = f"the {n} {what if n != 1 else what.removesuffix('s')} of {self.label}"
        if self.reference is None:
            return own
        return f"{own} (too few to compare within: judged against {self.reference.describe(what)})"


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
    #: of a re-run judged against its reference sweep: slow pairs of a node the reference localised
    #: (they are said in that node's finding, as the same pair's other run)
    borrowed: dict[PairKey, str] = field(default_factory=dict)
    #: of a re-run: slow pairs slow in the reference too, no node explaining them (said in its finding)
    repeated: list[PairKey] = field(default_factory=list)

    def explained(self, suspect: str) -> list[PairKey]:
        """The slow pairs the suspect node explains (the pair findings folded into its finding)."""
        return [k for k in self.slow if suspect in k]

    def explainer(self, key: PairKey) -> str | None:
        """The suspect node that explains this pair, or None (not slow, or no suspect in it)."""
        if key not in self.slow:
            return None
        return next((m for m in self.suspects if m in key), self.borrowed.get(key))


def localise(
    values: Mapping[PairKey, float],
    blocks: Mapping[str, str | None],
    t: Mapping[str, Any],
    mid: float | None = None,
    known: Sequence[str] = (),
    slow_there: Collection[PairKey] = (),
) -> Localisation:
    """Mark pairs >= below_median_fraction under the median slow, then find their common node or block.
    ``mid`` is the median to compare with when not the values' own, ``known`` the nodes localised there
    and ``slow_there`` the pairs slow there (a re-run judged against the sweep it re-runs: its slow pairs
    with such a node, or slow there too, are said in that sweep's findings)."""
    mid = round(median(values.values()) if mid is None else mid, 2)
    slow = sorted(k for k, v in values.items() if v <= mid * (1 - t["below_median_fraction"]))
    loc = Localisation(mid, slow, Counter(m for k in values for m in k), Counter(m for k in slow for m in k))
    if not slow:
        return loc
    share = {
        m for m in loc.total if loc.count[m] >= max(t["node_min_slow_pairs"], t["node_share"] * loc.total[m])
    }
    loc.rest = max((loc.count[m] for m in loc.total if m not in share), default=0)
    loc.suspects = sorted(m for m in share if loc.count[m] >= t["rest_factor"] * max(loc.rest, 1))
    for k in slow:
        if not set(k) & set(loc.suspects) and (m := next((m for m in known if m in k), None)):
            loc.borrowed[k] = m
    loc.repeated = [
        k for k in slow if k in slow_there and k not in loc.borrowed and not set(k) & set(loc.suspects)
    ]
    loc.left = [
        k for k in slow if not set(k) & set(loc.suspects) and k not in loc.borrowed and k not in loc.repeated
    ]
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


@dataclass(eq=False)
class Judged:
    """nccl.pair.slow's reading of one pairwise sweep."""

    sweep: Sweep
    loc: Localisation

    @property
    def group(self) -> tuple[str | None, str]:
        return (self.sweep.instance_type, self.sweep.collective)

    @property
    def pairs(self) -> dict[PairKey, Pair]:
        return self.sweep.pairs


def localisations(ctx: Context) -> list[Judged]:
    """nccl.pair.slow's reading of the pairwise runs, with its thresholds: every sweep of 2-node runs that
    can be judged (``min_pairs`` pairs of its own, or a reference sweep that has them), localised; those
    with a slow pair and those without (a pair fine here is said to be fine where it is slow elsewhere)."""

    def make() -> list[Judged]:
        value = ctx.settings.value
        t = {k: value(PAIR_SLOW, k) for k in LOCALISE_KEYS}
        blocks = topology_blocks(ctx)
        runs = load_runs(ctx, value(PAIR_SLOW, "large_message_bytes"))
        out: list[Judged] = []
        of: dict[int, Localisation] = {}  # id(sweep) -> its localisation
        for group in sweeps(runs, 2, value(PAIR_SLOW, "min_pairs")).values():
            # sweeps of their own first: a re-run is judged against its reference's median and suspects
            for sweep in sorted(group, key=lambda s: s.reference is not None):
                if len(sweep.runs) < value(PAIR_SLOW, "min_pairs") and sweep.reference is None:
                    continue
                ref = sweep.reference
                mid = median(ref.values.values()) if ref is not None else None
                there = of.get(id(ref)) if ref is not None else None
                known, slow_there = (there.suspects, there.slow) if there is not None else ([], [])
                values = {(k[0], k[1]): v for k, v in sweep.values.items()}
                loc = localise(values, blocks, t, mid, known, slow_there)
                of[id(sweep)] = loc
                out.append(Judged(sweep, loc))
        return out

    judged: list[Judged] = ctx.memo(f"{PAIR_SLOW}.localisations", make)
    return judged


def explained_runs(ctx: Context) -> dict[RunKey, str]:
    """Run -> the node nccl.pair.slow localised as the cause of that slow pair in the run's sweep.  A pair
    finding of another rule on such a run is folded into nccl.pair.slow's finding for that node instead
    of being reported again."""
    out: dict[RunKey, str] = {}
    for j in localisations(ctx):
        for k in j.loc.slow:
            if (suspect := j.loc.explainer(k)) is not None:
                out[j.sweep.runs[k].key] = suspect
    return out


def slow_elsewhere(judged: list[Judged], here: Judged, key: PairKey) -> list[tuple[Run, bool]]:
    """The same pair's runs in the other judged sweeps of its group, each with whether it was slow there."""
    out = []
    for j in judged:
        if j is here or j.group != here.group or key not in j.sweep.runs:
            continue
        out.append((j.sweep.runs[key], key in j.loc.slow))
    return out


def contrast(
    subject: str, here: Run, here_bad: bool, others: list[tuple[Run, bool]], bad: str = "slow"
) -> str:
    """'a + b slow in run X (240.7 GB/s), fine in run Y (401.2 GB/s)': one subject's runs, each judged."""

    def said(run: Run, is_bad: bool) -> str:
        return f"{bad if is_bad else 'fine'} in run {run.name} ({run.busbw} GB/s)"

    return f"{subject} " + ", ".join(said(r, b) for r, b in [(here, here_bad), *others])


def other_runs(others: list[tuple[Run, bool]], bad: str = "slow") -> list[dict[str, Any]]:
    """The same subject's runs in other sweeps, as params."""
    return [
        {"run": r.name, "file": r.source_file, "line": r.busbw_line or r.line, "busbw_gbps": r.busbw,
         "verdict": bad if b else "fine"}
        for r, b in others
    ]  # fmt: skip


def node_rows(ctx: Context) -> list[dict[str, Any]]:
    return ctx.rows(
        "SELECT bundle_id, node, hostname, instance_type, placement_group, network_node_layers FROM node"
    )


def load_runs(ctx: Context, min_bytes: int) -> list[Run]:
    """Every nccl-tests run of the store, hosts matched to nodes (read once per analysis and size)."""

    def make() -> list[Run]:
        return read_runs(lambda sql: ctx.rows(sql), min_bytes)

    runs: list[Run] = ctx.memo(f"nccl.runs.{min_bytes}", make)
    return runs


def read_runs(rows: Rows, min_bytes: int) -> list[Run]:
    """Every nccl-tests run the tables ``node``, ``nccl_run``, ``nccl_rank`` and ``nccl_result`` hold (as
    ``rows(sql)`` reads them: the analysis' store, or one snapshot of a history store), its hosts matched
    to nodes and its large-message busbw taken."""
    nodes = rows(
        "SELECT bundle_id, node, hostname, instance_type, placement_group, network_node_layers FROM node"
    )
    index = HostIndex(nodes)
    types = {n["node"]: n["instance_type"] for n in nodes}
    hosts: dict[RunKey, list[str]] = defaultdict(list)
    for r in rows(
        "SELECT bundle_id, source_file, run, host, min(rank) AS first FROM nccl_rank "
        "WHERE host IS NOT NULL GROUP BY ALL ORDER BY bundle_id, source_file, run, first"
    ):
        hosts[(r["bundle_id"], r["source_file"], r["run"])].append(r["host"])
    best: dict[RunKey, dict[str, Any]] = {}
    for r in rows(
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
    for r in rows(
        "SELECT bundle_id, node, source_file, run, line, collective, net_transport, "
        "count(*) OVER (PARTITION BY bundle_id, source_file) AS tests FROM nccl_run "
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
            tests_in_file=r["tests"],
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


def not_compared(
    ctx: Context,
    groups: Mapping[tuple[str | None, str], list[Sweep]],
    judged: Collection[Sweep],
    need: int,
    unit: str,
) -> None:
    """Name the nodes of every sweep not judged (too few pairs or nodes of its own, and no reference
    sweep) as not examined by the running rule, with why; with no sweep judged at all, the rule is not
    examined (:class:`TooFewPeers`), and with no such run at all it had no input (:class:`NotExamined`)."""
    done = {(s.instance_type, s.collective, s.label) for s in judged}
    reasons = []
    for (itype, coll), group in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        for s in group:
            if (s.instance_type, s.collective, s.label) not in done:
                why = too_few_peers(len(s.runs), need, unit, f"{itype or 'unknown type'} {coll}, {s.label}")
                ctx.not_judged(sorted({m for k in s.runs for m in k}), why)
                reasons.append(why)
    if not groups:
        raise NotExamined(f"no nccl-tests run of the {unit} compared with a large-message busbw")
    if not done:
        raise TooFewPeers("; ".join(reasons))


def sweeps(runs: list[Run], size: int, min_subjects: int) -> dict[tuple[str | None, str], list[Sweep]]:
    """The runs of ``size`` nodes each (2: pairwise runs; 1: single-node runs) with a busbw, per (instance
    type, collective), cut into sweeps that hold one run of each subject (pair or node); never pooled.

    A run's sweep is its log when the log holds tests of several subjects (a pairwise sweep written to one
    file), else its folder (one-test logs of one ``extra/``), else ``node bundles`` (one-test logs added
    to node bundles); within that, the n-th run of a subject (ordered by folder, file name, test) goes to the n-th
    sweep.  A sweep of fewer than ``min_subjects`` subjects gets as ``reference`` the sweep of its group
    with enough of them that shares the most subjects with it (then the largest), if any."""
    groups: dict[tuple[str | None, str], list[Run]] = defaultdict(list)
    for run in runs:
        if run.busbw is None or len(run.subject) != size:
            continue
        if size == 1 and run.scope != "single_node":
            continue
        groups[(run.instance_type, run.collective or "all_reduce")].append(run)
    out: dict[tuple[str | None, str], list[Sweep]] = {}
    for (itype, coll), members in groups.items():
        per_file: dict[tuple[str, str], set[Subject]] = defaultdict(set)
        for run in members:
            per_file[(run.bundle_id, run.source_file)].add(run.subject)
        made: dict[tuple[str, int], Sweep] = {}
        seen: Counter[tuple[str, Subject]] = Counter()
        for run in sorted(members, key=_order):
            if len(per_file[(run.bundle_id, run.source_file)]) > 1:
                base = run.source_file
            elif run.node is None:
                base = (posixpath.dirname(run.source_file) or ".") + "/"
            else:
                base = "node bundles"
            seen[(base, run.subject)] += 1
            nth = seen[(base, run.subject)]
            label = base if nth == 1 else f"{base} (re-run {nth - 1})"
            made.setdefault((base, nth), Sweep(label, itype, coll)).runs[run.subject] = run
        group = sorted(made.values(), key=lambda s: s.label)
        full = [s for s in group if len(s.runs) >= min_subjects]
        for sweep in group:
            if len(sweep.runs) < min_subjects and full:
                # the first of the best in label order: max keeps the first maximum
                sweep.reference = max(
                    full, key=lambda s: (len(s.runs.keys() & sweep.runs.keys()), len(s.runs))
                )
        out[(itype, coll)] = group
    return out


def _order(run: Run) -> tuple[str, str, str, int, str]:
    """Runs in the order they were made, as far as names tell: by folder, then file name without its
    suffix (``pair-03-05.txt`` before ``pair-03-05-rerun.txt``), then test."""
    folder, name = posixpath.split(run.source_file)
    stem, suffix = posixpath.splitext(name)
    return (folder, stem, suffix, run.run, run.bundle_id)


def busbw_evidence(ctx: Context, run: Run) -> Evidence:
    return ctx.evidence(run.source_file, run.busbw_line or run.line)


def size_label(size: int | None) -> str:
    if size is None:
        return "?"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} B"
