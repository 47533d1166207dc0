"""Kernel-log Xid / SXid lines whose device cannot be read are still events of the node, said by a
ParseIssue; lines naming the GPU by the driver's number keep that number (``gpu_index``).

Fixtures: tests/fixtures/dmesg/ (PROVENANCE.md, "Devices that cannot be read"): the ``ogkm-1230-*``
files are real, the ``derived-*`` files are real lines with the device edited as pasted logs redact it,
or written in the driver's wording where no real sample was found, and say so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from analyzer.cli import cli
from parsers import dmesg
from tests.conftest import FIXTURES, fixture_text


def parsed(name: str) -> tuple[list[dict], list[tuple[int, str]]]:
    result = dmesg.parse(fixture_text("dmesg", name))
    return result.rows("kernel_event"), [(i.line_no, i.reason) for i in result.issues]


def test_redacted_xid_address_is_an_event_with_pci_none_and_an_issue() -> None:
    ev, issues = parsed("derived-gpud-readme-xid-redacted-pci.txt")
    assert [(e["line"], e["event_type"], e["xid"], e["pci"], e["gpu_index"]) for e in ev] == [
        (1, "xid", 13, None, None),
        (2, "xid", 109, None, None),
    ]
    assert ev[1]["process"] == "pt_main_thread" and ev[1]["ts"] == "2024-08-30T11:43:14"
    assert "CTX SWITCH TIMEOUT" in ev[1]["message"]
    assert [no for no, _ in issues] == [1, 2]
    assert "'PCI:0000:XX:00' could not be read" in issues[0][1] and "'PCI:...'" in issues[1][1]


def test_redacted_xid79_is_an_event() -> None:
    ev, issues = parsed("derived-gpud-870-xid79-redacted-pci.txt")
    assert [(e["event_type"], e["xid"], e["pci"]) for e in ev] == [("xid", 79, None)]
    assert issues == [
        (1, "Xid line whose device 'PCI:xxxx:xx:xx' could not be read: event kept, device unknown")
    ]


def test_xid_by_gpu_number_resolved_from_the_same_log_or_kept_as_number() -> None:
    ev, issues = parsed("derived-gpud-500-xid119-by-gpu-number-and-uuid.txt")
    assert [(e["line"], e["xid"], e["pci"], e["gpu_index"]) for e in ev if e["event_type"] == "xid"] == [
        (2, 119, "0000:9b:00.0", 4),  # the address and "from GPU4 GSP!" tie GPU4 to 0000:9b:00.0
        (3, 119, "0000:9b:00.0", 4),  # "Xid (GPU4)": resolved through line 2
        (4, 119, None, 3),  # "Xid (GPU3)": no line of the log gives GPU3's address
        (5, 13, "0000:9b:00.0", None),  # the UUID of the "GPU at" line
    ]
    assert [no for no, _ in issues] == [3, 4, 5]
    assert "0000:9b:00.0 from line 2" in issues[0][1]
    assert "by the driver's number" in issues[1][1] and "GPU3" in issues[1][1]
    assert "0000:9b:00.0 from line 1" in issues[2][1]


def test_a_gpu_number_tied_to_two_addresses_is_not_resolved() -> None:  # hand-written (driver wording)
    text = (
        "[ 1.0] NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=a, Timeout after 45s of waiting for RPC"
        " response from GPU4 GSP! Expected function 76\n"
        "[ 2.0] NVRM: Xid (PCI:0000:bb:00): 119, pid=1, name=a, Timeout after 45s of waiting for RPC"
        " response from GPU4 GSP! Expected function 76\n"
        "[ 3.0] NVRM: Xid (GPU4): 13, pid=1, name=a, Graphics Exception\n"
    )
    result = dmesg.parse(text)
    last = result.rows("kernel_event")[-1]
    assert (last["pci"], last["gpu_index"], last["xid"]) == (None, 4, 13)
    assert [i.line_no for i in result.issues] == [3]


def test_redacted_sxid_is_an_event_with_pci_none_and_an_issue() -> None:
    ev, issues = parsed("derived-sber-nvswitch3-sxid-redacted-pci.txt")
    assert [(e["event_type"], e["xid"], e["pci"]) for e in ev] == [("sxid", 22013, None)] * 3
    assert ev[0]["severity"] == "Non-fatal"
    assert [no for no, _ in issues] == [1, 2, 3] and "SXid line whose device 'PCI:...'" in issues[0][1]


def test_real_nvrm_lines_by_gpu_number_keep_it() -> None:
    """ogkm-1230: GSP heartbeat, sysmembar timeout and memory-subsystem lines of GPU6, named for what they
    are; the log names no address for GPU6, so none is guessed (and nothing is unread: no issue)."""
    ev, issues = parsed("ogkm-1230-dmesg-gsp-timeout-by-gpu-number.txt")
    nvrm = [(e["line"], e["event_type"], e["pci"], e["gpu_index"]) for e in ev if e["gpu_index"] is not None]
    assert nvrm == [
        (3, "gsp_timeout", None, 6),
        (4, "gsp_timeout", None, 6),  # the driver printed it twice: two events
        (5, "nvrm_message", None, 6),  # _threadNodeCheckTimeout: two lines of one function, one event
        (7, "bus_timeout", None, 6),
        (8, "memory_error", None, 6),
        (9, "memory_error", None, 6),
        (10, "gsp_timeout", None, 6),
    ]
    assert ev[3]["message"].endswith("Timeout was set to: 4000 msecs!")
    assert "kbusSendSysmembarSingle_GH100: - timeout error" in ev[4]["message"]
    assert issues == []


def test_a_gpu_number_is_tied_to_the_address_of_the_rminitadapter_verdict_after_it() -> None:
    """ogkm-1230: ``GPU6 _kgspBootGspRm`` / ``GPU6 RmInitAdapter: Cannot initialize GSP firmware RM``, then
    the OS layer's ``GPU 0000:a1:00.0: RmInitAdapter failed!`` for the same GPU: GPU6 is a1:00.0."""
    ev, issues = parsed("ogkm-1230-dmesg-wpr2-gpu-number-then-address.txt")
    assert [(e["line"], e["event_type"], e["pci"], e["gpu_index"]) for e in ev] == [
        (1, "gpu_init_failed", "0000:a1:00.0", 6),
        (3, "gpu_init_failed", "0000:a1:00.0", 6),
        (4, "gpu_init_failed", "0000:a1:00.0", None),
        (5, "gpu_init_failed", "0000:a1:00.0", None),
    ]
    assert ev[0]["message"].endswith("(the GPU is likely in a bad state and may need to be reset)")
    assert issues == []


def test_an_address_keeps_gpu_index_empty() -> None:
    ev, _ = parsed("uce-runbook-xid48-63-94-dbe.txt")
    assert {(e["pci"], e["gpu_index"]) for e in ev} == {("0000:52:00.0", None)}


def test_cli_parse_prints_the_event_of_a_redacted_xid() -> None:
    path = FIXTURES / "dmesg" / "derived-gpud-870-xid79-redacted-pci.txt"
    result = CliRunner().invoke(cli, ["parse", str(path), "--kind", "dmesg", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["table"], r["event_type"], r["xid"], r["pci"]) for r in rows] == [
        ("kernel_event", "xid", 79, None)
    ]


def test_installed_command_prints_the_event_and_says_the_issue() -> None:
    exe = Path(sys.executable).with_name("hptriage")
    path = FIXTURES / "dmesg" / "derived-gpud-readme-xid-redacted-pci.txt"
    done = subprocess.run(
        [str(exe), "parse", str(path), "--kind", "dmesg", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [r["xid"] for r in json.loads(done.stdout)] == [13, 109]
    assert "could not be read" in done.stderr
