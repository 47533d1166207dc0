"""Compatibility rules on node bundles built from real captures (values edited to trigger).

Rules: version.nccl.driver_min, version.nccl.cuda_min, version.efa_ofi.pairing, net.efa.module_missing,
nccl.version.mismatch, gpu.remap.history.

No real capture in tests/fixtures names an NCCL library version or an aws-ofi-nccl version string;
those cases add lines in the collector's own ``key=value`` versions format (``nccl=2.17.1 (path)``,
``ofi_nccl=1.7.2-aws``, ``cuda=11.8``) to a real capture, and are labelled SYNTHETIC where used.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import run_rules
from analyzer.judge.findings import Severity
from analyzer.judge.rules.version._versions import compare, in_range, parse_version
from analyzer.judge.settings import load_settings
from analyzer.store.tables import connect
from tests.rules.helpers import Result, fixture, write_node

MODULES = [
    importlib.import_module(f"analyzer.judge.rules.{name}")
    for name in (
        "version.nccl_driver_min",
        "version.nccl_cuda_min",
        "version.efa_ofi_pairing",
        "net.efa_module_missing",
        "nccl.version_mismatch",
        "gpu.remap_history",
    )
]
SMI = "jp-simulator-8xh100-565-complete.txt"  # driver 565.57.01, CUDA Version 12.7, 8x H100
K80 = "k80-azure-396-odd-domain-truncated.txt"  # driver 396.37, no CUDA Version line
EFA = "efa-installed-packages-1.7.0-p3dn.txt"  # EFA installer 1.7.0, no aws-ofi-nccl package
MODINFO = "page-modinfo-dkms-efa-2.17.3g-p2p-indented.txt"
IBSTAT = "amzn-drivers-114-dmesg-ibstat-efa0-indent-lost.txt"
P4D_FI = "awsdocs-p4d-efa_N-111.0-indented.txt"
SOCKET_LOG = "nccl-398-ofi-warn-socket-fallback.txt"
REMAP_CSV = "jp-simulator-8xh100-565--remapped-rows-derived.csv"
P5 = {"instance_type": "p5.48xlarge"}


def analyze(root: Path) -> Result:
    """helpers.analyze restricted to this module's rules (fast, independent of other areas)."""
    con = connect(None)
    work = root.parent / f"work-{root.name}"
    work.mkdir(exist_ok=True)
    load(con, [root], work, Limits(), jobs=1)
    findings, outcomes = run_rules(con, MODULES, load_settings())
    return Result(findings, {o.rule: o for o in outcomes}, con)


def bundle(tmp_path: Path, files: dict[str, tuple[str, str]], name: str = "n1") -> Path:
    root = tmp_path / "c"
    write_node(root, name, files, meta=P5)
    return root


def versions(*extra: str, efa: str | None = None) -> str:
    """The real efa_installed_packages capture (installer version optionally edited) plus lines."""
    edit = {"# EFA installer version: 1.7.0": f"# EFA installer version: {efa}"} if efa else {}
    return fixture("versions", EFA, edit) + "".join(f"{line}\n" for line in extra)


def with_ofi_package(text: str, ofi: str) -> str:
    """Add the aws-ofi-nccl RPM to the real capture's package line (as later installers list it)."""
    pkg = "openmpi40-aws-4.0.2-1.amzn2.x86_64"
    assert pkg in text
    return text.replace(pkg, f"{pkg} libnccl-ofi-{ofi}-1.amzn2.x86_64")


def test_version_helper_parses_the_spellings_seen() -> None:
    got = [parse_version(v) for v in ("2.18.3", "1.7.3-aws", "v1.7.0", "2.17.3g", "525.85.12", "n/a", None)]
    assert got == [(2, 18, 3), (1, 7, 3), (1, 7, 0), (2, 17, 3), (525, 85, 12), None, None]
    assert compare((2, 17, 3), (2, 18)) == -1 and compare((2,), (2, 18)) is None
    assert in_range((1, 28, 2), "1.26", "1.28") is True and in_range((1, 7, 3), "1.7.0", "1.7.2") is False


# -- version.nccl.driver_min -------------------------------------------------------------------------


