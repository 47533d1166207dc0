"""analyzer.judge.hosts: host names printed by tools matched back to node bundles."""

from __future__ import annotations

import pytest

from analyzer.judge.hosts import HostIndex, keys, match

NODES = [
    {"node": "node-01", "hostname": "ip-10-1-2-3.ec2.internal"},
    {"node": "ip-10-1-2-4", "hostname": None},
    {"node": "gpu-a", "hostname": "trainer-a.cluster.example"},
    {"node": "slurm-7", "hostname": "slurm-7"},
]


@pytest.mark.parametrize(
    ("host", "node"),
    [
        ("ip-10-1-2-3.ec2.internal", "node-01"),  # hostname, exact
        ("ip-10-1-2-3", "node-01"),  # short name of the hostname
        ("10.1.2.3", "node-01"),  # dotted address <-> ip-a-b-c-d
        ("IP-10-1-2-3.us-west-2.compute.internal", "node-01"),  # other domain, upper case
        ("node-01", "node-01"),  # the bundle's node name
        ("10.1.2.4", "ip-10-1-2-4"),  # node name in EC2 form, host printed dotted
        ("ip-10-1-2-4.ec2.internal", "ip-10-1-2-4"),
        ("trainer-a", "gpu-a"),  # short name of a non-EC2 hostname
        ("slurm-7.", "slurm-7"),  # trailing dot
    ],
)
def test_match(host: str, node: str) -> None:
    assert match(host, NODES) == node


@pytest.mark.parametrize("host", ["ip-10-9-9-9", "10.1.2.5", "", None, "trainer-b", "10"])
def test_no_match(host: str | None) -> None:
    assert match(host, NODES) is None


def test_ambiguous_short_name_stays_unmatched_but_exact_wins() -> None:
    nodes = [{"node": "a", "hostname": "gpu-1.east"}, {"node": "b", "hostname": "gpu-1.west"}]
    assert match("gpu-1", nodes) is None
    assert match("gpu-1.west", nodes) == "b"


def test_dotted_address_has_no_short_name() -> None:
    assert keys("10.1.2.3") == {"10.1.2.3", "ip-10-1-2-3"}
    assert "10" not in keys("10.1.2.3")


def test_plain_names_and_reuse() -> None:
    index = HostIndex(["ip-10-0-0-1", "ip-10-0-0-2"])
    assert [index.match(h) for h in ("10.0.0.2", "ip-10-0-0-1.ec2.internal", "x")] == [
        "ip-10-0-0-2",
        "ip-10-0-0-1",
        None,
    ]
