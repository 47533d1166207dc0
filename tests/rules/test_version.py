"""Version rules: version.drift and version.cuda_driver.compat on bundles from real captures.

The CUDA toolkit version has no real capture in tests/fixtures; those cases add one line in the
collector's own ``key=value`` versions format (``cuda=13.0``), labelled SYNTHETIC where used.
"""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, fixture, write_node

SMI = "jp-simulator-8xh100-565-complete.txt"
EFA = "efa-installed-packages-1.7.0-p3dn.txt"
MODINFO = "page-modinfo-dkms-efa-2.17.3g-p2p-indented.txt"
P5 = {"instance_type": "p5.48xlarge", "kernel": "6.8.0-1021-aws"}


def _node(root: Path, name: str, files: dict[str, tuple[str, str]], **meta: str) -> None:
    write_node(root, name, files, meta={**P5, **meta})


def test_version_drift_names_majority_and_deviating_nodes(tmp_path: Path) -> None:
    root = tmp_path / "c"
    new_efa = fixture("versions", EFA, {"# EFA installer version: 1.7.0": "# EFA installer version: 1.29.1"})
    old_drv = fixture(
        "nvidia-smi-q",
        SMI,
        {
            "Driver Version                            : 565.57.01": "Driver Version                            : 550.54.15"
        },
    )
    for i in range(1, 5):
        efa = new_efa if i == 4 else fixture("versions", EFA)
        smi = old_drv if i == 3 else fixture("nvidia-smi-q", SMI)
        _node(
            root,
            f"n{i}",
            {"cmd/versions.txt": ("versions", efa), "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", smi)},
        )
    res = analyze(root)
    found = {f.params["component"]: f for f in res.of("version.drift")}
    assert set(found) == {"efa_installer", "nvidia_driver"}
    efa = found["efa_installer"]
    assert efa.severity.value == "warning" and efa.node == "n4"  # the lone deviating node
    assert (efa.params["majority"], efa.params["majority_nodes"], efa.params["deviating"]) == (
        "1.7.0",
        3,
        {"n4": "1.29.1"},
    )
    assert "majority 1.7.0 on 3 nodes" in efa.message and "n4=1.29.1" in efa.message
    assert efa.evidence[0].file == "n4/cmd/versions.txt" and "1.29.1" in (efa.evidence[0].text or "")
    drv = found["nvidia_driver"]
    assert drv.params["deviating"] == {"n3": "550.54.15"} and drv.params["majority"] == "565.57.01"


def test_version_drift_kernel_from_meta_and_split(tmp_path: Path) -> None:
    root = tmp_path / "c"
    _node(root, "a", {"cmd/versions.txt": ("versions", fixture("versions", EFA))})
    _node(root, "b", {"cmd/versions.txt": ("versions", fixture("versions", EFA))}, kernel="6.8.0-1024-aws")
    (f,) = analyze(root).of("version.drift")
    assert f.params["component"] == "kernel" and f.params["split"] is True
    assert f.evidence[0].file.endswith("meta.env") and "kernel=" in (f.evidence[0].text or "")


def test_version_drift_absent_component_is_info_not_drift(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i in range(1, 4):
        _node(root, f"n{i}", {"cmd/versions.txt": ("versions", fixture("versions", EFA))})
    _node(root, "n4", {"cmd/versions.txt": ("versions", fixture("versions", MODINFO))})
    res = analyze(root)
    findings = res.of("version.drift")
    assert findings and all(f.severity.value == "info" for f in findings)
    absent = {f.params["component"]: f.params["absent_nodes"] for f in findings}
    assert absent["efa_installer"] == ["n4"] and absent["libfabric"] == ["n4"]
    assert "efa_module" not in absent  # n4 has it (modinfo), compared only within one source
    assert "not counted as drift" in findings[0].message


def test_version_drift_healthy_real_samples(tmp_path: Path) -> None:
    root = tmp_path / "c"
    for i in range(1, 4):
        files = {
            "cmd/versions.txt": ("versions", fixture("versions", EFA)),
            "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", SMI)),
        }
        _node(root, f"n{i}", files)
    res = analyze(root)
    assert res.outcome("version.drift") == "pass"
    assert res.outcome("version.cuda_driver.compat") == "pass"


def _compat(tmp_path: Path, versions: str, smi: bool = True) -> list:  # type: ignore[type-arg]
    root = tmp_path / "c"
    files = {"cmd/versions.txt": ("versions", versions)}
    if smi:  # real dump: driver 565.57.01, CUDA Version 12.7
        files["cmd/nvidia-smi-q.txt"] = ("nvidia-smi-q", fixture("nvidia-smi-q", SMI))
    _node(root, "n1", files)
    return analyze(root).of("version.cuda_driver.compat")


def test_version_cuda_driver_compat_major_is_critical(tmp_path: Path) -> None:
    # SYNTHETIC: the collector's own "cuda=" line appended to a real versions capture
    (f,) = _compat(tmp_path, fixture("versions", EFA) + "cuda=13.0\n")
    assert f.severity.value == "critical" and f.node == "n1"
    assert (f.params["toolkit"], f.params["driver_max_cuda"], f.params["major_mismatch"]) == (
        "13.0",
        "12.7",
        True,
    )
    assert f.evidence[0].text == "cuda=13.0"


def test_version_cuda_driver_compat_minor_is_warning_and_series_table(tmp_path: Path) -> None:
    # SYNTHETIC collector lines; no nvidia-smi dump: the driver series table gives 550 -> CUDA 12.7
    (f,) = _compat(tmp_path, "nvidia_driver=550.54.15\ncuda=12.8\n", smi=False)
    assert f.severity.value == "warning" and f.params["driver_max_cuda"] == "12.7"
    assert "series table" in f.params["from"]


def test_version_cuda_driver_compat_passes_when_supported(tmp_path: Path) -> None:
    assert _compat(tmp_path, fixture("versions", EFA) + "cuda=12.4\n") == []
