"""Every input named: anything given or found that is not read is named with why on stderr, in the terminal
report, the Markdown (--md), the HTML (--html) and the JSON (``verdict.unread_inputs``), and ``analyze``
exits 5; a file read for people but parsed by no parser is listed as such; an input no reader claims ends
in exit 3 naming it.  One test per place an input can hide.

Inputs are the shipped sample bundles (sample_bundles/, copied to tmp_path and edited as each test says) and
real captures from tests/fixtures.  The file no parser reads is an operator's notes (``NOTES``, ``HANDOVER``:
hand-written, the tests assert first that no parser recognises them); a training job's log, which was such a
file before the job-log parser, is a real one (``JOB_LOG``, tests/fixtures/job-log/) and is now read wherever
files are read by content: a cluster's ``extra/``, a node bundle's ``extra/`` (``collector.sh --add``) or
``cmd/``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from markupsafe import escape

import parsers
from analyzer.cli import cli
from analyzer.fleet.inputs import list_inputs
from analyzer.intake.bundle import discover
from analyzer.intake.safe_read import Limits
from tests.conftest import FIXTURES, SAMPLES, make_tar

NOTES = "node p5-node-02 was rebooted by ops at 09:00 after the job hung\n"
HANDOVER = "handover: job 48213 hung at 02:07, p5-node-01 drained, ticket opened with the cluster team\n"
#: a real training job's log: PyTorch's NCCL watchdog timing out ALLREDUCE SeqNum 808 on ranks 1, 0 and 2
JOB_LOG = FIXTURES / "job-log" / "basicsr-737-pg-guid-default-pg.txt"
MNDIAG = FIXTURES / "dcgm-mndiag" / "dcgmi-mndiag-unit-test-response-3hosts-2gpus-fail.txt"
SMI_Q = FIXTURES / "nvidia-smi-q" / "della-h100-545-single-no-blank-after-banner.txt"
NCCL_LOG = FIXTURES / "nccl-tests" / "a3mega-h100-2node-allreduce.txt"


@dataclass
class Run:
    """One ``hptriage analyze`` with every report written."""

    code: int
    stdout: str
    stderr: str
    md: str
    html: str
    doc: dict[str, Any]

    @property
    def unread(self) -> dict[str, str]:
        return {u["path"]: u["reason"] for u in self.doc["verdict"]["unread_inputs"]}


def _analyze(tmp_path: Path, *inputs: Path) -> Run:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    json_out, md_out, html_out = out / "f.json", out / "r.md", out / "r.html"
    args = [
        "analyze",
        *map(str, inputs),
        "--json",
        str(json_out),
        "--md",
        str(md_out),
        "--html",
        str(html_out),
    ]
    # wide lines: the terminal wraps to COLUMNS and would cut a long path
    result = CliRunner(env={"COLUMNS": "2000"}).invoke(cli, [*args, "--color", "never", "--jobs", "1"])
    read = lambda p: p.read_text(encoding="utf-8") if p.exists() else ""  # noqa: E731
    doc = json.loads(json_out.read_text()) if json_out.exists() else {}
    return Run(result.exit_code, result.stdout, result.stderr, read(md_out), read(html_out), doc)


def _named_everywhere(run: Run, path: str, why: str) -> None:
    """``path`` is named with ``why`` on stderr, in the terminal, Markdown, HTML and JSON, and the run exits 5."""
    assert run.code == 5, (run.code, run.stderr)
    assert f"not read: {path}: " in run.stderr and why in run.stderr.split(path, 1)[1].splitlines()[0]
    assert path in run.stdout and why in run.stdout.split(path, 1)[1].splitlines()[0]
    assert f"`{path}`: " in run.md and why in run.md.split(f"`{path}`", 1)[1].splitlines()[0]
    shown = str(escape(path))
    assert (
        f"<code>{shown}</code>" in run.html
        and str(escape(why)) in run.html.split(f"<code>{shown}</code>", 1)[1]
    )
    assert why in run.unread[path]


def _cluster(tmp_path: Path, scenario: str = "xid-ecc-3node") -> Path:
    dest = tmp_path / "cluster"
    shutil.copytree(SAMPLES / scenario / "bundle", dest)
    return dest


def _node_names(run: Run) -> set[str]:
    return {n["node"] for n in run.doc["nodes"]}


# --- a node folder without meta.env --------------------------------------------------------------------


def test_a_node_folder_without_meta_env_is_read_under_its_name_and_named(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    (cluster / "p5-node-02" / "meta.env").unlink()
    run = _analyze(tmp_path, cluster)
    _named_everywhere(run, str(cluster / "p5-node-02"), "no meta.env: read as a node bundle")
    assert "cluster, instance type, collection time) is unknown" in run.unread[str(cluster / "p5-node-02")]
    # the node is read, not dropped: its own kernel log's Xids are findings on it, in every report
    assert _node_names(run) == {"h100-node-04", "p5-node-01", "p5-node-02", "p5-node-03"}
    xids = [f for f in run.doc["findings"] if f["node"] == "p5-node-02" and f["rule"].startswith("gpu.xid")]
    assert xids and all(e["file"] == "p5-node-02/cmd/dmesg.txt" for f in xids for e in f["evidence"])
    assert "<td>p5-node-02</td>" in run.html  # the nodes table
    for text in (run.md, run.stdout):  # named by its findings, not only as an input not read
        others = [line for line in text.splitlines() if "p5-node-02" in line and "meta.env" not in line]
        assert others, text
    # meta.env's absence is a parse problem of that node too
    assert ("p5-node-02", "meta.env missing") in {(p["node"], p["error"]) for p in run.doc["parse_problems"]}


def test_a_node_folder_without_meta_env_in_a_cluster_tarball(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    (cluster / "p5-node-03" / "meta.env").unlink()
    tarball = make_tar(cluster, tmp_path / "cluster.tar.gz")
    shutil.rmtree(cluster)
    run = _analyze(tmp_path, tarball)
    _named_everywhere(run, f"{tarball}!cluster/p5-node-03", "no meta.env: read as a node bundle")
    assert "p5-node-03" in _node_names(run)


def test_a_node_tarball_without_meta_env_is_read_and_named(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    (cluster / "p5-node-01" / "meta.env").unlink()
    tarball = make_tar(cluster / "p5-node-01", tmp_path / "hptriage-p5-node-01.tar.gz")
    run = _analyze(tmp_path, tarball, cluster / "p5-node-03")
    _named_everywhere(run, str(tarball), "no meta.env: read as a node bundle (it holds manifest.tsv, cmd/)")
    assert _node_names(run) == {"p5-node-01", "p5-node-03"}


def test_a_folder_that_is_no_node_bundle_is_not_taken_for_one(tmp_path: Path) -> None:
    """Only a folder holding a bundle's parts (manifest.tsv or cmd/) is read without meta.env; a folder
    of other files is walked, and its files are named as loose files."""
    cluster = _cluster(tmp_path)
    (cluster / "notes").mkdir()
    (cluster / "notes" / "ops.txt").write_text(NOTES)
    run = _analyze(tmp_path, cluster)
    assert "notes" not in _node_names(run)
    _named_everywhere(run, str(cluster / "notes" / "ops.txt"), "loose file beside the bundles, not read")


# --- files no parser recognises ----------------------------------------------------------------------


def test_unrecognised_files_in_a_cluster_extra_folder_are_named(tmp_path: Path) -> None:
    assert parsers.detect_kind(NOTES) is None and parsers.detect_kind(HANDOVER) is None
    cluster = _cluster(tmp_path, "nccl-slow-node")
    (cluster / "extra" / "handover.txt").write_text(HANDOVER)
    (cluster / "extra" / "notes.txt").write_text(NOTES)
    run = _analyze(tmp_path, cluster)
    for name in ("handover.txt", "notes.txt"):
        _named_everywhere(run, str(cluster / "extra" / name), "no parser recognises its content")
    # the nccl-tests logs beside them are read as before
    assert any(f["rule"].startswith("nccl.") for f in run.doc["findings"])
    assert len(run.unread) == 2


def test_a_job_log_in_a_cluster_extra_folder_is_read(tmp_path: Path) -> None:
    """A Slurm job's .err in extra/ is a job log: read (no unread input), its watchdog timeout a finding."""
    cluster = _cluster(tmp_path, "nccl-slow-node")
    shutil.copy(JOB_LOG, cluster / "extra" / "slurm-48213.err")
    run = _analyze(tmp_path, cluster)
    assert run.code == 0 and run.unread == {}, run.unread
    hangs = [f for f in run.doc["findings"] if f["params"].get("code") == "WATCHDOG_TIMEOUT"]
    assert [(f["rule"], f["severity"], f["params"]["seq_num"]) for f in hangs] == [
        ("nccl.collective.hung", "critical", 808)
    ]
    assert hangs[0]["evidence"][0]["file"] == "extra/slurm-48213.err"
    assert "SeqNum 808" in run.md and "SeqNum 808" in run.stdout


