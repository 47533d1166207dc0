"""version.drift on the EFA path: the libfabric efa provider version (fi_info) and the efa kernel driver
version (modinfo efa) compared across the nodes of one instance type.

Real captures: tests/fixtures/fi-info/ (hpc6a ``fi_info``, provider efa 121.0; the AWS docs' p4d
``fi_info -p efa``, 111.0; the EKS pod's, 201.0) and tests/fixtures/versions/ (Bottlerocket's ``modinfo
efa``, 2.17.3g).  The fi_info captures are used as they are; the modinfo version of one node is EDITED.
"""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, fixture, write_node

HPC6A = "hpc6a-121.0-rdm-dgram.txt"  # two entries, version 121.0 (lines 4 and 10)
P4D = "awsdocs-p4d-efa_N-111.0-indented.txt"  # four devices, version 111.0, flattened indentation
EKS = "eks-pod-kr-201.0-efa-direct.txt"  # efa-direct and efa, version 201.0
MODINFO = "bottlerocket-kit-313-modinfo-efa-2.17.3g-in-tree-prompt.txt"
P5 = {"instance_type": "p5.48xlarge", "kernel": "6.8.0-1021-aws"}


def _fi_info(root: Path, captures: dict[str, str], meta: dict[str, str] = P5) -> None:
    for node, name in captures.items():
        write_node(root, node, {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", name))}, meta=meta)


def test_efa_provider_drift_names_the_odd_node(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _fi_info(root, {"n1": HPC6A, "n2": HPC6A, "n3": P4D, "n4": HPC6A})
    res = analyze(root)
    (f,) = res.of("version.drift")
    assert f.params["component"] == "efa_provider" and f.params["source"] == "fi-info"
    assert f.node == "n3" and f.severity.value == "warning"  # the lone deviating node is ranked
    assert (f.params["majority"], f.params["majority_nodes"], f.params["deviating"]) == (
        "121.0",
        3,
        {"n3": "111.0"},
    )
    assert f.params["instance_type"] == "p5.48xlarge" and f.params["nodes_compared"] == 4
    assert "majority 121.0 on 3 nodes" in f.message and "n3=111.0" in f.message
    odd, held = f.evidence  # the deviating node's provider entry, then one node of the majority
    assert (odd.file, odd.line, (odd.text or "").strip()) == ("n3/cmd/fi-info.txt", 1, "provider: efa")
    assert held.file == "n1/cmd/fi-info.txt" and (held.text or "").strip() == "provider: efa"


def test_efa_provider_same_version_passes(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _fi_info(root, {f"n{i}": HPC6A for i in range(1, 5)})
    res = analyze(root)
    assert res.of("version.drift") == [] and res.outcome("version.drift") == "pass"
    assert res.outcomes["version.drift"].nodes_checked == ["n1", "n2", "n3", "n4"]


def test_efa_provider_compared_within_one_instance_type(tmp_path: Path) -> None:
    """A p4d node on another libfabric than the p5 nodes is no drift: types are compared apart."""
    root = tmp_path / "c"
    _fi_info(root, {f"p5-{i}": EKS for i in range(1, 4)})
    _fi_info(root, {"p4d-1": P4D}, meta={"instance_type": "p4d.24xlarge", "kernel": "6.8.0-1021-aws"})
    assert analyze(root).of("version.drift") == []


def test_efa_driver_drift_from_modinfo(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i in range(1, 5):
        edit = {"version:        2.17.3g": "version:        2.13.0g"} if i == 2 else None
        files = {
            "cmd/modinfo-efa.txt": ("versions", fixture("versions", MODINFO, edit)),
            "cmd/fi-info.txt": ("fi-info", fixture("fi-info", HPC6A)),
        }
        write_node(root, f"n{i}", files, meta=P5)
    (f,) = analyze(root).of("version.drift")
    assert (f.params["component"], f.params["source"], f.node) == ("efa_module", "modinfo", "n2")
    assert f.params["deviating"] == {"n2": "2.13.0g"} and f.params["majority"] == "2.17.3g"
    assert [(e.file, (e.text or "").split()) for e in f.evidence] == [
        ("n2/cmd/modinfo-efa.txt", ["version:", "2.13.0g"]),
        ("n1/cmd/modinfo-efa.txt", ["version:", "2.17.3g"]),
    ]


def test_efa_driver_drift_from_bare_sysfs_values_with_their_manifest_command(tmp_path: Path) -> None:
    """DERIVED: ``cat /sys/module/efa/version`` captured alone (the value of the real modinfo capture; one
    node's edited); the command is in the manifest only, which is what gives the bare value a meaning."""
    root = tmp_path / "c"
    for i in range(1, 5):
        value = "2.13.0g\n" if i == 4 else "2.17.3g\n"
        write_node(root, f"n{i}", {"cmd/efa-version.txt": ("versions", value)}, meta=P5)
        manifest = root / f"n{i}" / "manifest.tsv"
        manifest.write_text(manifest.read_text().replace("\t-\t-\n", "\tcat /sys/module/efa/version\t-\n", 1))
    res = analyze(root)
    (f,) = res.of("version.drift")
    assert (f.params["component"], f.params["source"], f.node) == ("efa_module", "sysfs", "n4")
    assert f.params["deviating"] == {"n4": "2.13.0g"}
    assert [(e.file, e.line, e.text) for e in f.evidence] == [
        ("n4/cmd/efa-version.txt", 1, "2.13.0g"),
        ("n1/cmd/efa-version.txt", 1, "2.17.3g"),
    ]
