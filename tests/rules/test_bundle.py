"""bundle.coverage on bundles built from real captures, with manifest rows for failed probes."""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, fixture, write_node

SMI = ("nvidia-smi-q", fixture("nvidia-smi-q", "jp-simulator-8xh100-565-complete.txt"))
DMESG = ("dmesg", fixture("dmesg", "returnn-1486-reltime-aer-no-xid.txt"))
DF = ("df", fixture("df", "dlami-df-Th-ephemeral-ext4.txt"))


def test_bundle_coverage_failed_probes_and_missing_kinds(tmp_path: Path) -> None:
    root = tmp_path / "c"
    full = {"cmd/nvidia-smi-q.txt": SMI, "cmd/dmesg.txt": DMESG}
    write_node(root, "n1", full)
    write_node(root, "n2", full)
    probes = [
        ("cmd/lfs-df.txt", "lfs-df", 127),
        ("cmd/dcgmi-diag.txt", "dcgmi-diag", 124),
        ("cmd/fi-info.txt", "fi-info", 1),
    ]
    write_node(root, "n3", {"cmd/nvidia-smi-q.txt": SMI}, probes=probes)
    (f,) = analyze(root).of("bundle.coverage")
    assert (f.node, f.severity.value, f.route.owner) == ("n3", "info", "support-bundle")
    assert f.params["missing_tool"] == ["cmd/lfs-df.txt"] and f.params["timed_out"] == ["cmd/dcgmi-diag.txt"]
    assert f.params["failed"] == ["cmd/fi-info.txt"] and f.params["missing_kinds"] == ["dmesg"]
    assert f.params["probes_ok"] == 1 and "no data for dmesg (peers have it)" in f.message
    assert {e.file for e in f.evidence} == {"n3/manifest.tsv"} and len(f.evidence) == 3


def test_bundle_coverage_node_without_parsed_file_is_warning(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write_node(root, "good", {"cmd/df.txt": DF})
    write_node(
        root, "blind", {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", DF[1])}
    )  # df output under the wrong kind
    (f,) = analyze(root).of("bundle.coverage")
    assert (f.node, f.severity.value) == ("blind", "warning")
    assert f.params["not_parsed"] == ["cmd/nvidia-smi-q.txt (failed)"] and f.params["files_parsed"] == 0


def test_bundle_coverage_complete_nodes_give_no_finding(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i in range(1, 4):
        write_node(root, f"n{i}", {"cmd/nvidia-smi-q.txt": SMI, "cmd/dmesg.txt": DMESG, "cmd/df.txt": DF})
    assert analyze(root).outcome("bundle.coverage") == "pass"
