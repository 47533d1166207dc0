"""nccl-tests runs are judged as runs: two runs of the same pairs are never pooled.

Base: the real-sample cluster ``sample_bundles/nccl-slow-node`` (8 p5 nodes; its extra/ holds the 28
pairwise logs made from the real a3mega 2-host all_reduce log, every pair with p5-node-05 ~40 % slow).
Derived (labelled here): a *healthy* run of the same 28 pairs, where each log of a pair with node 5 is
replaced by the sample's log of another pair of the same first node (node 6, or node 7 for the pair
with 6) with that host renamed ``ip-10-1-0-5``: every row a real row of the sample, node 5 as fast as
its peers.  Laid out as two ``extra/`` folders of one cluster, as two logs in one ``extra/`` (each a
whole sweep, one test per pair), and as one pair re-run in a second log of the same folder.

Pooled (the best run of each pair), the slow run vanishes; judged as runs, the slow pair is reported
with the run it comes from and the run where it was fine.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli
from tests.conftest import FIXTURES, SAMPLES
from tests.rules.helpers import write_node

SLOW = SAMPLES / "nccl-slow-node" / "bundle"
LOGS = sorted((SLOW / "extra").glob("nccl-pair-*.txt"))
A3 = FIXTURES / "nccl-tests" / "a3mega-h100-2node-allreduce.txt"


def _pair(log: Path) -> tuple[int, int]:
    m = re.match(r"nccl-pair-(\d\d)-(\d\d)\.txt$", log.name)
    assert m, log
    return int(m[1]), int(m[2])


def healthy_log(log: Path) -> str:
    """The log of the same pair in the healthy run (see the module docstring)."""
    i, j = _pair(log)
    if 5 not in (i, j):
        return log.read_text()
    other = i if j == 5 else j
    stand_in = 6 if other != 6 else 7
    a, b = sorted((other, stand_in))
    text = (SLOW / "extra" / f"nccl-pair-{a:02d}-{b:02d}.txt").read_text()
    assert f"on ip-10-1-0-{stand_in} " in text
    return text.replace(f"on ip-10-1-0-{stand_in} ", "on ip-10-1-0-5 ")


def busbw_8g(text: str) -> float:
    """The out-of-place busbw of the 8 GiB row: the figure the rules judge for these logs."""
    (row,) = [line.split() for line in text.splitlines() if line.split()[:1] == ["8589934592"]]
    return float(row[7])


def nodes_only(dest: Path) -> Path:
    """The sample's 8 node bundles, without its extra/."""
    shutil.copytree(SLOW, dest, ignore=shutil.ignore_patterns("extra"))
    return dest


def analyze(tmp_path: Path, *paths: Path) -> dict:
    out = tmp_path / f"f-{len(list(tmp_path.glob('f-*.json')))}.json"
    result = CliRunner().invoke(cli, ["analyze", *map(str, paths), "-q", "--json", str(out), "--jobs", "1"])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def nccl(doc: dict, rule: str) -> list[dict]:
    return [f for f in doc["findings"] if f["rule"] == rule]


def test_the_derived_healthy_run_is_healthy_and_the_sample_run_is_not(tmp_path: Path) -> None:
    """The two runs alone: the sample's names p5-node-05, the derived one names nothing."""
    cluster = nodes_only(tmp_path / "healthy")
    (cluster / "extra").mkdir()
    for log in LOGS:
        (cluster / "extra" / log.name).write_text(healthy_log(log))
    doc = analyze(tmp_path, cluster)
    assert not [f for f in doc["findings"] if f["rule"].startswith("nccl.")]
    assert doc["verdict"]["status"] == "no-concerns"
    doc = analyze(tmp_path, SLOW)
    assert [(f["node"], f["severity"]) for f in nccl(doc, "nccl.pair.slow")] == [("p5-node-05", "critical")]