def test_a_job_log_added_to_a_node_bundle_is_read(tmp_path: Path) -> None:
    """``collector.sh --add slurm-48213.err`` puts the log in the node's extra/ with an empty manifest kind:
    recognised by content and read; so is one copied into cmd/ by hand."""
    cluster = _cluster(tmp_path)
    node = cluster / "p5-node-01"
    (node / "extra").mkdir()
    shutil.copy(JOB_LOG, node / "extra" / "slurm-48213.err")
    shutil.copy(FIXTURES / "job-log" / "kohya-1434-uncorrectable-ecc.txt", node / "cmd" / "job.txt")
    data = JOB_LOG.read_bytes()  # the row collector.sh writes for it: no kind, its size and checksum
    with open(node / "manifest.tsv", "a", encoding="utf-8") as fh:
        fh.write(
            f"extra/slurm-48213.err\t\t-\t-\t{len(data)}\t{hashlib.sha256(data).hexdigest()}"
            "\tadded from /fsx/jobs/slurm-48213.err\t\n"
        )
    run = _analyze(tmp_path, cluster)
    assert not [p for p in run.unread if "p5-node-01" in p], run.unread
    rules = {(f["rule"], f["params"].get("code")) for f in run.doc["findings"]}
    assert ("nccl.collective.hung", "WATCHDOG_TIMEOUT") in rules and (
        "gpu.cuda.error",
        "cudaErrorECCUncorrectable",
    ) in rules


