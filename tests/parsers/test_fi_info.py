"""fi_info parser on every real sample (plain, flattened, -v), and the error contract."""

from __future__ import annotations

import pytest

import parsers
from parsers import fi_info
from tests.conftest import fixture_files, fixture_text


def rows(name: str) -> list[dict]:
    return fi_info.parse(fixture_text("fi-info", name)).rows("fi_provider")


def test_p4d_old_efa_n_domains_flattened_doc_indentation() -> None:
    got = rows("awsdocs-p4d-efa_N-111.0-indented.txt")
    assert [r["device"] for r in got] == ["efa_0", "efa_1", "efa_2", "efa_3"]
    assert [r["line"] for r in got] == [1, 7, 13, 19]
    assert got[2]["fabric"] == "EFA-fe80::c0f:7bff:fe68:a775" and got[2]["domain"] == "efa_2-rdm"
    assert {(r["provider"], r["version"], r["type"], r["protocol"]) for r in got} == {
        ("efa", "111.0", "FI_EP_RDM", "FI_PROTO_EFA")
    }
    assert all(r["api_version"] is None for r in got)


def test_hpc6a_rdm_and_dgram_on_one_device() -> None:
    got = rows("hpc6a-121.0-rdm-dgram.txt")
    assert [(r["domain"], r["type"]) for r in got] == [
        ("rdmap0s31-rdm", "FI_EP_RDM"),
        ("rdmap0s31-dgrm", "FI_EP_DGRAM"),
    ]
    assert {r["device"] for r in got} == {"rdmap0s31"} and {r["fabric"] for r in got} == {"efa"}
    assert got[1]["version"] == "121.0"


def test_libfabric2_three_entries_per_device() -> None:
    got = rows("eks-pod-kr-201.0-efa-direct.txt")
    assert [r["fabric"] for r in got] == ["efa-direct", "efa", "efa"]
    assert [r["type"] for r in got] == ["FI_EP_RDM", "FI_EP_RDM", "FI_EP_DGRAM"]
    assert len({r["device"] for r in got}) == 1 and got[0]["device"] == "rdmap47s0"
    assert {r["version"] for r in got} == {"201.0"}


VERBOSE = """\
fi_info: 1.18.2amzn1.0
libfabric: 1.18.2amzn1.0
libfabric api: 1.18
---
fi_info:
    caps: [ FI_MSG, FI_RMA ]
    fi_ep_attr:
        type: FI_EP_RDM
        protocol: FI_PROTO_EFA
    fi_domain_attr:
        domain: 0x0
        name: rdmap16s27-rdm
    fi_fabric_attr:
        name: efa
        prov_name: efa
        prov_version: 118.20
        api_version: 1.18
    nic:
        fi_device_attr:
            name: rdmap16s27
"""


def test_verbose_layout_and_version_banner() -> None:
    [row] = fi_info.parse(VERBOSE).rows("fi_provider")
    assert row == {
        "line": 5, "provider": "efa", "fabric": "efa", "domain": "rdmap16s27-rdm", "version": "118.20",
        "api_version": "1.18", "protocol": "FI_PROTO_EFA", "type": "FI_EP_RDM", "device": "rdmap16s27",
        "extra": '{"caps": "[ FI_MSG, FI_RMA ]", "fi_domain_attr.domain": "0x0", '
        '"nic.fi_device_attr.name": "rdmap16s27"}',
        "host": None, "max_msg_size": None, "msg_prefix_size": None, "inject_size": None, "mtu": None,
        "link_speed_gbps": None, "link_state": None, "nic_name": "rdmap16s27", "driver": None, "pci_bus_id": None,
    }  # fmt: skip


def test_version_banner_sets_api_version_of_plain_entries() -> None:
    text = "libfabric api: 1.22\n" + fixture_text("fi-info", "hpc6a-121.0-rdm-dgram.txt")
    assert {r["api_version"] for r in fi_info.parse(text).rows("fi_provider")} == {"1.22"}


@pytest.mark.parametrize("path", fixture_files("fi-info"), ids=lambda p: p.name)
def test_detected_as_fi_info(path) -> None:  # type: ignore[no-untyped-def]
    assert parsers.detect_kind(path.read_text(encoding="utf-8")) == "fi-info"