@pytest.mark.parametrize("slow_first", [True, False], ids=["slow-run-first", "healthy-run-first"])
def test_two_extra_folders_of_the_same_pairs_are_two_runs(tmp_path: Path, slow_first: bool) -> None:
    """The node bundles with two extra/ folders (cluster/extra and cluster/<run>/extra), one run slow."""
    cluster = nodes_only(tmp_path / "cluster")
    slow_dir, fine_dir = ("extra", "rerun/extra") if slow_first else ("rerun/extra", "extra")
    shutil.copytree(SLOW / "extra", cluster / slow_dir)
    (cluster / fine_dir).mkdir(parents=True)
    for log in LOGS:
        (cluster / fine_dir / log.name).write_text(healthy_log(log))
    doc = analyze(tmp_path, cluster)
    assert doc["verdict"]["status"] == "concerns"
    assert [w["node"] for w in doc["verdict"]["worst_nodes"]] == ["p5-node-05"]
    (slow,) = nccl(doc, "nccl.pair.slow")
    slow_label = "cluster/extra/" if slow_first else "rerun/extra/"
    fine_label = "rerun/extra/" if slow_first else "cluster/extra/"
    assert slow["node"] == "p5-node-05" and slow["severity"] == "critical"
    assert slow["params"]["sweep"] == slow_label and slow["params"]["node_slow_pairs"] == 7
    assert f"slow pairs of the 28 pairwise runs of {slow_label}" in slow["message"]
    # every slow pair: its run, and the same pair fine in the other run, with both values
    folded = slow["params"]["folded_pairs"]
    assert len(folded) == 7
    for pair in folded:
        i, j = (int(n[-2:]) for n in pair["pair"])
        name = f"nccl-pair-{i:02d}-{j:02d}.txt"
        assert pair["file"] == slow_label + name and pair["run"] == pair["file"]
        assert pair["busbw_gbps"] == busbw_8g((SLOW / "extra" / name).read_text())
        [other] = pair["other_runs"]
        assert other["file"] == fine_label + name and other["verdict"] == "fine"
        assert other["busbw_gbps"] == busbw_8g(healthy_log(SLOW / "extra" / name))
    worst = folded[0]
    said = (
        f"{' + '.join(worst['pair'])} slow in run {worst['file']} ({worst['busbw_gbps']} GB/s), "
        f"fine in run {worst['other_runs'][0]['file']} ({worst['other_runs'][0]['busbw_gbps']} GB/s)"
    )
    assert said in slow["message"]
    assert "7 of the 7 slow pair(s) run elsewhere were fine there" in slow["message"]
    assert slow["evidence"] and all(e["file"].startswith(slow_label) for e in slow["evidence"])
    assert all(e["text"].split()[0] == "8589934592" for e in slow["evidence"])
    # the straggler view is per run too: low in the slow run, fine in the other
    (straggler,) = nccl(doc, "nccl.busbw.straggler")
    assert straggler["node"] == "p5-node-05" and straggler["params"]["sweep"] == slow_label
    assert [(o["sweep"], o["verdict"]) for o in straggler["params"]["other_sweeps"]] == [(fine_label, "fine")]
    assert f"fine in {fine_label}" in straggler["message"]
    # nothing from the healthy run names node 5, and the slow run's pairs are not reported twice
    assert not nccl(doc, "nccl.busbw.below_expected") and not nccl(doc, "nccl.pair.outlier")


@pytest.mark.parametrize("names", [("sweep-day1.log", "sweep-day2.log"), ("b-slow.log", "a-fine.log")])
def test_two_logs_each_holding_a_sweep_are_two_runs(tmp_path: Path, names: tuple[str, str]) -> None:
    """Two logs in one extra/, each the 28 pair tests one after another (one test per pair)."""
    cluster = nodes_only(tmp_path / "cluster")
    (cluster / "extra").mkdir()
    slow_name, fine_name = names
    (cluster / "extra" / slow_name).write_text("".join(log.read_text() for log in LOGS))
    (cluster / "extra" / fine_name).write_text("".join(healthy_log(log) for log in LOGS))
    doc = analyze(tmp_path, cluster)
    assert doc["verdict"]["status"] == "concerns"
    (slow,) = nccl(doc, "nccl.pair.slow")
    assert slow["node"] == "p5-node-05" and slow["severity"] == "critical"
    assert slow["params"]["sweep"] == f"extra/{slow_name}"
    by_pair = {tuple(p["pair"]): p for p in slow["params"]["folded_pairs"]}
    # the test number of a pair is its place in the sweep (logs in name order)
    test = 1 + [_pair(log) for log in LOGS].index((3, 5))
    pair = by_pair[("p5-node-03", "p5-node-05")]
    assert pair["run"] == f"extra/{slow_name} test {test}"
    assert pair["other_runs"][0]["run"] == f"extra/{fine_name} test {test}"
    assert pair["other_runs"][0]["verdict"] == "fine"
    assert f"slow in run extra/{slow_name} test " in slow["message"]
    assert f"fine in run extra/{fine_name} test " in slow["message"]