def test_driver_min_fires_on_real_396_driver(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", K80))})
    (f,) = analyze(root).of("version.nccl.driver_min")
    assert f.severity == Severity.WARNING and f.node == "n1"
    assert (f.params["driver"], f.params["driver_major"], f.params["min_driver_major"]) == (
        "396.37",
        396,
        525,
    )
    assert f.params["nccl_on_host"] == [] and "NCCL not seen on the host" in f.message
    assert f.evidence[0].file == "n1/cmd/nvidia-smi-q.txt"


def test_driver_min_names_host_nccl(tmp_path: Path) -> None:
    old = fixture(
        "nvidia-smi-q",
        SMI,
        {
            "Driver Version                            : 565.57.01": "Driver Version                            : 470.82.01"
        },
    )
    # SYNTHETIC: the collector's nccl= line appended to a real versions capture
    files = {
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", old),
        "cmd/versions.txt": (
            "versions",
            versions("nccl=2.18.3 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.3)"),
        ),
    }
    (f,) = analyze(bundle(tmp_path, files)).of("version.nccl.driver_min")
    assert f.params["driver"] == "470.82.01" and f.params["nccl_on_host"] == ["2.18.3"]
    assert "NCCL 2.18.3 on the host" in f.message


def test_driver_min_passes_on_565(tmp_path: Path) -> None:
    root = bundle(tmp_path, {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", SMI))})
    assert analyze(root).outcome("version.nccl.driver_min") == "pass"


# -- version.nccl.cuda_min ---------------------------------------------------------------------------


def _cuda_min(tmp_path: Path, *lines: str) -> list:  # type: ignore[type-arg]
    files = {
        "cmd/versions.txt": ("versions", versions(*lines)),
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", SMI)),
    }
    return analyze(bundle(tmp_path, files)).of("version.nccl.cuda_min")


def test_cuda_min_fires_against_driver_max_cuda(tmp_path: Path) -> None:
    # SYNTHETIC nccl= line; CUDA from the real dump's "CUDA Version : 12.7" (no toolkit on the host)
    (f,) = _cuda_min(tmp_path, "nccl=2.17.1 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.17.1)")
    assert f.severity == Severity.WARNING and f.node == "n1"
    assert (f.params["nccl"], f.params["cuda"], f.params["min_nccl"]) == ("2.17.1", "12.7", "2.18")
    assert f.params["cuda_from"] == "driver's maximum CUDA" and f.params["cuda_source"] == "nvidia-smi-q"
    assert f.evidence[0].text == "nccl=2.17.1 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.17.1)"


def test_cuda_min_prefers_the_toolkit(tmp_path: Path) -> None:
    # SYNTHETIC collector lines: toolkit 11.8 wins over the driver's 12.7
    (f,) = _cuda_min(tmp_path, "cuda=11.8 (/usr/local/cuda)", "nccl=2.10.3,2.18.3")
    assert (f.params["nccl"], f.params["cuda"], f.params["min_nccl"]) == ("2.10.3", "11.8", "2.12")
    assert f.params["cuda_from"] == "CUDA toolkit"


def test_cuda_min_passes_when_recent_enough(tmp_path: Path) -> None:
    # SYNTHETIC: 2.17.1 is fine for the CUDA 11.8 toolkit although the driver could run 12.x
    assert _cuda_min(tmp_path, "cuda=11.8 (/usr/local/cuda)", "nccl=2.17.1") == []
    assert _cuda_min(tmp_path / "b", "nccl=2.18.3") == []


# -- version.efa_ofi.pairing -------------------------------------------------------------------------


def _pairing(tmp_path: Path, text: str) -> list:  # type: ignore[type-arg]
    return analyze(bundle(tmp_path, {"cmd/versions.txt": ("versions", text)})).of("version.efa_ofi.pairing")


def test_pairing_fires_when_plugin_above_the_1_26_1_28_range(tmp_path: Path) -> None:
    (f,) = _pairing(tmp_path, with_ofi_package(versions(efa="1.27.0"), "1.9.1"))
    assert f.severity == Severity.WARNING and f.node == "n1"
    assert (f.params["efa_installer"], f.params["ofi_nccl"]) == ("1.27.0", "1.9.1")
    assert (f.params["installer_range"], f.params["ofi_wanted"]) == ("1.26-1.28", "v1.7.0-v1.7.2")
    assert "# EFA installer version: 1.27.0" in (f.evidence[0].text or "")


def test_pairing_fires_when_plugin_too_old_for_1_29(tmp_path: Path) -> None:
    # SYNTHETIC collector line for the plugin version
    (f,) = _pairing(tmp_path, versions("ofi_nccl=1.7.2-aws", efa="1.29.1"))
    assert f.params["ofi_wanted"] == "v1.7.3+" and f.params["ofi_nccl"] == "1.7.2-aws"


def test_pairing_passes_in_range_and_outside_the_table(tmp_path: Path) -> None:
    assert _pairing(tmp_path, with_ofi_package(versions(efa="1.29.1"), "1.9.1")) == []
    # the real capture's installer 1.7.0 predates the table: not judged
    assert _pairing(tmp_path / "b", with_ofi_package(versions(), "1.9.1")) == []


# -- net.efa.module_missing --------------------------------------------------------------------------

NOT_FOUND = {"    version:        2.17.3g": "    modinfo: ERROR: Module efa not found."}


def test_efa_module_missing_with_ports(tmp_path: Path) -> None:
    files = {
        "cmd/versions.txt": ("versions", fixture("versions", MODINFO, NOT_FOUND)),
        "cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", IBSTAT)),
    }
    (f,) = analyze(bundle(tmp_path, files)).of("net.efa.module_missing")
    assert f.severity == Severity.CRITICAL and f.node == "n1"
    assert f.params["devices"] == ["efa_0"] and f.params["seen_in"] == ["efa_port"]
    assert "Module efa not found" in (f.evidence[0].text or "")
    assert f.evidence[1].file == "n1/cmd/efa-ports.txt"


def test_efa_module_missing_with_fi_info_only(tmp_path: Path) -> None:
    files = {
        "cmd/versions.txt": ("versions", fixture("versions", MODINFO, NOT_FOUND)),
        "cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI)),
    }
    (f,) = analyze(bundle(tmp_path, files)).of("net.efa.module_missing")
    assert f.params["seen_in"] == ["fi_provider"] and f.params["device_count"] == 4


def test_efa_module_present_passes(tmp_path: Path) -> None:
    files = {
        "cmd/versions.txt": ("versions", fixture("versions", MODINFO)),
        "cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", IBSTAT)),
    }
    assert analyze(bundle(tmp_path, files)).outcome("net.efa.module_missing") == "pass"
    # module not found but no EFA device listed: nothing to judge
    only = {"cmd/versions.txt": ("versions", fixture("versions", MODINFO, NOT_FOUND))}
    assert analyze(bundle(tmp_path / "b", only)).outcome("net.efa.module_missing") == "skipped"


