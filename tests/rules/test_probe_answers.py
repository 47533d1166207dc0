"""A failed probe is evidence: the failure answers real tools give (tests/fixtures/probe-answers, with
provenance) are read from stdout, the probe's ``.err`` and the manifest's exit code, judged by the rules
that own them, and rank their node; a missing tool stays a coverage fact."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.judge.coverage import Coverage
from analyzer.model.report_data import not_examined
from analyzer.model.verdict import compute
from parsers.probe_answers import read_answers
from tests.conftest import FIXTURES
from tests.rules.helpers import Result, analyze, fixture, write_node

ANSWERS = FIXTURES / "probe-answers"
P5 = {"instance_type": "p5.48xlarge", "nproc": "192"}
H100_Q = "jp-simulator-8xh100-565-complete.txt"
#: fixture -> the answer it must give
EXPECTED = {
    "nvidia-smi--ci-runners-40-driver-unreachable.txt": "driver-unreachable",
    "nvidia-smi--qixuema-envs-4-curly-quote-wrapped.txt": "driver-unreachable",
    "nvidia-smi-q--nvidia-docker-1553-a-i0-device-handle.txt": "device-handle-error",
    "nvidia-smi--fics-cluster-53-no-space-device-handle.txt": "device-handle-error",
    "nvidia-smi--dcgm-exporter-604-short-domain.txt": "device-handle-error",
    "nvidia-smi--owod-81-gpu-lost.txt": "gpu-lost",
    "nvidia-smi--tinygrad-ogkm-47-nvml-mismatch.txt": "nvml-mismatch",
    "dcgmi-diag--dcgm-43-hostengine.txt": "hostengine-unreachable",
    "efa-ports--pib-2-ibv-devinfo-no-devices.txt": "no-ib-devices",
    "fi-info--libfabric-info-c-no-provider-stderr.txt": "no-provider",
    "fabricmanager--systemd-unit-not-found-stderr.txt": "unit-not-found",
}


def answer_text(name: str) -> str:
    return (ANSWERS / name).read_text(encoding="utf-8")


def test_every_fixture_is_listed_with_its_answer() -> None:
    assert {p.name for p in ANSWERS.glob("*.txt")} == set(EXPECTED)
    provenance = (ANSWERS / "PROVENANCE.md").read_text(encoding="utf-8")
    for name in EXPECTED:
        assert f"`{name}`" in provenance, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_real_answers_are_read_from_either_stream(name: str, stream: str) -> None:
    kind = name.split("--")[0]
    text = answer_text(name)
    out, err = (text, "") if stream == "stdout" else ("", text)
    found = read_answers(kind, out, err, 1)
    assert [a.answer for a in found] == [EXPECTED[name]]
    assert found[0].stream == stream
    assert found[0].text in text


def test_missing_tool_is_no_answer_and_a_timeout_is_one() -> None:
    assert read_answers("nvidia-smi-q", "", "bash: nvidia-smi: command not found\n", 127) == []
    assert [a.answer for a in read_answers("lfs-df", "", "", 124)] == ["timeout"]


def fail_probe(node_dir: Path, path: str, code: int, stdout: str = "", stderr: str = "") -> None:
    """Make one probe of a written node bundle a failed one: its output, its .err, its exit code."""
    (node_dir / path).parent.mkdir(parents=True, exist_ok=True)
    (node_dir / path).write_text(stdout)
    if stderr:
        (node_dir / path.removesuffix(".txt")).with_suffix(".err").write_text(stderr)
    manifest = node_dir / "manifest.tsv"
    lines = manifest.read_text().splitlines(keepends=True)
    kind = path.removeprefix("cmd/").removesuffix(".txt")
    row = f"{path}\t{kind}\t{code}\t20.0\t{len(stdout)}\t-\t-\t{'timeout' if code == 124 else '-'}\n"
    kept = [line for line in lines if not line.startswith(path + "\t")]
    manifest.write_text("".join(kept) + row)


def healthy(name: str) -> dict[str, tuple[str, str]]:
    files = {
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", H100_Q)),
        "cmd/uptime.txt": ("uptime", fixture("uptime", "handwritten-proc-uptime.txt")),
    }
    return files


def cluster(tmp_path: Path, sick: dict[str, tuple[str, int, str, str]]) -> Result:
    """Four p5 nodes from real fixtures, each in ``sick`` with one failed probe (path, code, stdout,
    stderr); the healthy ones carry persistence mode off (a configuration fact, info)."""
    root = tmp_path / "c"
    for i in range(4):
        name = f"p5-{i}"
        files = healthy(name)
        if name not in sick:
            q = files["cmd/nvidia-smi-q.txt"][1].replace("Persistence Mode                          : Enabled",
                                                        "Persistence Mode                          : Disabled")  # fmt: skip
            files["cmd/nvidia-smi-q.txt"] = ("nvidia-smi-q", q)
        node = write_node(root, name, files, meta=P5)
        if name in sick:
            path, code, out, err = sick[name]
            fail_probe(node, path, code, out, err)
    return analyze(root)


@pytest.mark.parametrize(
    ("name", "code", "where"),
    [
        ("nvidia-smi--ci-runners-40-driver-unreachable.txt", 9, "stdout"),
        ("nvidia-smi--tinygrad-ogkm-47-nvml-mismatch.txt", 18, "stdout"),
        ("nvidia-smi--owod-81-gpu-lost.txt", 15, "stdout"),
        ("nvidia-smi-q--nvidia-docker-1553-a-i0-device-handle.txt", 255, "stderr"),
    ],
)
def test_a_node_whose_nvidia_smi_cannot_reach_the_gpus_is_ranked_first(
    tmp_path: Path, name: str, code: int, where: str
) -> None:
    text = answer_text(name)
    out, err = (text, "") if where == "stdout" else ("", text)
    res = cluster(tmp_path, {"p5-3": ("cmd/nvidia-smi-q.txt", code, out, err)})
    hits = res.of("gpu.smi.unreachable")
    assert [(f.node, f.severity.value) for f in hits] == [("p5-3", "critical")]
    ev = hits[0].evidence[0]
    assert ev.file == f"p5-3/cmd/nvidia-smi-q.{'txt' if where == 'stdout' else 'err'}"
    assert ev.text and ev.text.strip() in text
    assert res.outcomes["gpu.smi.unreachable"].nodes_checked == ["p5-0", "p5-1", "p5-2", "p5-3"]
    verdict = compute(res.findings, list(res.outcomes.values()), [{"node": f"p5-{i}"} for i in range(4)])
    assert verdict.worst_nodes[0].node == "p5-3"
    # its GPU state was examined (it answered), so it is not listed as lacking one
    assert not [r for r in not_examined(Coverage(res.con)) if r["node"] == "p5-3" and "GPU" in r["what"]]


def test_a_hung_nvidia_smi_is_critical_from_the_exit_code(tmp_path: Path) -> None:
    res = cluster(tmp_path, {"p5-1": ("cmd/nvidia-smi-q.txt", 124, "", "")})
    hits = res.of("gpu.smi.unreachable")
    assert [(f.node, f.severity.value, f.params["answers"]) for f in hits] == [
        ("p5-1", "critical", ["timeout"])
    ]
    assert hits[0].evidence[0].file == "p5-1/manifest.tsv" and "124" in (hits[0].evidence[0].text or "")


def test_a_missing_nvidia_smi_stays_a_coverage_fact(tmp_path: Path) -> None:
    res = cluster(
        tmp_path, {"p5-2": ("cmd/nvidia-smi-q.txt", 127, "", "bash: nvidia-smi: command not found\n")}
    )
    assert res.of("gpu.smi.unreachable") == []
    assert "p5-2" in res.outcomes["gpu.smi.unreachable"].nodes_without_data
    assert any(f.node == "p5-2" for f in res.of("bundle.coverage"))


def test_fi_info_no_provider_on_stderr_is_flagged_and_meta_alone_is_not_examined(tmp_path: Path) -> None:
    root = tmp_path / "c"
    p4d = {"instance_type": "p4d.24xlarge"}
    sick = write_node(root, "p4d-sick", {}, meta=p4d)
    fail_probe(
        sick, "cmd/fi-info.txt", 61, "", answer_text("fi-info--libfabric-info-c-no-provider-stderr.txt")
    )
    write_node(root, "p4d-meta-only", {}, meta=p4d)
    res = analyze(root)
    hits = res.of("net.fi_info.no_efa")
    assert [(f.node, f.severity.value) for f in hits] == [("p4d-sick", "critical")]
    assert hits[0].evidence[0].file == "p4d-sick/cmd/fi-info.err"
    outcome = res.outcomes["net.fi_info.no_efa"]
    assert outcome.nodes_checked == ["p4d-sick"] and outcome.nodes_without_data == ["p4d-meta-only"]


def test_no_ib_devices_is_zero_efa_devices(tmp_path: Path) -> None:
    root = tmp_path / "c"
    node = write_node(root, "p5-a", {}, meta=P5)
    fail_probe(node, "cmd/efa-ports.txt", 0, answer_text("efa-ports--pib-2-ibv-devinfo-no-devices.txt"))
    res = analyze(root)
    hits = res.of("net.efa.count_low")
    assert [(f.node, f.params["found"]) for f in hits] == [("p5-a", 0)]
    assert "No IB devices found" in (hits[0].evidence[0].text or "")


def test_fabric_manager_not_installed_on_an_nvswitch_type(tmp_path: Path) -> None:
    root = tmp_path / "c"
    text = answer_text("fabricmanager--systemd-unit-not-found-stderr.txt")
    for name, meta in (("p5-a", P5), ("cpu-a", {"instance_type": "ml.c5.2xlarge"})):
        fail_probe(write_node(root, name, {}, meta=meta), "cmd/fabricmanager.txt", 4, "", text)
    res = analyze(root)
    hits = res.of("gpu.fabric.state")
    assert [(f.node, f.severity.value) for f in hits] == [("p5-a", "critical")]
    assert hits[0].evidence[0].file == "p5-a/cmd/fabricmanager.err"


def test_dcgm_host_engine_unreachable_is_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "c"
    node = write_node(root, "p5-a", {}, meta=P5)
    fail_probe(node, "cmd/dcgmi-diag.txt", 255, answer_text("dcgmi-diag--dcgm-43-hostengine.txt"))
    res = analyze(root)
    hits = res.of("gpu.dcgm.unreachable")
    assert [(f.node, f.severity.value) for f in hits] == [("p5-a", "warning")]
    assert res.outcome("gpu.dcgm.failed") != "pass"


def test_the_exit_code_alone_says_it_when_the_output_is_gone(tmp_path: Path) -> None:
    """nvidia-smi's exit code is NVML's return value: 9 with nothing printed is a driver not loaded."""
    res = cluster(tmp_path, {"p5-2": ("cmd/nvidia-smi-q.txt", 9, "", "")})
    (hit,) = res.of("gpu.smi.unreachable")
    assert (hit.node, hit.severity.value, hit.params["answers"]) == (
        "p5-2",
        "critical",
        ["driver-unreachable"],
    )
    assert hit.evidence[0].file == "p5-2/manifest.tsv" and "\t9\t" in (hit.evidence[0].text or "")