def test_a_pair_re_run_in_the_same_folder_is_said_slow_in_one_run_and_fine_in_the_other(
    tmp_path: Path,
) -> None:
    """The sample's 28 logs and a re-run of the pair 03-05 (healthy) beside them: the re-run does not
    replace the slow run; the node finding keeps its 7 slow pairs and says the re-run was fine."""
    cluster = tmp_path / "cluster"
    shutil.copytree(SLOW, cluster)
    original = SLOW / "extra" / "nccl-pair-03-05.txt"
    (cluster / "extra" / "nccl-pair-03-05-rerun.txt").write_text(healthy_log(original))
    doc = analyze(tmp_path, cluster)
    (slow,) = nccl(doc, "nccl.pair.slow")
    assert slow["node"] == "p5-node-05" and slow["params"]["node_slow_pairs"] == 7
    said = (
        f"p5-node-03 + p5-node-05 slow in run extra/nccl-pair-03-05.txt ({busbw_8g(original.read_text())} GB/s), "
        f"fine in run extra/nccl-pair-03-05-rerun.txt ({busbw_8g(healthy_log(original))} GB/s)"
    )
    assert said in slow["message"]
    # the re-run alone is one pair: too few to compare within, judged against the sweep it re-runs
    assert [f for f in doc["findings"] if f["rule"].startswith("nccl.")] == [
        slow,
        *nccl(doc, "nccl.busbw.straggler"),
    ]


def test_a_slow_re_run_of_a_healthy_pair_is_reported_with_both_runs(tmp_path: Path) -> None:
    """The healthy run of the 28 pairs, and the sample's (slow) log of the pair 03-05 as a re-run: the
    best-of-runs reading would say nothing; the re-run's slow pair is reported, with the run where the
    pair was fine."""
    cluster = nodes_only(tmp_path / "cluster")
    (cluster / "extra").mkdir()
    for log in LOGS:
        (cluster / "extra" / log.name).write_text(healthy_log(log))
    original = SLOW / "extra" / "nccl-pair-03-05.txt"
    shutil.copy(original, cluster / "extra" / "nccl-pair-03-05-rerun.txt")
    doc = analyze(tmp_path, cluster)
    (slow,) = nccl(doc, "nccl.pair.slow")
    assert slow["node"] is None and slow["params"]["unexplained_pairs"] == [["p5-node-03", "p5-node-05"]]
    assert slow["params"]["sweep"] == "extra/ (re-run 1)" and slow["params"]["reference_sweep"] == "extra/"
    assert "judged against the 28 pairwise runs of extra/" in slow["message"]
    said = (
        f"p5-node-03 + p5-node-05 slow in run extra/nccl-pair-03-05-rerun.txt ({busbw_8g(original.read_text())} "
        f"GB/s), fine in run extra/nccl-pair-03-05.txt ({busbw_8g(healthy_log(original))} GB/s)"
    )
    assert said in slow["message"]
    assert [e["file"] for e in slow["evidence"]] == ["extra/nccl-pair-03-05-rerun.txt"]
    # the slow run is also below the p5 line, said against its fine run
    (below,) = nccl(doc, "nccl.busbw.below_expected")
    assert below["params"]["run"] == "extra/nccl-pair-03-05-rerun.txt"
    assert [(o["run"], o["verdict"]) for o in below["params"]["other_runs"]] == [
        ("extra/nccl-pair-03-05.txt", "fine")
    ]
    assert doc["verdict"]["status"] == "concerns"


