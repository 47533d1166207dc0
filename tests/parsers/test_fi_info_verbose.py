"""fi_info -v / --verbose: link, message and bus values as columns, one provider_attribute row per printed
key with its section path; mpirun --tag-output ranks kept."""

from __future__ import annotations

import pytest

from parsers import fi_info
from tests.conftest import FIXTURES

DIR = FIXTURES / "fi-info"


def parse(name: str) -> fi_info.ParseResult:
    return fi_info.parse((DIR / name).read_text())


def test_verbose_nic_link_and_sizes_are_values() -> None:
    r = parse("libfabric-2.0-verbose-efa-rdmap79s0-nic-link-100g.txt")
    assert not r.issues
    (row,) = r.rows("fi_provider")
    assert (row["line"], row["domain"], row["device"], row["version"], row["api_version"]) == (
        2, "rdmap79s0-rdm", "rdmap79s0", "200.0", "2.0",
    )  # fmt: skip
    assert (row["mtu"], row["link_speed_gbps"], row["link_state"], row["pci_bus_id"]) == (
        8760, 100.0, "FI_LINK_UP", "0000:4f:00.0",
    )  # fmt: skip
    assert (row["max_msg_size"], row["msg_prefix_size"], row["inject_size"]) == (2.0**64, 0, 4096)
    assert (row["nic_name"], row["driver"]) == ("rdmap79s0", "efa")


def test_every_printed_key_is_a_provider_attribute_row() -> None:
    r = parse("libfabric-2.0-verbose-efa-rdmap79s0-nic-link-100g.txt")
    rows = r.rows("provider_attribute")
    text = (DIR / "libfabric-2.0-verbose-efa-rdmap79s0-nic-link-100g.txt").read_text().splitlines()
    keyed = [i + 1 for i, line in enumerate(text) if ": " in line]
    assert [a["line"] for a in rows] == keyed  # one row per printed 'key: value' line, in order
    by = {(a["section"], a["key"]): a for a in rows}
    assert by[("nic / fi_link_attr", "speed")]["number"] == 1e11
    assert by[("nic / fi_link_attr", "mtu")]["value"] == "8760"
    assert by[("nic / fi_bus_attr / fi_pci_attr", "bus_id")]["number"] == 79.0
    assert by[("nic / fi_device_attr", "device_id")]["number"] == 0xEFA1
    assert by[("nic / fi_bus_attr / fi_pci_attr", "device_id")]["value"] == "0"
    assert by[("", "src_addr")]["value"] == "fi_addr_efa://[fe80::8e7:efff:feee:e81d]:0:0"
    assert {a["entity"] for a in rows} == {"efa/rdmap79s0-rdm"}


def test_rdm_and_dgram_entries_keep_their_own_sizes_and_the_echo_is_skipped() -> None:
    r = parse("libfabric-2.0-verbose-fabric-efa-rdm-dgram-25g-echo.txt")
    assert not r.issues  # "$./build/libfabric/bin/fi_info --fabric efa --verbose" is a command echo
    rdm, dgram = r.rows("fi_provider")
    assert (rdm["type"], rdm["msg_prefix_size"], rdm["link_speed_gbps"]) == ("FI_EP_RDM", 176, 25.0)
    assert (dgram["type"], dgram["max_msg_size"], dgram["msg_prefix_size"]) == ("FI_EP_DGRAM", 8928.0, 40)
    assert rdm["pci_bus_id"] == dgram["pci_bus_id"] == "0000:46:00.0"
    entities = [a["entity"] for a in r.rows("provider_attribute")]
    assert entities.count("efa/rdmap70s0-rdm") == entities.count("efa/rdmap70s0-dgrm") == 80


def test_mpirun_tagged_ranks_are_kept_and_ssh_warnings_skipped() -> None:
    r = parse("eks-mpijob-mpirun-tagged-116.10-two-ranks.txt")
    assert not r.issues
    rows = r.rows("fi_provider")
    assert [(x["host"], x["line"], x["domain"], x["version"]) for x in rows] == [
        ("1,1", 3, "rdmap197s0-rdm", "116.10"),
        ("1,0", 9, "rdmap197s0-rdm", "116.10"),
    ]
    assert {a["host"] for a in r.rows("provider_attribute")} == {"1,0", "1,1"}


def test_flat_verbose_paste_reads_section_by_section() -> None:
    text = (DIR / "libfabric-2.0-verbose-efa-rdmap79s0-nic-link-100g.txt").read_text()
    flat = "\n".join(line.strip() for line in text.splitlines())
    (row,) = fi_info.parse(flat).rows("fi_provider")
    assert (row["mtu"], row["link_speed_gbps"], row["msg_prefix_size"], row["domain"]) == (
        8760,
        100.0,
        0,
        "rdmap79s0-rdm",
    )


@pytest.mark.parametrize("line_no", [32, 33, 89, 90])
def test_garbled_size_is_an_issue_and_the_word_kept(line_no: int) -> None:
    lines = (DIR / "libfabric-2.0-verbose-efa-rdmap79s0-nic-link-100g.txt").read_text().splitlines()
    key = lines[line_no - 1].split(":")[0]
    lines[line_no - 1] = f"{key}: 87#60"
    r = fi_info.parse("\n".join(lines))
    assert [i.line_no for i in r.issues] == [line_no]
    (row,) = r.rows("fi_provider")
    assert any(a["line"] == line_no and a["value"] == "87#60" for a in r.rows("provider_attribute"))
    assert row["domain"] == "rdmap79s0-rdm"
