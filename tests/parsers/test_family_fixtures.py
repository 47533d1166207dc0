"""One fixture file per variant family, read at the values that matter.

Each family read by the parsers has a real fixture or, where none was found, a DERIVED one named so in its
folder's PROVENANCE.md (the real fixture it comes from and what was changed).
"""

from __future__ import annotations

import parsers
from parsers import efa_ports, fabricmanager, nccl_tests, nvidia_smi_csv, nvidia_smi_q, nvidia_smi_topo
from tests.conftest import FIXTURES, fixture_text


def test_topo_cpu_affinity_glued_to_numa_affinity() -> None:
    r = nvidia_smi_topo.parse(fixture_text("nvidia-smi-topo", "derived-deepep-60-affinity-glued-to-numa.txt"))
    assert not r.issues
    gpus = [d for d in r.rows("topo_device") if d["device_type"] == "gpu"]
    assert [(d["device"], d["cpu_affinity"], d["numa_affinity"], d["gpu_numa_id"]) for d in gpus] == [
        (f"GPU{i}", "0-47,96-143", "0", None) for i in range(4)
    ]


def test_csv_header_wrapped_over_three_lines_mid_field() -> None:
    text = fixture_text("nvidia-smi-csv", "derived-slurm-v100-header-wrapped-mid-field.txt")
    assert "utilization.mem\nory [%]" in text
    r = nvidia_smi_csv.parse(text)
    assert not r.issues
    rows = r.rows("gpu_query")
    assert len(rows) == 9
    first = rows[0]
    assert (first["line"], first["index"], first["timestamp"]) == (4, 0, "2020-11-12T13:48:11.412")
    assert (first["util_gpu_pct"], first["util_memory_pct"]) == (99.0, 52.0)
    assert (first["memory_total_mib"], first["memory_used_mib"], first["memory_free_mib"]) == (
        32480,
        30994,
        1486,
    )
    assert rows[-1]["util_memory_pct"] == 48.0


def test_fabricmanager_status_with_flush_left_properties() -> None:
    r = fabricmanager.parse(fixture_text("fabricmanager", "metaverse-blog-status-flush-left.txt"))
    assert not r.issues
    (state,) = r.rows("service_state")
    assert (state["unit"], state["load_state"], state["unit_file_state"]) == (
        "nvidia-fabricmanager.service",
        "loaded",
        "enabled",
    )
    assert (state["active_state"], state["sub_state"], state["main_pid"], state["main_process"]) == (
        "active",
        "running",
        2939,
        "nv-fabricmanager",
    )
    assert [a["key"] for a in r.rows("fabric_attribute")] == ["Loaded", "Active", "Main PID"]


def test_fabricmanager_journal_with_redacted_hosts() -> None:
    r = fabricmanager.parse(fixture_text("fabricmanager", "derived-nvtrust-128-journal-host-xxx.txt"))
    assert not r.issues
    journal = [e for e in r.rows("fabric_event") if e["ts_text"]]
    assert {e["hostname"] for e in journal} == {"xxx"}
    configured = next(e for e in journal if e["event"] == "configured")
    assert (configured["line"], configured["ident"], configured["pid"]) == (8, "nv-fabricmanager", 1120)
    r = fabricmanager.parse(fixture_text("fabricmanager", "derived-cube-studio-29-journal-host-redacted.txt"))
    assert not r.issues
    assert [(e["hostname"], e["ident"], e["pid"], e["event"]) for e in r.rows("fabric_event")] == [
        ("<redacted>", "nvidia-fabricmanager-start.sh", 4753, "platform"),
        ("<redacted>", "nvidia-fabricmanager-start.sh", 4756, None),
        ("<redacted>", "nvidia-fabricmanager-start.sh", 4753, "exit"),
        ("<redacted>", "systemd", 1, "exit"),
    ]


