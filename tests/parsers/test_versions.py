"""versions parser: efa_installed_packages, modinfo/dkms/p2p paste, collector key=value; error contract."""

from __future__ import annotations

import pytest

import parsers
from parsers import versions
from tests.conftest import fixture_files, fixture_text


def rows(text: str) -> list[dict]:
    return versions.parse(text).rows("software_version")


def by_component(got: list[dict]) -> dict[str, list[str | None]]:
    out: dict[str, list[str | None]] = {}
    for r in got:
        out.setdefault(r["component"], []).append(r["version"])
    return out


def test_efa_installed_packages_1_7_0() -> None:
    got = rows(fixture_text("versions", "efa-installed-packages-1.7.0-p3dn.txt"))
    assert got[0] == {
        "line": 1, "component": "efa_installer", "version": "1.7.0", "source": "efa_installed_packages",
        "path": None, "detail": None, "extra": None, "host": None,
    }  # fmt: skip
    assert len(got) == 15 and {r["source"] for r in got} == {"efa_installed_packages"}
    versions_of = by_component(got)
    assert versions_of["libfabric"] == ["1.8.1amzn1.2"] and versions_of["openmpi"] == ["4.0.2"]
    assert versions_of["rdma_core"] == ["25.0"] and versions_of["efa_module"] == ["1.4.1"]
    lib = next(r for r in got if r["component"] == "libfabric")
    assert lib["line"] == 4 and lib["detail"] == "libfabric-aws-1.8.1amzn1.2-1.amzn2"


def test_modinfo_dkms_and_p2p_doc_paste() -> None:
    result = versions.parse(fixture_text("versions", "page-modinfo-dkms-efa-2.17.3g-p2p-indented.txt"))
    got = [(r["line"], r["component"], r["version"], r["source"]) for r in result.rows("software_version")]
    assert got == [
        (5, "efa_module", "2.17.3g", "modinfo"),
        (6, "efa_module", "2.17.3", "dkms"),
        (12, "efa_p2p", "NVIDIA", "sysfs"),
    ]
    dkms = result.rows("software_version")[1]
    assert dkms["detail"] == "6.1.0-1030-aws, x86_64: installed"
    assert result.rows("software_version")[2]["path"] == "/sys/class/infiniband/rdmap0s31/device/p2p"
    assert result.issues == []


COLLECTOR = """\
efa_installer=1.34.0
efa_module=2.10.0g
libfabric=1.22.0amzn4.0
ofi_nccl=1.11.0-aws
nccl=2.21.5,2.18.3
cuda=12.4 (/usr/local/cuda-12.4)
cuda_driver_max=12.4
nvidia_driver=550.54.15
kernel=6.8.0-1017-aws
os=Amazon Linux 2 (Karoo)
--- modinfo efa
filename:       /lib/modules/6.8.0-1017-aws/updates/dkms/efa.ko
version:        2.10.0g
license:        Dual BSD/GPL
--- modinfo nvidia
modinfo: ERROR: Module nvidia not found.
--- cat /sys/module/efa/version
2.10.0g
--- ls /usr/lib/x86_64-linux-gnu/libnccl*
/opt/amazon/ofi-nccl/lib/libnccl-net.so
/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
"""


def test_collector_key_values_and_concatenated_outputs() -> None:
    got = rows(COLLECTOR)
    versions_of = by_component([r for r in got if r["source"] == "collector"])
    assert versions_of["nccl"] == ["2.21.5", "2.18.3"] and versions_of["os"] == ["Amazon Linux 2 (Karoo)"]
    assert versions_of["ofi_nccl"] == ["1.11.0-aws"] and versions_of["kernel"] == ["6.8.0-1017-aws"]
    cuda = next(r for r in got if r["component"] == "cuda")
    assert cuda["version"] == "12.4" and cuda["path"] == "/usr/local/cuda-12.4"
    modinfo = [r for r in got if r["source"] == "modinfo"]
    assert [(r["component"], r["version"], r["detail"]) for r in modinfo] == [
        ("efa_module", "2.10.0g", None),
        ("nvidia_driver", None, "not found"),
    ]
    assert modinfo[0]["path"] == "/lib/modules/6.8.0-1017-aws/updates/dkms/efa.ko"
    sysfs = next(r for r in got if r["source"] == "sysfs")
    assert (sysfs["component"], sysfs["version"], sysfs["line"]) == ("efa_module", "2.10.0g", 18)
    files = {r["component"]: r["version"] for r in got if r["source"] == "file"}
    assert files == {"ofi_nccl": None, "nccl": "2.21.5"}
    smi = {r["component"]: r["version"] for r in got if r["source"] == "nvidia-smi"}
    assert smi == {"nvidia_driver": "550.54.15", "cuda_driver_max": "12.4"}


@pytest.mark.parametrize("path", fixture_files("versions"), ids=lambda p: p.name)
def test_detected_as_versions(path) -> None:  # type: ignore[no-untyped-def]
    assert parsers.detect_kind(path.read_text(encoding="utf-8")) == "versions"


def test_rpm_qa_lines_alone_with_a_banner() -> None:
    text = fixture_text("versions", "llm-d-741-rpm-qa-rdma-el9-one-per-line-banner.txt")
    assert parsers.detect_kind(text) == "versions"
    result = versions.parse(text)
    assert not result.issues  # the "=== ... ===" banner is skipped
    got = by_component(result.rows("software_version"))
    assert got["rdma_core"] == ["60.0"] and got["libnl3"] == ["3.11.0"]


def test_efa_installer_rpm_names_map_to_rule_components() -> None:
    text = (
        "efa-2.13.0-1.amzn2.x86_64\nefa-config-1.17-1.amzn2.noarch\n"
        "libfabric-aws-1.22.0amzn4.0-1.amzn2.x86_64\nrdma-core-47.0-1.amzn2.0.1.x86_64\n"
    )
    assert parsers.detect_kind(text) == "versions"
    got = by_component(rows(text))
    assert got["efa_module"] == ["2.13.0"] and got["libfabric"] == ["1.22.0amzn4.0"]
    assert got["rdma_core"] == ["47.0"] and got["efa_config"] == ["1.17"]


def test_dpkg_l_grep_efa_with_modinfo() -> None:
    got = rows(fixture_text("versions", "pcluster-3108-dpkg-l-grep-efa-and-modinfo-1.13.0g-prompt.txt"))
    assert [(r["component"], r["version"], r["source"]) for r in got] == [
        ("efa_module", "1.13.0-1.amzn1", "package"),
        ("efa_module", "1.13.0g", "modinfo"),
    ]
    assert by_component(rows("ii  efa-gdr  1.10.2-1.amzn1  amd64  Linux kernel driver\n")) == {
        "efa_module": ["1.10.2-1.amzn1"]
    }


def test_installer_env_sh_and_package_not_installed() -> None:
    got = rows(fixture_text("versions", "efa-installer-env-sh-1.24.1.txt"))
    assert [(r["component"], r["version"], r["source"]) for r in got] == [("efa_installer", "1.24.1", "file")]
    for answer in ("package efa is not installed", "dpkg-query: no packages found matching efa"):
        (row,) = rows(answer + "\n")
        assert (row["component"], row["version"], row["detail"]) == ("efa_module", None, "efa: not installed")
