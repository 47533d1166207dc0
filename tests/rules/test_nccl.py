"""NCCL rules on bundles built from real nccl-tests logs (host names and busbw values rewritten).

Rules: nccl.transport.tcp_fallback, nccl.log.errors, nccl.test.wrong, nccl.busbw.below_expected,
nccl.pair.outlier, nccl.pair.slow, nccl.busbw.straggler.

The pairwise matrix: 8 node bundles (p5.48xlarge) in a cluster bundle whose top-level extra/ holds the
28 pairwise logs, each made from the real 2-host a3mega all_reduce log (header, rank lines and the
rows >= 1 GiB kept; the two host names and the busbw cells rewritten).
"""

from __future__ import annotations

import copy
import importlib
import re
from itertools import combinations
from pathlib import Path

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Severity
from analyzer.judge.rules import nccl as nccl_rules
from analyzer.judge.rules import net as net_rules
from analyzer.judge.settings import Settings, load_settings
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

MODULES = [
    importlib.import_module(f"{pkg.__name__}.{name}") for pkg in (net_rules, nccl_rules) for name in pkg.RULES
]
MINE = tuple(m.RULE.id for m in MODULES)
A3 = "a3mega-h100-2node-allreduce.txt"
HOST_A, HOST_B = "ztan-mig-235z", "ztan-mig-gq73"
GIB = 1 << 30


def analyze(path: Path, settings: Settings | None = None) -> Result:
    """helpers.analyze restricted to the net and nccl rules (fast, and independent of other areas)."""
    con = connect(None)
    work = path.parent / f"work-{path.name}"
    work.mkdir(exist_ok=True)
    load(con, [path], work, Limits(), jobs=1)
    findings, outcomes = run_rules(con, MODULES, settings or load_settings())
    return Result(findings, {o.rule: o for o in outcomes}, con)


def concerns(result: Result) -> list[str]:
    return [
        f"{f.rule}: {f.message}"
        for f in result.findings
        if f.severity in (Severity.CRITICAL, Severity.WARNING)
    ]


# -- building logs -----------------------------------------------------------------------------------


def nccl_log(
    host_a: str, host_b: str, scale: float = 1.0, large_only: bool = True, text: str | None = None
) -> str:
    """The real a3mega log with its two hosts renamed and every busbw cell multiplied by scale."""
    lines = []
    for line in (text or fixture("nccl-tests", A3)).splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit() and len(tokens) >= 13:
            if large_only and int(tokens[0]) < GIB:
                continue
            for i in (7, 11):  # out-of-place and in-place busbw
                line = re.sub(
                    rf"(?<=\s){re.escape(tokens[i])}(?=\s)", f"{float(tokens[i]) * scale:.2f}", line, count=1
                )
        lines.append(line.replace(HOST_A, host_a).replace(HOST_B, host_b))
    return "\n".join(lines) + "\n"


def hostname(i: int) -> str:
    return f"ip-10-0-0-{i}"


def node_name(i: int) -> str:
    return f"node-{i:02d}"


def matrix(
    root: Path,
    scale: dict[tuple[int, int], float] | None = None,
    n: int = 8,
    blocks: dict[int, str] | None = None,
    base: float = 1.2,
    noise: float = 0.03,
) -> Path:
    """A cluster bundle: n node bundles and all n*(n-1)/2 pairwise logs in extra/.

    Every pair runs at base x (1 + a deterministic noise in [-noise, +noise]) x scale[pair]."""
    cluster = root / "cluster"
    cluster.mkdir()
    for i in range(1, n + 1):
        meta = {"hostname": f"{hostname(i)}.ec2.internal", "instance_type": "p5.48xlarge"}
        if blocks:
            meta["network_node_layers"] = f"nn-top,nn-spine,{blocks[i]}"
        write_node(cluster, node_name(i), {}, meta=meta)
    extra = cluster / "extra"
    extra.mkdir()
    for k, (i, j) in enumerate(combinations(range(1, n + 1), 2)):
        jitter = noise * ((k * 5) % 7 - 3) / 3  # -noise .. +noise, spread over the pairs
        factor = base * (1 + jitter) * (scale or {}).get((i, j), 1.0)
        # ranks print the short EC2 name: matched back to the node bundles by analyzer.judge.hosts
        (extra / f"nccl-pair-{i:02d}-{j:02d}.txt").write_text(nccl_log(hostname(i), hostname(j), factor))
    return cluster