def test_nccl_wallclock_stamp_and_warn_source_place() -> None:
    r = nccl_tests.parse(fixture_text("nccl-tests", "derived-nccl-398-warn-wallclock-stamp.txt"))
    assert not r.issues
    events = r.rows("nccl_log_event")
    assert [(e["host"], e["device"], e["level"], e["prefix"], e["code_location"]) for e in events] == [
        ("ip-172-31-0-112", 7, "WARN", "[2026-01-05 08:14:03]", "ofi_init:700"),
        ("ip-172-31-0-112", 5, "WARN", "[2026-01-05 08:14:03.512]", "ofi_init:700"),
        ("ip-172-31-13-129", 0, "WARN", "[2026-01-05 08:14:03.512094 UTC]", "ofi_init:700"),
    ]
    r = nccl_tests.parse(fixture_text("nccl-tests", "nccl-tests-166-shm-direct-test-failure.txt"))
    (warn,) = [e for e in r.rows("nccl_log_event") if e["level"] == "WARN"]
    assert (warn["host"], warn["code_location"]) == ("ubuntu", "misc/shmutils.cc:112")
    assert warn["message"].startswith("Error while creating shared memory segment")


def test_smi_q_section_headers_flush_left_values_indented() -> None:
    text = fixture_text("nvidia-smi-q", "derived-proxmox-535-p40-section-headers-flush-left.txt")
    assert "\nApplications Clocks\n        Graphics" in text
    r = nvidia_smi_q.parse(text)
    assert not r.issues
    (gpu,) = r.rows("gpu")
    assert gpu["pci"] == "0000:83:00.0" and gpu["temp_c"] == 69.0
    clocks = {
        (a["section"], a["key"]): (a["value"], a["number"])
        for a in r.rows("gpu_attribute")
        if a["section"] in ("Applications Clocks", "Default Applications Clocks")
    }
    assert clocks == {
        ("Applications Clocks", "Graphics"): ("1303 MHz", 1303.0),
        ("Applications Clocks", "Memory"): ("3615 MHz", 3615.0),
        ("Default Applications Clocks", "Graphics"): ("1303 MHz", 1303.0),
        ("Default Applications Clocks", "Memory"): ("3615 MHz", 3615.0),
    }
    real = nvidia_smi_q.parse(fixture_text("nvidia-smi-q", "proxmox-535-p40-host-vgpu-driver-capability.txt"))
    assert r.rows("gpu") == real.rows("gpu")


def test_efa_one_link_layer_file_and_soft_roce_device() -> None:
    path = (
        FIXTURES
        / "efa-ports"
        / "sysfs"
        / "sys"
        / "class"
        / "infiniband"
        / "mlx5_0"
        / "ports"
        / "1"
        / "link_layer"
    )
    text = path.read_text(encoding="utf-8")
    assert text == "Ethernet\n" and parsers.detect_kind(text) == "efa-ports"
    r = efa_ports.parse(text, filename=path.relative_to(FIXTURES.parent.parent).as_posix())
    assert not r.issues
    (port,) = r.rows("efa_port")
    assert (port["device"], port["port"], port["link_layer"], port["source"], port["is_efa"]) == (
        "mlx5_0",
        1,
        "Ethernet",
        "sysfs",
        False,
    )
    r = efa_ports.parse(fixture_text("efa-ports", "softroce-rxe-dev-46-ibv_devinfo-rxe0.txt"))
    (port,) = r.rows("efa_port")
    assert (port["device"], port["provider"], port["is_efa"]) == ("rxe0", "rxe", False)


def test_csv_header_broken_inside_several_fields_is_joined_back() -> None:
    """The slurm fixture's header broken inside three fields at once (``utilization.mem|ory``,
    ``memory.to|tal``, ``memory.fr|ee``): every way of joining is tried, the one naming known fields
    wins, and the rows read as from the unbroken file."""
    text = fixture_text("nvidia-smi-csv", "slurm-v100-timestamp-l5.txt")
    header, rest = text.split("\n", 1)
    broken = (
        header.replace("utilization.memory", "utilization.mem\nory")
        .replace("memory.total", "memory.to\ntal")
        .replace("memory.free", "memory.fr\nee")
    )
    whole, split = nvidia_smi_csv.parse(text), nvidia_smi_csv.parse(broken + "\n" + rest)
    assert not split.issues
    strip = [{k: v for k, v in row.items() if k != "line"} for row in split.rows("gpu_query")]
    assert strip == [{k: v for k, v in row.items() if k != "line"} for row in whole.rows("gpu_query")]
    assert split.rows("gpu_query")[0]["memory_total_mib"] == 32480