def test_a_node_slow_in_its_single_node_re_run_is_not_hidden_by_its_fast_run(tmp_path: Path) -> None:
    """Single-node runs (the real a3mega log with its two hosts renamed to the node's own, busbw as
    printed): five nodes with one run each, and node-02 with a second run in its extra/ whose busbw rows
    are scaled to 0.7 (derived).  The best-of-runs reading took node-02's fast run; each run is judged:
    the re-run against the peers of the first runs."""
    text = A3.read_text()
    cluster = tmp_path / "cluster"
    for i in range(1, 6):
        host = f"ip-10-0-0-{i}"
        own = text.replace("ztan-mig-235z", host).replace("ztan-mig-gq73", host)
        files = {"cmd/nccl-tests.txt": ("nccl-tests", _scaled(own, 1.0 + i / 100))}
        if i == 2:
            files["extra/nccl-tests-rerun.txt"] = ("nccl-tests", _scaled(own, 0.7))
        write_node(cluster, f"node-{i:02d}", files, meta={"hostname": host, "instance_type": "p5.48xlarge"})
    doc = analyze(tmp_path, cluster)
    (found,) = nccl(doc, "nccl.busbw.straggler")
    assert found["node"] == "node-02" and found["params"]["metric"] == "single-node all_reduce busbw"
    assert found["params"]["sweep"] == "node bundles (re-run 1)"
    assert found["params"]["runs"] == ["node-02/extra/nccl-tests-rerun.txt"]
    assert [(o["sweep"], o["verdict"]) for o in found["params"]["other_sweeps"]] == [("node bundles", "fine")]
    assert "fine in node bundles" in found["message"]


def _scaled(text: str, factor: float) -> str:
    """Every result row's busbw cells (out-of-place and in-place) times factor."""
    out = []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 13 and cells[0].isdigit() and cells[1].isdigit():
            for k in (7, 11):
                line = re.sub(
                    rf"(?<=\s){re.escape(cells[k])}(?=\s|$)", f"{float(cells[k]) * factor:.2f}", line, count=1
                )
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("again", [True, False], ids=["slow-in-both-runs", "fine-in-the-re-run"])
def test_one_slow_pair_slow_in_every_run_is_not_noise(tmp_path: Path, again: bool) -> None:
    """The healthy run of the 28 pairs with the sample's (slow) log of the pair 03-05 in its place (one
    slow pair, no node common), and a re-run of that pair: slow again (the sample's log) -> a warning,
    the link and not noise; fine (the healthy log) -> info, noise, with both runs said."""
    cluster = nodes_only(tmp_path / "cluster")
    (cluster / "extra").mkdir()
    for log in LOGS:
        (cluster / "extra" / log.name).write_text(healthy_log(log))
    slow_log = SLOW / "extra" / "nccl-pair-03-05.txt"
    (cluster / "extra" / slow_log.name).write_text(slow_log.read_text())
    rerun = slow_log.read_text() if again else healthy_log(slow_log)
    (cluster / "extra" / "nccl-pair-03-05-rerun.txt").write_text(rerun)
    doc = analyze(tmp_path, cluster)
    (slow,) = nccl(doc, "nccl.pair.slow")
    assert slow["node"] is None and slow["params"]["sweep"] == "extra/"
    assert slow["params"]["unexplained_pairs"] == [["p5-node-03", "p5-node-05"]]
    [other] = slow["params"]["unexplained_runs"][0]["other_runs"]
    assert other["run"] == "extra/nccl-pair-03-05-rerun.txt"
    assert other["verdict"] == ("slow" if again else "fine")
    if again:
        assert slow["severity"] == "warning" and "not noise" in slow["message"]
        assert slow["route"]["owner"] == "nccl-network" and "EFA counters" in slow["route"]["action"]
        assert "slow in run extra/nccl-pair-03-05-rerun.txt" in slow["message"]
    else:
        assert slow["severity"] == "info" and "noise, re-run it" in slow["message"]
        assert "fine in run extra/nccl-pair-03-05-rerun.txt" in slow["message"]
    # the re-run, slow, is said in the first run's finding, not reported again on its own
    assert len(nccl(doc, "nccl.pair.slow")) == 1