def with_node(i: int, factor: float) -> dict[tuple[int, int], float]:
    return {(a, b): factor for a, b in combinations(range(1, 9), 2) if i in (a, b)}


def verified_settings() -> Settings:
    settings = load_settings()
    settings.sku = copy.deepcopy(settings.sku)
    settings.sku["p5.48xlarge"]["multi_node_verified"] = True
    return settings


# -- pairwise localisation (the 8-node matrix) -------------------------------------------------------


def test_pair_slow_names_the_one_bad_node(tmp_path: Path) -> None:
    res = analyze(matrix(tmp_path, scale=with_node(3, 0.6)))
    slow = res.of("nccl.pair.slow")
    assert [(f.severity, f.node) for f in slow] == [(Severity.CRITICAL, "node-03")]
    params = slow[0].params
    assert params["slow_pairs_per_node"]["node-03"] == "7/7"
    assert params["slow_pairs_per_node"]["node-01"] == "1/7"
    assert params["node_slow_pairs"] == 7 and params["rest_max_slow_pairs"] == 1
    assert slow[0].route.owner == "node-hardware" and "§ F" in slow[0].route.target
    assert "node common to the slow pairs" in slow[0].message
    assert slow[0].evidence and slow[0].evidence[0].file.startswith("extra/nccl-pair-")
    assert slow[0].evidence[0].text and slow[0].evidence[0].text.split()[0].isdigit()
    # the pairwise straggler view agrees; no critical names any other node
    assert [f.node for f in res.of("nccl.busbw.straggler")] == ["node-03"]
    assert {f.node for f in res.findings if f.severity == Severity.CRITICAL} == {"node-03"}


def test_pair_slow_one_bad_link_blames_no_node(tmp_path: Path) -> None:
    res = analyze(matrix(tmp_path, scale={(2, 5): 0.6}))
    slow = res.of("nccl.pair.slow")
    assert [(f.severity, f.node) for f in slow] == [(Severity.INFO, None)]
    assert "noise" in slow[0].message and "re-run" in slow[0].message
    assert slow[0].params["unexplained_pairs"] == [["node-02", "node-05"]]
    assert not [f for f in res.findings if f.severity == Severity.CRITICAL]
    assert not res.of("nccl.busbw.straggler")


def test_pair_slow_shared_block_is_link_or_spine(tmp_path: Path) -> None:
    blocks = {i: "nn-leaf-a" if i <= 4 else "nn-leaf-b" for i in range(1, 9)}
    res = analyze(matrix(tmp_path, scale={(1, 5): 0.6, (2, 6): 0.6, (3, 7): 0.6}, blocks=blocks))
    slow = res.of("nccl.pair.slow")
    assert [(f.severity, f.node) for f in slow] == [(Severity.WARNING, None)]
    assert slow[0].route.owner == "placement-capacity"
    assert "link or spine" in slow[0].message
    assert slow[0].params["blocks"] == ["nn-leaf-a", "nn-leaf-b"]
    assert not [f for f in res.findings if f.severity == Severity.CRITICAL]


def test_pair_slow_spread_without_blocks_is_warning_not_node(tmp_path: Path) -> None:
    res = analyze(matrix(tmp_path, scale={(1, 5): 0.6, (2, 6): 0.6}))
    slow = res.of("nccl.pair.slow")
    assert [(f.severity, f.node) for f in slow] == [(Severity.WARNING, None)]
    assert "no node blamed" in slow[0].message


def test_noise_only_matrix_raises_nothing(tmp_path: Path) -> None:
    res = analyze(matrix(tmp_path))
    assert concerns(res) == []
    for rule in ("nccl.pair.slow", "nccl.pair.outlier", "nccl.busbw.straggler", "nccl.busbw.below_expected"):
        assert res.outcome(rule) == "pass", rule