def test_unrecognised_files_in_an_extra_folder_of_a_cluster_tarball_are_named(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, "nccl-slow-node")
    (cluster / "extra" / "handover.txt").write_text(HANDOVER)
    tarball = make_tar(cluster, tmp_path / "c.tar.gz", arcname="c")
    shutil.rmtree(cluster)
    run = _analyze(tmp_path, tarball)
    _named_everywhere(run, f"{tarball}!c/extra/handover.txt", "no parser recognises its content")


def test_unrecognised_files_of_a_node_bundle_are_named(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    node = cluster / "p5-node-01"
    # a probe the manifest does not list, in cmd/ (an operator's notes copied there by hand)
    (node / "cmd" / "job.txt").write_text(HANDOVER)
    # a manifest row whose kind no parser has, holding text no parser recognises
    (node / "cmd" / "gpu-burn.txt").write_text("gpu_burn: 100.0%  proc'd: 0 errors\n")
    with open(node / "manifest.tsv", "a", encoding="utf-8") as fh:
        fh.write("cmd/gpu-burn.txt\tgpu-burn\t0\t60.0\t36\t-\tgpu_burn 60\t-\n")
    # a copied host file with no kind in the manifest, and a stderr of no probe
    (node / "files" / "etc").mkdir(parents=True)
    (node / "files" / "etc" / "fstab").write_text("UUID=0a1b / ext4 defaults 0 1\n")
    (node / "cmd" / "lost.err").write_text("lost: permission denied\n")
    run = _analyze(tmp_path, cluster)
    _named_everywhere(run, str(node / "cmd" / "job.txt"), "no parser recognises its content")
    _named_everywhere(
        run,
        str(node / "cmd" / "gpu-burn.txt"),
        "manifest kind 'gpu-burn' is unknown and no parser recognises",
    )
    _named_everywhere(run, str(node / "files" / "etc" / "fstab"), "no kind in manifest.tsv")
    _named_everywhere(run, str(node / "cmd" / "lost.err"), "stderr of a probe manifest.tsv does not list")
    assert len(run.unread) == 4


def test_a_manifest_kind_no_parser_has_is_still_read_when_its_content_is_recognised(tmp_path: Path) -> None:
    """Named in the manifest by an unknown kind but holding a real nvidia-smi -q: read by content (a parse
    problem says so), not an unread input."""
    cluster = _cluster(tmp_path)
    node = cluster / "p5-node-03"
    shutil.copy(SMI_Q, node / "cmd" / "smi-copy.txt")
    with open(node / "manifest.tsv", "a", encoding="utf-8") as fh:
        fh.write("cmd/smi-copy.txt\tnvidia-smi-query\t0\t0.1\t1\t-\tnvidia-smi -q\t-\n")
    run = _analyze(tmp_path, cluster)
    assert run.code == 0, run.stderr
    assert run.unread == {}
    assert any("unknown kind 'nvidia-smi-query'" in p["error"] for p in run.doc["parse_problems"])


def test_a_file_of_a_node_tarball_is_named_inside_the_tarball(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    (cluster / "p5-node-01" / "cmd" / "job.txt").write_text(HANDOVER)
    tarball = make_tar(cluster / "p5-node-01", tmp_path / "n1.tar.gz", arcname="hptriage-p5-node-01")
    run = _analyze(tmp_path, tarball)
    _named_everywhere(run, f"{tarball}!hptriage-p5-node-01/cmd/job.txt", "no parser recognises its content")


# --- files read for people, not parsed ------------------------------------------------------------------


def test_files_kept_for_people_are_listed_as_not_parsed_not_as_unread(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    for name in ("p5-node-01", "p5-node-03"):
        node = cluster / name
        (node / "cmd" / "df-h.txt").write_text(
            "Filesystem  Size  Used Avail Use% Mounted on\n/dev/root  97G  40G  57G  42% /\n"
        )
        with open(node / "manifest.tsv", "a", encoding="utf-8") as fh:
            fh.write("cmd/df-h.txt\t-\t0\t0.01\t80\t-\tdf -h\t-\n")
    (cluster / "p5-node-01" / "redaction.txt").write_text("# hptriage --redact\nnothing to scan\n")
    run = _analyze(tmp_path, cluster)
    assert run.code == 0, run.stderr  # kept on purpose: the run read everything it was given
    assert run.unread == {}
    listed = {(e["path"], e["nodes"]): e["reason"] for e in run.doc["inputs"]["not_parsed"]}
    assert listed == {
        ("cmd/df-h.txt", 2): "kind '-' in manifest.tsv: kept for people",
        ("redaction.txt", 1): "the collector's record of what it redacted: kept for people",
    }
    assert "read for people, not parsed" in run.stdout and "cmd/df-h.txt on 2 node(s)" in run.stdout
    assert "## Read for people, not parsed" in run.md and "`cmd/df-h.txt` on 2 node(s)" in run.md
    assert "Read for people, not parsed" in run.html and "<code>redaction.txt</code> on 1 node(s)" in run.html


# --- loose files beside the bundles ------------------------------------------------------------------------


def test_loose_files_beside_the_bundles_are_named(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    (cluster / "README.md").write_text("collected for case 4711\n")
    shutil.copy(JOB_LOG, cluster / "slurm-48213.out")  # a real job log, outside extra/
    shutil.copy(NCCL_LOG, cluster / "allreduce-2node.log")  # a real nccl-tests log, outside extra/
    run = _analyze(tmp_path, cluster)
    _named_everywhere(run, str(cluster / "README.md"), "loose file beside the bundles, not read")
    _named_everywhere(run, str(cluster / "slurm-48213.out"), "it looks like job-log output, but lies outside")
    _named_everywhere(
        run, str(cluster / "allreduce-2node.log"), "it looks like nccl-tests output, but lies outside"
    )
    assert "extra/ folder" in run.unread[str(cluster / "allreduce-2node.log")]
    assert len(run.unread) == 3
    assert not [p for p in run.doc["parse_problems"] if str(cluster) in p["file"]]  # unread, no parse problem


def test_a_folder_too_deep_and_a_checksum_without_its_tarball_are_named(tmp_path: Path) -> None:
    root = tmp_path / "case"
    deep = root / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle" / "p5-node-01", root / "p5-node-01")
    (deep / "x.txt").write_text(NOTES)
    (tmp_path / "gone.tar.gz").write_bytes(b"")  # lies there, but is not given
    lone = tmp_path / "gone.tar.gz.sha256"
    lone.write_text("0" * 64 + "  gone.tar.gz\n")
    found = discover([root, lone], tmp_path / "work", Limits())
    unread = {u.path: u.reason for u in found.unread}
    assert "more than 3 levels deep: not searched" in unread[str(root / "a" / "b" / "c")]
    assert unread[str(lone)] == "checksum file whose tarball was not given: not read"


# --- inputs no reader claims ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: shutil.copy(MNDIAG, d / "mndiag.json"), "read as cluster-wide files"),
        (lambda d: (d / "notes.txt").write_text(NOTES), "no reader of another tool's input claims it"),
        (lambda d: shutil.copy(SMI_Q, d / "smi.txt"), "it looks like nvidia-smi-q output"),
    ],
    ids=["dcgm-mndiag-json", "notes", "nvidia-smi-q-output"],
)
def test_an_input_given_alone_that_holds_no_node_bundle_is_named(tmp_path: Path, make: Any, why: str) -> None:
    given = tmp_path / "given"
    given.mkdir()
    make(given)
    path = next(given.iterdir())
    run = _analyze(tmp_path, path)
    assert run.code == 3
    assert run.stderr.startswith("hptriage: error: no usable bundle in the input")
    assert f"({path}: " in run.stderr and why in run.stderr.split(str(path), 1)[1]


def test_every_input_given_is_named_when_none_holds_a_node_bundle(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, "nccl-slow-node")
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    run = _analyze(tmp_path, cluster / "extra", MNDIAG, notes)
    assert run.code == 3
    for path in (cluster / "extra", MNDIAG, notes):
        assert f"{path}: " in run.stderr


# --- the fleet ingest lists what discovery reads --------------------------------------------------------


def test_fleet_listing_takes_a_node_folder_without_meta_env_and_names_loose_files(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    (cluster / "p5-node-02" / "meta.env").unlink()
    (cluster / "README.md").write_text("collected for case 4711\n")
    listing = list_inputs([cluster])
    assert str(cluster / "p5-node-02") in {i.path for i in listing.items}
    assert [p for p, _ in listing.skipped] == [str(cluster / "README.md")]
