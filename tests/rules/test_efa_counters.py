"""net.efa.port_errors and EFA firmware drift (version.drift, component efa_fw).

Input is the collector's own sysfs dump (`path: value` lines of s_efa_ports); no real capture of it is
in the samples, so these lines are written in that exact format.
"""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import analyze, write_node


def sysfs(fw: str, rcv: int, discards: int, devices: int = 2) -> str:
    lines = []
    for d in range(devices):
        dev = f"/sys/class/infiniband/rdmap{79 + d}s0"
        lines += [
            f"{dev}/fw_ver: {fw}",
            f"{dev}/ports/1/state: 4: ACTIVE",
            f"{dev}/ports/1/phys_state: 5: LinkUp",
            f"{dev}/ports/1/counters/port_rcv_errors: {rcv if d == 1 else 0}",
            f"{dev}/ports/1/counters/port_xmit_discards: {discards if d == 1 else 0}",
        ]
    return "\n".join(lines) + "\n"


def test_port_errors_fire_only_on_the_port_with_errors(tmp_path: Path) -> None:
    cluster = tmp_path / "c"
    write_node(cluster, "noisy", {"cmd/efa-ports.txt": ("efa-ports", sysfs("1.2.3", 17, 4))})
    write_node(cluster, "clean", {"cmd/efa-ports.txt": ("efa-ports", sysfs("1.2.3", 0, 0))})
    found = analyze(cluster).of("net.efa.port_errors")
    assert [
        (f.node, f.params["device"], f.params["rcv_errors"], f.params["xmit_discards"]) for f in found
    ] == [("noisy", "rdmap80s0", 17, 4)]
    assert "port_rcv_errors" in (found[0].evidence[0].text or "") or found[0].evidence[0].line is not None


def test_efa_firmware_drift_names_the_odd_node(tmp_path: Path) -> None:
    cluster = tmp_path / "c"
    meta = {"instance_type": "p5.48xlarge"}
    for i in range(1, 5):
        fw = "1.2.4" if i == 3 else "1.2.3"
        write_node(cluster, f"node-{i}", {"cmd/efa-ports.txt": ("efa-ports", sysfs(fw, 0, 0))}, meta=meta)
    result = analyze(cluster)
    drift = [f for f in result.of("version.drift") if f.params.get("component") == "efa_fw"]
    assert len(drift) == 1 and "node-3" in drift[0].message and "1.2.3" in drift[0].message
    assert not result.of("net.efa.port_errors")