def test_pair_outlier_flags_a_pair_a_little_low(tmp_path: Path) -> None:
    res = analyze(matrix(tmp_path, scale={(4, 6): 0.9}))
    out = res.of("nccl.pair.outlier")
    assert [(f.severity, f.params["pair"]) for f in out] == [(Severity.WARNING, ["node-04", "node-06"])]
    assert out[0].params["below_mean_pct"] > 5
    assert not res.of("nccl.pair.slow")  # 10 % is not the drain-grade line


# -- busbw against the instance type --------------------------------------------------------------------


def one_node(tmp_path: Path, text: str, instance_type: str = "p5.48xlarge", name: str = "node-01") -> Path:
    root = tmp_path / "b"
    root.mkdir(exist_ok=True)
    meta = {"instance_type": instance_type}
    write_node(root, name, {"cmd/nccl-tests.txt": ("nccl-tests", text)}, meta=meta)
    return root / name


def test_below_expected_unverified_is_warning(tmp_path: Path) -> None:
    # the real run peaks at 338.82 GB/s at 8 GiB: below the p5 multi-node warning line (360)
    res = analyze(one_node(tmp_path, fixture("nccl-tests", A3)))
    found = res.of("nccl.busbw.below_expected")
    assert [f.severity for f in found] == [Severity.WARNING]
    assert found[0].params["busbw_gbps"] == 338.82 and found[0].params["scope"] == "multi_node"
    assert "unverified expectation" in found[0].message
    assert found[0].evidence[0].text and "8589934592" in found[0].evidence[0].text


def test_below_expected_judges_the_largest_size_when_1gib_never_reached(tmp_path: Path) -> None:
    text = fixture("nccl-tests", A3)
    cut = "\n".join(line for line in text.splitlines() if not re.match(r"\s+\d{10}\s", line))
    res = analyze(one_node(tmp_path, cut))
    (found,) = res.of("nccl.busbw.below_expected")
    assert found.params["size_bytes"] == 536870912 and found.params["reached_large_size"] is False
    assert "never reached 1 GiB" in found.message


def test_below_expected_critical_only_when_verified_and_peers_agree(tmp_path: Path) -> None:
    # one slow link (not a slow node: pairs nccl.pair.slow localises to a node are folded into its finding)
    cluster = matrix(tmp_path, scale={(3, 4): 0.6})
    res = analyze(cluster)
    assert {f.severity for f in res.of("nccl.busbw.below_expected")} == {Severity.WARNING}
    res = analyze(cluster, verified_settings())
    found = res.of("nccl.busbw.below_expected")
    assert len(found) == 1 and {f.severity for f in found} == {Severity.CRITICAL}
    assert found[0].params["nodes"] == ["node-03", "node-04"] and found[0].params["peers_agree"]


def test_below_expected_passes_a_fast_run_and_does_not_examine_unknown_types(tmp_path: Path) -> None:
    res = analyze(one_node(tmp_path, nccl_log(HOST_A, HOST_B, 1.2, large_only=False)))
    assert res.outcome("nccl.busbw.below_expected") == "pass"
    # a type sku.toml has no line for: the run is not held to anything, so it is not examined, never a pass
    res = analyze(one_node(tmp_path, fixture("nccl-tests", A3), "a3-megagpu-8g", "node-02"))
    outcome = res.outcomes["nccl.busbw.below_expected"]
    assert outcome.outcome == "skipped" and not res.of("nccl.busbw.below_expected")
    assert "no expected multi-node busbw line for instance type a3-megagpu-8g" in (outcome.reason or "")
    assert "node-02" in outcome.nodes_without_data


# -- per-node straggler from single-node runs ----------------------------------------------------------