# -- nccl.version.mismatch ---------------------------------------------------------------------------


def test_nccl_version_mismatch_is_critical(tmp_path: Path) -> None:
    log = fixture(
        "nccl-tests",
        SOCKET_LOG,
        {"NET/OFI Only EFA provider is supported": "Incompatible NCCL version 2.18.3 (peer runs 2.21.5)"},
    )
    res = analyze(bundle(tmp_path, {"cmd/nccl-tests.txt": ("nccl-tests", log)}))
    (f,) = res.of("nccl.version.mismatch")
    assert f.severity == Severity.CRITICAL and f.params["count"] == 2
    assert f.params["host"] == "ip-172-31-0-112" and f.route.owner == "version-drift"
    assert "Incompatible NCCL version" in (f.evidence[0].text or "")


def test_nccl_version_mismatch_passes_on_other_warnings(tmp_path: Path) -> None:
    log = fixture("nccl-tests", SOCKET_LOG)
    res = analyze(bundle(tmp_path, {"cmd/nccl-tests.txt": ("nccl-tests", log)}))
    assert res.outcome("nccl.version.mismatch") == "pass"


# -- gpu.remap.history -------------------------------------------------------------------------------

UNCORR = "        Uncorrectable Error               : 0\n        Pending                           : No"


def _first_gpu(text: str, new: str) -> str:
    assert UNCORR in text
    return text.replace(UNCORR, new, 1)  # GPU 0 only


def test_remap_history_is_info(tmp_path: Path) -> None:
    smi = _first_gpu(fixture("nvidia-smi-q", SMI), UNCORR.replace(": 0", ": 3"))
    (f,) = analyze(bundle(tmp_path, {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", smi)})).of("gpu.remap.history")
    assert f.severity == Severity.INFO and (f.node, f.gpu) == ("n1", 0)
    assert f.params["uncorrectable_rows"] == 3 and f.params["pci"] == "0000:18:00.0"
    assert "Correctable Error" in (f.evidence[0].text or "")  # the Remapped Rows block


def test_remap_history_from_csv(tmp_path: Path) -> None:
    # DERIVED collector fixture (from the -q dump's Remapped Rows), not a capture
    csv = fixture(
        "collector/nvidia-smi-csv",
        REMAP_CSV,
        {
            "GPU-52378fbc-3124-3895-13b6-1dd179563e0f, 0, 0,": "GPU-52378fbc-3124-3895-13b6-1dd179563e0f, 0, 2,"
        },
    )
    (f,) = analyze(bundle(tmp_path, {"cmd/remap.csv": ("nvidia-smi-csv", csv)})).of("gpu.remap.history")
    assert f.params["uncorrectable_rows"] == 2 and f.params["source"] == "nvidia-smi csv"


def test_remap_history_not_when_pending(tmp_path: Path) -> None:
    pending = UNCORR.replace(": 0", ": 3").replace(": No", ": Yes")
    smi = _first_gpu(fixture("nvidia-smi-q", SMI), pending)
    res = analyze(bundle(tmp_path, {"cmd/nvidia-smi-q.txt": ("nvidia-smi-q", smi)}))
    assert res.outcome("gpu.remap.history") == "pass"


# -- healthy real samples ----------------------------------------------------------------------------


def test_healthy_real_samples_raise_no_concern(tmp_path: Path) -> None:
    files = {
        "cmd/nvidia-smi-q.txt": ("nvidia-smi-q", fixture("nvidia-smi-q", SMI)),
        "cmd/versions.txt": ("versions", fixture("versions", EFA)),
        "cmd/modinfo.txt": ("versions", fixture("versions", MODINFO)),
        "cmd/efa-ports.txt": ("efa-ports", fixture("efa-ports", IBSTAT)),
        "cmd/fi-info.txt": ("fi-info", fixture("fi-info", P4D_FI)),
    }
    res = analyze(bundle(tmp_path, files))
    assert [f.message for f in res.findings] == []
    assert {res.outcome(m.RULE.id) for m in MODULES} <= {"pass", "skipped"}
