"""No pass without evidence, for every rule and each of its inputs.

One cluster holds a *full* node (every kind the collector writes, from real fixtures: the 8xH100 capture
set of benchmarks/generate.py plus the remaining kinds) and, for every input a rule names, a node that
lacks it (the kinds that fill the input's table removed, or the meta.env key of a ``node.*`` column).
For each alternative of a rule's ``requires_any`` a node has that alternative alone, and one has none of
them; a ``probe_answer.family=F`` alternative is met by a node whose probes of that family failed with a
real answer (tests/fixtures/probe-answers).  Then, for every rule:

- the full node is *checked*;
- a node without one of its ``requires`` is *not examined* (or the rule is skipped);
- a node with one ``requires_any`` alternative alone is *checked*, one with none is *not examined*;
- a node whose input lacks the columns a rule judges (``WITHOUT_COLUMNS``: iostat without -x) is *not
  examined* by it, with why;
- a rule judged on cluster-wide exports (nccl-tests logs, CloudWatch, DCGM mndiag JSON, a job's log) runs
  with the exports and is skipped without them.

A rule whose inputs are the inputs themselves (``node.source``: the bundle read; ``input_issue``,
``bundle_checksum``) is listed in JUDGES_THE_INPUTS and checked for being there.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import parsers
from analyzer.judge.coverage import cluster_tables, producers
from analyzer.judge.rules import load_rules
from tests.conftest import FIXTURES
from tests.rules.helpers import Result, analyze, fixture, write_node

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_generate_evidence", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

#: Rules whose input is the input itself (what was read, its checksums, its problems): not a probe.
JUDGES_THE_INPUTS = {"node.source", "input_issue", "bundle_checksum"}
#: meta.env keys behind node.* columns.
META = {
    "bundle_format": "1",
    "collected_at": generate.STAMP,
    "instance_type": "p5.48xlarge",
    "availability_zone": "us-east-1a",
    "az_id": "use1-az4",
    "placement_group": "pg-train-01",
    "instance_id": "i-0a00000000000000a",
    "nproc": "192",
    "kernel": "6.8.0-1015-aws",
    "os_release": "Ubuntu 22.04.5 LTS",
    "network_node_layers": "nn-a1,nn-b1,nn-c1",
    "ultraserver_id": "us-0001",
}
#: DERIVED inputs for values no real capture of a p5 carries (each says from what it is derived):
#: `df -P -i` in GNU coreutils' column layout (the collector's df-inodes probe),
DF_INODES = (
    "Filesystem       Inodes  IUsed    IFree IUse% Mounted on\n"
    "/dev/root      16384000 812345 15571655    5% /\n"
    "/dev/nvme1n1  244195328  10342 244184986    1% /opt/dlami/nvme\n"
)
#: the collector's sysfs lines for the EFA port counters (collector.sh s_efa_ports: "path: value"),
EFA_COUNTERS = (
    "/sys/class/infiniband/rdmap79s0/ports/1/state: 4: ACTIVE\n"
    "/sys/class/infiniband/rdmap79s0/ports/1/counters/port_rcv_errors: 0\n"
    "/sys/class/infiniband/rdmap79s0/ports/1/counters/port_xmit_discards: 0\n"
)
#: and `nvidia-smi --query-gpu=index,pci.bus_id,retired_pages.pending --format=csv` (the field H100s print
#: as [N/A]; its layout is the CSV of tests/fixtures/nvidia-smi-csv, the value of a pre-Ampere GPU).
RETIRED_CSV = "index, pci.bus_id, retired_pages.pending\n0, 00000000:18:00.0, No\n"
#: probe kind -> a real failure answer of its family (stdout of the probe)
ANSWER = {
    "nvidia-smi": "nvidia-smi--ci-runners-40-driver-unreachable.txt",
    "fi-info": "fi-info--libfabric-info-c-no-provider-stderr.txt",
    "efa": "efa-ports--pib-2-ibv-devinfo-no-devices.txt",
    "dcgm": "dcgmi-diag--dcgm-43-hostengine.txt",
    "fabricmanager": "fabricmanager--systemd-unit-not-found-stderr.txt",
}
FAMILY_KINDS = {
    "nvidia-smi": ("nvidia-smi-q", "nvidia-smi-csv", "nvidia-smi", "nvidia-smi-topo", "nvidia-smi-nvlink"),
    "fi-info": ("fi-info",),
    "efa": ("efa-ports",),
    "dcgm": ("dcgmi-diag",),
    "fabricmanager": ("fabricmanager",),
}


def full_files() -> dict[str, tuple[str, str]]:
    """Every kind collector.sh writes, for one p5.48xlarge, from real captures."""
    q = generate.fixture(generate.Q_FIXTURE)
    uuids = list(dict.fromkeys(generate._UUID.findall(q)))
    return {
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", q),
        "cmd/nvidia-smi-query-gpu.txt": ("nvidia-smi-csv", generate.fixture(generate.CSV_FIXTURE)),
        "cmd/nvidia-smi-remapped-rows.txt": ("nvidia-smi-csv", generate.fixture(generate.REMAP_FIXTURE)),
        "cmd/nvidia-smi.txt": ("nvidia-smi", fixture("nvidia-smi", "della-h100-545-narrow-busid.txt")),
        "cmd/nvidia-smi-nvlink.txt": ("nvidia-smi-nvlink", generate.build_nvlink(uuids)),
        "cmd/nvidia-smi-topo.txt": (
            "nvidia-smi-topo",
            generate.fixture("collector/nvidia-smi-topo/della-h100-nic-legend-empty-cpu-affinity.txt"),
        ),
        "cmd/dmesg.txt": ("dmesg", fixture("dmesg", "gpud-readme-dmesg-ctime-xid13-109.txt")),
        "cmd/fi-info.txt": ("fi-info", generate.build_fi_info()),
        "cmd/efa-ports.txt": (
            "efa-ports",
            fixture("efa-ports", "ibv_devinfo-efa0-rdma-core-884.txt") + EFA_COUNTERS,
        ),
        "cmd/nvidia-smi-q-retired.txt": (
            "nvidia-smi-q",
            fixture("nvidia-smi-q", "ml-engineering-retired-pages-pending-blacklist-section.txt"),
        ),
        "cmd/nvidia-smi-retired.txt": ("nvidia-smi-csv", RETIRED_CSV),
        "cmd/versions.txt": ("versions", generate.VERSIONS),
        "cmd/fabricmanager.txt": (
            "fabricmanager",
            fixture("fabricmanager", "sber-590-running-clean-pager-cut.txt"),
        ),
        "cmd/dcgmi-diag.txt": ("dcgmi-diag", fixture("dcgmi-diag", "dcgm-124-442-r2-1gpu-pass-complete.txt")),
        "cmd/lspci.txt": (
            "lspci",
            fixture("lspci", "derived-fm-guide-hgx-h100-at-jp-simulator-addresses-vv-links.txt"),
        ),
        "cmd/cpu-governor.txt": (
            "cpu-governor",
            fixture("cpu-governor", "scaling_governor-cat-8cpus-powersave.txt"),
        ),
        "cmd/iostat.txt": ("iostat", generate.build_iostat(generate.IOSTAT_SAMPLES)),
        "cmd/df.txt": ("df", generate.build_df()),
        "cmd/df-inodes.txt": ("df", DF_INODES),
        "cmd/lfs-df.txt": ("lfs-df", fixture("lfs-df", "fsx-workshop-mnt-fsx-3ost.txt")),
        "cmd/mounts.txt": ("mounts", fixture("mounts", "handwritten-hyperpod-slurm-proc-mounts.txt")),
        "cmd/shm.txt": ("shm", fixture("shm", "handwritten-collector-p5-stale-nccl.txt")),
        "cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt")),
        "cmd/placement.txt": (
            "placement",
            fixture("placement", "training-on-eks-p4d-describe-node-full-prompt-fence-cut-tail.txt"),
        ),
    }


@dataclass(frozen=True)
class Variant:
    """A node of the test cluster: the full node less some kinds and meta keys, plus failed families."""

    drop_kinds: frozenset[str] = frozenset()
    drop_meta: frozenset[str] = frozenset()
    failed: frozenset[str] = frozenset()  # answer families whose probes answered with a failure

    @property
    def name(self) -> str:
        parts = [*sorted(f"k-{k}" for k in self.drop_kinds), *sorted(f"m-{m}" for m in self.drop_meta)]
        parts += sorted(f"f-{f}" for f in self.failed)
        return "full" if not parts else "n-" + "-".join(parts).replace("_", "")


def input_of(requirement: str) -> Variant:
    """What a node must lack so that it lacks the requirement."""
    table, _, column = requirement.partition(".")
    if table == "node":
        return Variant(drop_meta=frozenset({column}))
    if table == "probe_answer":
        return Variant()  # the full node has no failure answer: lacking it is the default
    return Variant(drop_kinds=producers()[table])


def none_of(group: tuple[str, ...]) -> Variant:
    """A node lacking every requirement of the group."""
    lacks = [input_of(req) for req in group]
    return Variant(
        frozenset().union(*(v.drop_kinds for v in lacks)), frozenset().union(*(v.drop_meta for v in lacks))
    )


def only(requirement: str, group: tuple[str, ...]) -> Variant:
    """A node with ``requirement`` and none of the other alternatives of its group."""
    none = none_of(group)
    if requirement.startswith("probe_answer.family="):
        family = requirement.partition("=")[2]  # its probes are there: they answered with a failure
        return Variant(none.drop_kinds - set(FAMILY_KINDS[family]), none.drop_meta, frozenset({family}))
    keep = input_of(requirement)
    return Variant(none.drop_kinds - keep.drop_kinds, none.drop_meta - keep.drop_meta)


def is_cluster(requirement: str) -> bool:
    table = requirement.partition(".")[0]
    return table in cluster_tables() and table != "node"


def is_mixed(info: object) -> bool:
    """A rule judged for the cluster where a cluster export is there, per node from node inputs else."""
    group = getattr(info, "requires_any", ())
    return any(is_cluster(r) for r in group) and not all(is_cluster(r) for r in group)


@dataclass(frozen=True)
class Case:
    rule: str
    requirement: str
    node: str
    expect: str  # checked | not-examined


def cases() -> list[Case]:
    out: list[Case] = []
    for module in load_rules(include_plugins=False):
        info = module.RULE
        reqs = [r for r in info.requires if r != "node"]
        if JUDGES_THE_INPUTS & {*reqs, *info.requires_any} or any(is_cluster(r) for r in reqs):
            continue
        if info.requires_any and all(is_cluster(r) for r in info.requires_any) or is_mixed(info):
            continue
        out.append(Case(info.id, "(everything)", Variant().name, "checked"))
        for req in reqs:
            out.append(Case(info.id, req, input_of(req).name, "not-examined"))
        group = tuple(r for r in info.requires_any if not is_cluster(r))
        for req in group:
            out.append(Case(info.id, req, only(req, group).name, "checked"))
        if group:
            out.append(Case(info.id, " or ".join(group), none_of(group).name, "not-examined"))
    return out


#: meta.env and nothing else (the full node holds only the kinds the collector writes: dropping those
#: drops all, and keeps the node's directory name within a file name's length)
META_ONLY = Variant(
    drop_kinds=frozenset(k for k in parsers.KINDS if parsers.module_for(k).INFO.not_collected_because is None)
)


def variants() -> list[Variant]:
    seen: dict[str, Variant] = {META_ONLY.name: META_ONLY}
    for module in load_rules(include_plugins=False):
        info = module.RULE
        if JUDGES_THE_INPUTS & {*info.requires, *info.requires_any} or is_mixed(info):
            continue
        group = tuple(r for r in info.requires_any if not is_cluster(r))
        candidates = [Variant(), none_of(group) if group else Variant()]
        candidates += [input_of(r) for r in info.requires if r != "node" and not is_cluster(r)]
        candidates += [only(r, group) for r in group]
        for v in candidates:
            seen.setdefault(v.name, v)
    return list(seen.values())


def write_variant(root: Path, v: Variant, files: dict[str, tuple[str, str]]) -> None:
    chosen = {p: (k, t) for p, (k, t) in files.items() if k not in v.drop_kinds}
    for family in v.failed:
        for p, (k, _) in list(chosen.items()):
            if k in FAMILY_KINDS[family]:
                chosen[p] = (k, (FIXTURES / "probe-answers" / ANSWER[family]).read_text(encoding="utf-8"))
    meta = {k: val for k, val in META.items() if k not in v.drop_meta}
    write_node(root, v.name, chosen, meta=meta)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Result]:
    """The cluster of variants with cluster-wide exports, and the full node alone without them."""
    tmp = tmp_path_factory.mktemp("evidence")
    files = full_files()
    assert {k for k, _ in files.values()} >= {
        k for k in parsers.KINDS if parsers.module_for(k).INFO.not_collected_because is None
    }, "the full node lacks a kind the collector writes"
    root = tmp / "cluster"
    for v in variants():
        write_variant(root, v, files)
    extra = root / "extra"
    extra.mkdir()
    shutil.copy(FIXTURES / "nccl-tests" / "a3mega-h100-2node-allreduce.txt", extra / "allreduce.txt")
    shutil.copy(FIXTURES / "cloudwatch" / "steampipe-1311-get-metric-statistics-two-dimensions-root-prompt.txt",
                extra / "cw.txt")  # fmt: skip
    shutil.copy(FIXTURES / "dcgm-mndiag" / "dcgmi-mndiag-unit-test-response-3hosts-2gpus-fail.txt",
                extra / "mndiag.json")  # fmt: skip
    shutil.copy(FIXTURES / "job-log" / "kohya-1434-uncorrectable-ecc.txt", extra / "slurm-48213.err")
    alone = tmp / "alone"
    write_variant(alone, Variant(), files)
    return analyze(root), analyze(alone)


@pytest.mark.parametrize("case", cases(), ids=lambda c: f"{c.rule}|{c.requirement}|{c.expect}")
def test_a_rule_checks_a_node_only_on_its_input(cluster: tuple[Result, Result], case: Case) -> None:
    res, _ = cluster
    o = res.outcomes[case.rule]
    assert o.outcome != "error", (case, o.reason)
    if case.expect == "checked":
        # a peer rule may read the node's input and find it alone of its kind (the node whose type comes
        # from a p4d placement label among p5 nodes): not examined for too few peers, never passed
        alone = case.rule in PEER_RULES and "too few peers" in (o.reason or "")
        assert case.node in o.nodes_checked or (alone and case.node in o.nodes_without_data), (
            case,
            o.outcome,
            o.reason,
        )
    else:
        assert case.node not in o.nodes_checked, (case, o.outcome)
        assert o.outcome == "skipped" or case.node in o.nodes_without_data, (case, o.outcome)


CLUSTER_RULES = sorted(
    m.RULE.id
    for m in load_rules(include_plugins=False)
    if any(is_cluster(r) for r in m.RULE.requires)
    or (m.RULE.requires_any and all(is_cluster(r) for r in m.RULE.requires_any))
)


@pytest.mark.parametrize("rule", CLUSTER_RULES)
def test_a_rule_on_cluster_exports_runs_only_with_them(cluster: tuple[Result, Result], rule: str) -> None:
    with_exports, without = cluster
    assert without.outcomes[rule].outcome == "skipped", without.outcomes[rule]
    assert with_exports.outcomes[rule].outcome != "error", with_exports.outcomes[rule]


#: Rules whose subject is the instance type itself (not a probe's input next to it).
JUDGES_THE_INSTANCE_TYPE = {"placement.mixed_types"}


def judges_meta_facts(info: object) -> bool:
    """The rule judges meta.env facts themselves: it declares one other than the instance type (the AZ,
    the placement group, nproc), or its subject is the instance type (JUDGES_THE_INSTANCE_TYPE): a node
    with meta.env alone may be checked for it.  The instance type next to a probe's input is never that
    input."""
    reqs = [r for r in (*getattr(info, "requires", ()), *getattr(info, "requires_any", ())) if r != "node"]
    meta = [r for r in reqs if r.startswith("node.")]
    if getattr(info, "id", "") in JUDGES_THE_INSTANCE_TYPE:
        return True
    return any(r != "node.instance_type" for r in meta)


@pytest.mark.parametrize("module", load_rules(include_plugins=False), ids=lambda m: m.RULE.id)
def test_meta_env_alone_checks_no_probe_rule(cluster: tuple[Result, Result], module: object) -> None:
    info = module.RULE  # type: ignore[attr-defined]
    o = cluster[0].outcomes[info.id]
    if judges_meta_facts(info) or JUDGES_THE_INPUTS & {*info.requires, *info.requires_any}:
        return
    assert META_ONLY.name not in o.nodes_checked, (info.id, "checked on meta.env alone")
    assert o.outcome != "pass" or META_ONLY.name in o.nodes_without_data or not o.nodes_checked, info.id


MIXED_RULES = sorted(m.RULE.id for m in load_rules(include_plugins=False) if is_mixed(m.RULE))


@pytest.mark.parametrize("rule", MIXED_RULES)
def test_a_rule_on_exports_or_node_inputs_checks_the_node_without_exports(
    cluster: tuple[Result, Result], rule: str
) -> None:
    with_exports, alone = cluster
    assert with_exports.outcomes[rule].outcome not in ("error", "skipped"), with_exports.outcomes[rule]
    assert alone.outcomes[rule].nodes_checked == ["full"], alone.outcomes[rule]


def test_every_rule_is_covered() -> None:
    covered = {c.rule for c in cases()} | set(CLUSTER_RULES) | set(MIXED_RULES)
    for module in load_rules(include_plugins=False):
        info = module.RULE
        assert info.id in covered or JUDGES_THE_INPUTS & {*info.requires, *info.requires_any}, info.id


# --- Comparisons need what they compare ---------------------------------------------------------------
#: The rules that compare a node (a GPU, a pair) with its peers declare it (``RuleInfo.peers``: the
#: threshold of the least number of peers).  With fewer they judge nothing: never a pass.
PEER_RULES = sorted(m.RULE.id for m in load_rules(include_plugins=False) if m.RULE.peers)
#: The threshold keys that say how many peers a comparison needs.
PEER_KEYS = ("min_nodes", "min_peers", "min_pairs")
#: Rules with a least-peers threshold that judge without peers: nccl.busbw.below_expected holds each run
#: to its type's expected line and asks peers only before calling a shortfall critical.
PEERS_ESCALATE_ONLY = {"nccl.busbw.below_expected"}
#: Rules with a least-peers threshold that hold each GPU to its own default (its power limit, its
#: applications clocks) and ask peers only for a GPU whose default was not read: a lone node with its
#: defaults is judged (tests/rules/test_gpu_power_limits.py judges the peers-only path, 3 and 4 nodes).
PEERS_WITHOUT_DEFAULT_ONLY = {"gpu.power.limit_lowered", "gpu.clocks.app_lowered"}


def least(rule: str) -> tuple[int, str]:
    """A peer rule's least number of peers, and of what (its threshold's unit: nodes, GPUs)."""
    from analyzer.judge.settings import load_settings

    info = next(m.RULE for m in load_rules(include_plugins=False) if m.RULE.id == rule)
    entry = load_settings().described(rule)[info.peers]
    return int(entry["value"]), str(entry["unit"])


def test_every_comparing_rule_declares_its_peers() -> None:
    """A rule with a least-peers threshold declares it as ``peers``, so that the tests below reach it."""
    from analyzer.judge.settings import load_settings

    settings = load_settings()
    for module in load_rules(include_plugins=False):
        info = module.RULE
        keys = [k for k in settings.described(info.id) if k in PEER_KEYS]
        if info.id in PEERS_ESCALATE_ONLY | PEERS_WITHOUT_DEFAULT_ONLY:
            assert not info.peers and keys, info.id
            continue
        assert (info.peers in keys) if info.peers else not keys, (info.id, info.peers, keys)


@pytest.fixture(scope="module")
def few(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    """Full nodes of one instance type, alone and three together; and the lone node judged with every
    peer threshold above what it holds and no per-type NVLink figures (a comparison with peers alone)."""
    from analyzer.judge.settings import load_settings

    tmp = tmp_path_factory.mktemp("few")
    files = full_files()
    out: dict[str, Result] = {}
    for n in (1, 3):
        root = tmp / f"n{n}"
        for i in range(n):
            write_node(root, f"full-{i}", files, meta=META)
        (root / "extra").mkdir()  # one real nccl-tests run of two hosts: one pair, two nodes to compare
        shutil.copy(
            FIXTURES / "nccl-tests" / "a3mega-h100-2node-allreduce.txt", root / "extra" / "allreduce.txt"
        )
        out[str(n)] = analyze(root)
    starved = load_settings()
    for rule in PEER_RULES:
        key = next(m.RULE.peers for m in load_rules(include_plugins=False) if m.RULE.id == rule)
        starved.sections[rule][key] = {**starved.sections[rule][key], "value": 10_000}
    sku = starved.sku[META["instance_type"]]
    for figure in ("nvlinks_per_gpu", "nvlink_speed_gbps"):
        sku.pop(figure, None)
    out["starved"] = analyze(tmp / "n1", starved)
    return out


@pytest.mark.optional(
    "a rule counting GPUs or links, not nodes, is judged in the next test", skips="judged with"
)
@pytest.mark.parametrize("rule", PEER_RULES)
def test_a_comparison_with_too_few_nodes_does_not_pass(few: dict[str, Result], rule: str) -> None:
    """With 1 node, and with one node fewer than the rule needs, a rule comparing nodes judges none."""
    need, unit = least(rule)
    if unit != "nodes":
        pytest.skip(f"{rule} compares {unit}: judged with its threshold raised below")
    for n in sorted({1, need - 1}):
        assert str(n) in few, f"build a cluster of {n} nodes for {rule}"
        res = few[str(n)]
        o = res.outcomes[rule]
        nodes = [f"full-{i}" for i in range(n)]
        assert o.outcome == "skipped", (rule, n, o)
        assert o.reason and o.reason.startswith("too few peers: "), (rule, n, o.reason)
        if rule not in CLUSTER_RULES:  # an nccl-tests log's nodes are its hosts (2), not the bundles
            assert f"{n} of {need} nodes" in o.reason, (rule, o.reason)
        assert o.nodes_checked == [] and set(nodes) <= set(o.nodes_without_data), (rule, n, o)


@pytest.mark.parametrize("rule", PEER_RULES)
def test_a_comparison_below_its_threshold_does_not_pass(few: dict[str, Result], rule: str) -> None:
    """Every peer rule, of nodes or GPUs, with a site threshold above what the input holds."""
    o = few["starved"].outcomes[rule]
    assert o.outcome != "pass" and "full-0" not in o.nodes_checked, (rule, o)
    assert o.outcome == "fail" or "full-0" in o.nodes_without_data, (rule, o)
    assert o.reason and "too few peers" in o.reason, (rule, o.reason)


def test_enough_peers_are_judged(few: dict[str, Result]) -> None:
    """The counter-case: three nodes are enough for the rules that need two, each checked."""
    for rule in PEER_RULES:
        need, unit = least(rule)
        if unit == "nodes" and need <= 3:
            o = few["3"].outcomes[rule]
            assert o.outcome in ("pass", "fail"), (rule, o)
            assert o.nodes_checked == ["full-0", "full-1", "full-2"] or rule.startswith("placement."), (
                rule,
                o,
            )


# --- A table is not all a rule judges -----------------------------------------------------------------
#: Rules that judge columns only some layouts of their input's kind print: the full node with that kind's
#: file replaced by a real capture of the layout without them is not examined, with why (never passed).
#: rule -> (the file replaced, a real capture without the columns, what the reason says)
WITHOUT_COLUMNS = {
    "fs.device.saturated": (
        "cmd/iostat.txt",
        ("iostat", "jc-centos77-plain-d.out"),
        "without the -x columns",
    ),
}


@pytest.mark.parametrize("rule", sorted(WITHOUT_COLUMNS))
def test_a_node_without_the_columns_a_rule_judges_is_not_examined(
    tmp_path_factory: pytest.TempPathFactory, rule: str
) -> None:
    path, (kind, name), why = WITHOUT_COLUMNS[rule]
    root = tmp_path_factory.mktemp("columns") / "c"
    files = full_files()
    write_node(root, "full", files, meta=META)
    write_node(root, "without", {**files, path: (files[path][0], fixture(kind, name))}, meta=META)
    o = analyze(root).outcomes[rule]
    assert "full" in o.nodes_checked and "without" not in o.nodes_checked, o
    assert "without" in o.nodes_without_data and why in (o.reason or ""), o