def test_straggler_single_node_runs(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    for i in range(1, 6):
        host = hostname(i)
        text = nccl_log(host, host, 0.7 if i == 2 else 1.0 + i / 100)  # one host: a single-node run
        meta = {"hostname": host, "instance_type": "p5.48xlarge"}
        write_node(cluster, node_name(i), {"cmd/nccl-tests.txt": ("nccl-tests", text)}, meta=meta)
    res = analyze(cluster)
    found = res.of("nccl.busbw.straggler")
    assert [(f.node, f.severity) for f in found] == [("node-02", Severity.WARNING)]
    assert found[0].params["peers"] == 4 and found[0].params["metric"].startswith("single-node")
    # four nodes = three peers: not enough for peer statistics, so not examined (never a pass)
    (cluster / "node-05").rename(tmp_path / "away")
    few = analyze(cluster)
    assert few.outcome("nccl.busbw.straggler") == "skipped"
    reason = few.outcomes["nccl.busbw.straggler"].reason or ""
    assert reason.startswith("too few peers: 3 of 4 nodes"), reason


# -- correctness, transport, log errors ----------------------------------------------------------------


def test_wrong_results_are_critical(tmp_path: Path) -> None:
    text = fixture("nccl-tests", A3, {"338.82      0    47743": "338.82      5    47743"})
    (found,) = analyze(one_node(tmp_path, text)).of("nccl.test.wrong")
    assert found.severity == Severity.CRITICAL and found.params["wrong"] == 5
    assert found.node == "node-01" and "8589934592" in (found.evidence[0].text or "")


def test_out_of_bounds_values_are_critical(tmp_path: Path) -> None:
    text = fixture("nccl-tests", A3, {"# Out of bounds values : 0 OK": "# Out of bounds values : 3 FAILED"})
    (found,) = analyze(one_node(tmp_path, text)).of("nccl.test.wrong")
    assert found.params["oob_values"] == 3 and found.params["wrong"] == 0


def test_correct_run_passes_wrong(tmp_path: Path) -> None:
    assert analyze(one_node(tmp_path, fixture("nccl-tests", A3))).outcome("nccl.test.wrong") == "pass"


def test_socket_fallback_is_critical(tmp_path: Path) -> None:
    res = analyze(one_node(tmp_path, fixture("nccl-tests", "nccl-398-ofi-warn-socket-fallback.txt")))
    (found,) = res.of("nccl.transport.tcp_fallback")
    assert found.severity == Severity.CRITICAL and found.params["transport"] == "socket"
    assert "NET/Socket" in (found.evidence[0].text or "")


def test_efa_run_has_no_tcp_fallback(tmp_path: Path) -> None:
    """A log whose NCCL lines show the EFA path (aws-ofi-nccl over libfabric efa) passes; a log that
    shows no transport at all (no NCCL INFO lines: the A3 Mega results alone) is not examined."""
    res = analyze(
        one_node(tmp_path, fixture("nccl-tests", "nccl-527-aws-libfabric-channels.txt"), name="efa")
    )
    assert res.outcome("nccl.transport.tcp_fallback") == "pass"
    silent = analyze(one_node(tmp_path, fixture("nccl-tests", A3), name="silent"))
    assert silent.outcome("nccl.transport.tcp_fallback") == "skipped"
    assert silent.outcome("nccl.log.errors") == "skipped"


def test_log_errors_one_finding_per_host_and_code(tmp_path: Path) -> None:
    res = analyze(one_node(tmp_path, fixture("nccl-tests", "nccl-398-ofi-warn-socket-fallback.txt")))
    (found,) = res.of("nccl.log.errors")
    assert found.severity == Severity.WARNING and found.params["code"] == "EFA_INIT_FAIL"
    assert found.params["count"] == 2 and found.node == "ip-172-31-0-112"
    assert found.evidence[0].line == 1


def test_log_errors_cuda_failure_is_critical_and_host_matched(tmp_path: Path) -> None:
    first = "ip-172-31-0-112:8166:8166 [7] ofi_init:700 NCCL WARN NET/OFI Only EFA provider is supported"
    text = fixture(
        "nccl-tests",
        "nccl-398-ofi-warn-socket-fallback.txt",
        {
            first: "ip-172-31-0-112:8166:8166 [7] enqueue.cc:215 NCCL WARN Cuda failure 'unspecified launch failure'"
        },
    )
    root = tmp_path / "b"
    root.mkdir()
    write_node(
        root, "node-07", {"cmd/nccl-tests.txt": ("nccl-tests", text)}, meta={"hostname": "ip-172-31-0-112"}
    )
    found = {f.params["code"]: f for f in analyze(root / "node-07").of("nccl.log.errors")}
    assert found["CUDA_ERROR"].severity == Severity.CRITICAL and found["CUDA_ERROR"].node == "node-07"
    assert found["EFA_INIT_FAIL"].params["count"] == 1


def test_log_errors_info_only_passes(tmp_path: Path) -> None:
    text = fixture(
        "nccl-tests",
        "nccl-398-ofi-warn-socket-fallback.txt",
        {"NCCL WARN NET/OFI Only EFA": "NCCL INFO NET/OFI Only EFA"},
    )
    assert analyze(one_node(tmp_path, text)).outcome("nccl.log.errors") == "pass"


# -- healthy real samples --------------------------------------------------------------------------------


def test_real_healthy_logs_raise_nothing(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    samples = {
        "gcp-a3": ("a3-megagpu-8g", A3),
        "p5-eks": ("p5.48xlarge", "eks-blueprints-p5-2node-mpirun-prefixed.txt"),
        "p3dn": ("p3dn.24xlarge", "aws-ofi-nccl-33-p3dn-2node-old-cols.txt"),
        "p4d": ("p4d.24xlarge", "aws-ofi-nccl-65-p4d-oldest-header.txt"),
    }
    for node, (itype, name) in samples.items():
        files = {"cmd/nccl-tests.txt": ("nccl-tests", fixture("nccl-tests", name))}
        write_node(cluster, node, files, meta={"instance_type": itype})
    res = analyze(cluster)
    assert [c for c in concerns(res) if c.startswith("nccl.")] == []
    assert all(res.outcome(r) in ("pass", "skipped") for r in MINE if r.startswith("nccl."))


def test_localise_two_bad_nodes_and_a_partial_matrix() -> None:
    from analyzer.judge.rules.nccl.pair_slow import localise

    t = {
        "below_median_fraction": 0.2,
        "node_share": 0.5,
        "node_min_slow_pairs": 2,
        "rest_factor": 2,
        "block_share": 0.8,
    }
    nodes = [node_name(i) for i in range(1, 9)]
    values = {(a, b): 250.0 if {a, b} & {"node-02", "node-07"} else 400.0 for a, b in combinations(nodes, 2)}
    loc = localise(values, {}, t)
    assert loc.suspects == ["node-02", "node-07"] and loc.rest == 2 and loc.left == []
    # a node tested in one pair only cannot be told from its partner
    values = {("node-01", "node-02"): 200.0, **{(a, b): 400.0 for a, b in combinations(nodes[1:], 2)}}
    loc = localise(values, {}, t)
    assert loc.suspects == [] and loc.left == [("node-01", "node-02")]


# -- several tests in one log (nccl_run.run) ----------------------------------------------------------


def test_two_tests_in_one_log_are_judged_apart(tmp_path: Path) -> None:
    # the real a3mega log twice in one file, a fast re-run (x1.2) then the real (slow) run: one finding,
    # on the second run, not a merge of both
    fast = "# Collective test starting: all_reduce_perf\n" + nccl_log(HOST_A, HOST_B, 1.2, large_only=False)
    slow = "# Collective test starting: all_reduce_perf\n" + fixture("nccl-tests", A3)
    res = analyze(one_node(tmp_path, fast + slow))
    (found,) = res.of("nccl.busbw.below_expected")
    assert found.params["busbw_gbps"] == 338.82
    assert found.evidence[0].line is not None and found.evidence[0].line > len(fast.splitlines())


def test_wrong_results_in_the_second_test_only(tmp_path: Path) -> None:
    good = fixture("nccl-tests", A3)
    bad = fixture("nccl-tests", A3, {"338.82      0    47743": "338.82      5    47743"})
    (found,) = analyze(one_node(tmp_path, good + bad)).of("nccl.test.wrong")
    assert found.params["wrong"] == 5
    assert found.evidence[0].line is not None and found.evidence[0].line > len(good.splitlines())
