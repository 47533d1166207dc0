"""Network rules on node bundles built from real fi_info, EFA port and versions captures.

Rules: net.efa.port_down, net.efa.count_low, net.fi_info.no_efa, net.ofi_plugin.missing.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.judge.findings import Severity
from tests.rules.helpers import fixture, write_node
from tests.rules.test_nccl import analyze, concerns

IBSTAT = "amzn-drivers-114-dmesg-ibstat-efa0-indent-lost.txt"
DEVINFO = "ibv_devinfo-efa0-rdma-core-884.txt"
P4D_FI = "awsdocs-p4d-efa_N-111.0-indented.txt"
EFA_PKGS = "efa-installed-packages-1.7.0-p3dn.txt"
NCCL_LINE = "nccl=2.18.3 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3)"
SOCKET_LOG = "nccl-398-ofi-warn-socket-fallback.txt"


def node(
    tmp_path: Path, files: dict[str, tuple[str, str]], instance_type: str = "p4d.24xlarge", **meta: str
) -> Path:
    root = tmp_path / "b"
    root.mkdir(exist_ok=True)
    name = meta.pop("name", "node-01")
    write_node(root, name, files, meta={"instance_type": instance_type, **meta})
    return root / name


def versions(*extra: str) -> str:
    """The real efa_installed_packages capture plus collector key=value lines."""
    add = "".join(f"\n{line}" for line in extra)
    return fixture(
        "versions", EFA_PKGS, {"# Debug packages installed: no": "# Debug packages installed: no" + add}
    )


# -- net.efa.port_down -----------------------------------------------------------------------------------


def test_port_down_is_critical(tmp_path: Path) -> None:
    text = fixture(
        "efa-ports",
        IBSTAT,
        {"State: Active": "State: Down", "Physical state: LinkUp": "Physical state: Polling"},
    )
    (found,) = analyze(node(tmp_path, {"cmd/efa-ports.txt": ("efa-ports", text)})).of("net.efa.port_down")
    assert found.severity == Severity.CRITICAL and found.params["device"] == "efa_0"
    assert found.params["state"] == "DOWN" and found.node == "node-01"
    assert found.evidence[0].file == "node-01/cmd/efa-ports.txt"


def test_active_ports_pass(tmp_path: Path) -> None:
    files = {"cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", IBSTAT)),
             "cmd/ibv-devinfo.txt": ("efa-ports", fixture("efa-ports", DEVINFO))}  # fmt: skip
    assert analyze(node(tmp_path, files)).outcome("net.efa.port_down") == "pass"


# -- net.efa.count_low -----------------------------------------------------------------------------------


def test_count_low_verified_is_critical(tmp_path: Path) -> None:
    # one EFA port listed on a p4d (4 devices, verified): efa_port is preferred over fi_info
    files = {"cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", IBSTAT)),
             "cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI))}  # fmt: skip
    (found,) = analyze(node(tmp_path, files)).of("net.efa.count_low")
    assert found.severity == Severity.CRITICAL
    assert (found.params["found"], found.params["expected"], found.params["via"]) == (1, 4, "efa_port")


def test_count_low_unverified_is_warning(tmp_path: Path) -> None:
    # p5en: 16 (NC-DBG, NC-DIAG, TORCHX) vs 32 (MFU-NET) -> unverified
    files = {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI))}
    (found,) = analyze(node(tmp_path, files, "p5en.48xlarge")).of("net.efa.count_low")
    assert found.severity == Severity.WARNING and found.params["verified"] is False
    assert (found.params["found"], found.params["expected"], found.params["via"]) == (4, 16, "fi_info")
    assert "unverified expectation" in found.message


def test_count_matches_passes(tmp_path: Path) -> None:
    files = {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI))}
    assert analyze(node(tmp_path, files)).outcome("net.efa.count_low") == "pass"


def test_only_soft_roce_or_mellanox_devices_say_no_efa_device(tmp_path: Path) -> None:
    # real ibv_devinfo of a soft-RoCE rxe0 (SoftRoCE/rxe-dev#46) on an EFA instance type
    files = {
        "cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", "softroce-rxe-dev-46-ibv_devinfo-rxe0.txt"))
    }
    (found,) = analyze(node(tmp_path, files)).of("net.efa.count_low")
    assert (found.params["found"], found.params["expected"], found.params["via"]) == (0, 4, "efa_port")
    assert found.params["other_rdma"] == "rxe0 (rxe)"
    assert "shows no EFA device (RDMA devices seen: rxe0 (rxe))" in found.message
    # a real mlx4 capture with DOWN ports: no EFA device, and its ports are not EFA ports
    mlx = fixture("efa-ports", "heioy-ibv_devinfo-mlx4-2hca-port-down.txt")
    res = analyze(node(tmp_path, {"cmd/efa-ports.txt": ("efa-ports", mlx)}, name="node-02"))
    (found,) = res.of("net.efa.count_low")
    assert found.params["other_rdma"] == "mlx4_0 (mlx4), mlx4_1 (mlx4)" and found.params["found"] == 0
    assert res.outcome("net.efa.port_down") == "pass"


# -- net.fi_info.no_efa ----------------------------------------------------------------------------------


def test_no_efa_provider_is_critical(tmp_path: Path) -> None:
    text = fixture("fi-info", "hpc6a-121.0-rdm-dgram.txt", {"provider: efa": "provider: tcp"})
    (found,) = analyze(node(tmp_path, {"cmd/fi-info.txt": ("fi-info", text)})).of("net.fi_info.no_efa")
    assert found.severity == Severity.CRITICAL and found.params["providers"] == "tcp"
    assert found.evidence[0].file == "node-01/cmd/fi-info.txt"


def test_fi_getinfo_no_data_is_examined_and_flagged_as_no_efa(tmp_path: Path) -> None:
    # what fi_info prints when no provider matches (see parsers/fi_info.py): parsed, 0 providers, an answer
    files = {"cmd/fi-info.txt": ("fi-info", "fi_getinfo: -61 (No data available)\n")}
    res = analyze(node(tmp_path, files, "p5.48xlarge"))
    (found,) = res.of("net.fi_info.no_efa")
    assert found.params["status"] == "parsed" and found.params["providers"] is None
    assert found.params["no_provider"] == "fi_getinfo: -61 (No data available)"
    assert "fi_info answered 'fi_getinfo: -61 (No data available)'" in found.message
    assert (found.evidence[0].file, found.evidence[0].line) == ("node-01/cmd/fi-info.txt", 1)


def test_efa_provider_present_or_no_efa_instance_passes(tmp_path: Path) -> None:
    files = {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI))}
    assert analyze(node(tmp_path, files)).outcome("net.fi_info.no_efa") == "pass"
    text = fixture("fi-info", "hpc6a-121.0-rdm-dgram.txt", {"provider: efa": "provider: tcp"})
    files = {"cmd/fi-info.txt": ("fi-info", text)}
    res = analyze(node(tmp_path, files, "g5.8xlarge", name="node-02"))  # not an EFA type in sku.toml
    assert res.outcome("net.fi_info.no_efa") == "pass"


# -- net.ofi_plugin.missing ------------------------------------------------------------------------------


def test_ofi_missing_on_host_alone_is_warning(tmp_path: Path) -> None:
    res = analyze(node(tmp_path, {"cmd/versions.txt": ("versions", versions(NCCL_LINE))}))
    (found,) = res.of("net.ofi_plugin.missing")
    assert found.severity == Severity.WARNING and found.params["ofi_nccl"] == "absent"
    assert "container-scoped software" in found.message and "not a defect" in found.message


def test_ofi_unknown_with_tcp_fallback_is_critical(tmp_path: Path) -> None:
    files = {
        "cmd/versions.txt": ("versions", versions(NCCL_LINE, "ofi_nccl=unknown")),
        "extra/nccl-job.log": ("nccl-tests", fixture("nccl-tests", SOCKET_LOG)),
    }
    (found,) = analyze(node(tmp_path, files)).of("net.ofi_plugin.missing")
    assert found.severity == Severity.CRITICAL and found.params["ofi_nccl"] == "unknown"
    assert found.params["tcp_fallback_file"] == "node-01/extra/nccl-job.log"
    assert len(found.evidence) == 3


def test_ofi_present_passes(tmp_path: Path) -> None:
    files = {"cmd/versions.txt": ("versions", versions(NCCL_LINE, "ofi_nccl=1.7.3-aws"))}
    assert analyze(node(tmp_path, files)).outcome("net.ofi_plugin.missing") == "pass"


def test_no_nccl_on_host_passes(tmp_path: Path) -> None:
    files = {"cmd/versions.txt": ("versions", fixture("versions", EFA_PKGS))}
    assert analyze(node(tmp_path, files)).outcome("net.ofi_plugin.missing") == "pass"


# -- healthy real samples --------------------------------------------------------------------------------


def test_real_healthy_samples_raise_nothing(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    samples = {
        "p4d": ("p4d.24xlarge", {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI))}),
        "hpc6a": ("hpc6a.48xlarge", {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", "hpc6a-121.0-rdm-dgram.txt")),
                                     "cmd/versions.txt": ("versions", fixture("versions", "page-modinfo-dkms-efa-2.17.3g-p2p-indented.txt"))}),
        "eks-pod": ("", {"cmd/fi-info.txt": ("fi-info", fixture("fi-info", "eks-pod-kr-201.0-efa-direct.txt"))}),
        "old-efa": ("", {"cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", IBSTAT)),
                         "cmd/ibv-devinfo.txt": ("efa-ports", fixture("efa-ports", DEVINFO))}),
        "p3dn": ("p3dn.24xlarge", {"cmd/versions.txt": ("versions", fixture("versions", EFA_PKGS))}),
    }  # fmt: skip
    for name, (itype, files) in samples.items():
        write_node(cluster, name, files, meta={"instance_type": itype} if itype else None)
    res = analyze(cluster)
    assert [c for c in concerns(res) if c.startswith("net.")] == []
    for rule in ("net.efa.port_down", "net.efa.count_low", "net.fi_info.no_efa", "net.ofi_plugin.missing"):
        assert res.outcome(rule) == "pass", rule
