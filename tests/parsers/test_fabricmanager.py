"""fabricmanager parser: running, failed-by-signal script output, not-found; the error contract."""

from __future__ import annotations

import pytest

import parsers
from parsers import fabricmanager
from tests.conftest import fixture_files, fixture_text


def state(name: str) -> dict:
    [row] = fabricmanager.parse(fixture_text("fabricmanager", name)).rows("service_state")
    return row


def test_failed_by_sigkill_in_script_output_with_fabric_registration() -> None:
    row = state("devrel-580-failed-signal-kill-script-redacted.txt")
    assert row["line"] == 29 and row["unit"] == "nvidia-fabricmanager.service"
    assert (row["load_state"], row["unit_file_state"]) == ("loaded", "enabled")
    assert (row["active_state"], row["sub_state"], row["result"]) == ("failed", "failed", "signal")
    assert row["since"] == "2026-08-10T15:45:34" and row["since_tz"] == "UTC"
    assert row["main_pid"] == 9946 and row["main_exit"] == "code=killed, signal=KILL"
    assert (row["fabric_state"], row["fabric_status"], row["fabric_gpu_count"]) == ("Completed", "Success", 3)
    assert row["version"] == "580.xxx.xx" and row["exec_failure"] is None


def test_running_rhel_with_triggeredby_and_preset() -> None:
    row = state("rhelai-h100-vm-running-triggeredby-truncated.txt")
    assert (row["active_state"], row["sub_state"], row["main_pid"]) == ("active", "running", 2116)
    assert row["since"] == "2025-03-25T02:10:15" and row["unit_file_state"] == "enabled"
    assert row["fabric_state"] is None and row["result"] is None and row["last_error"] is None


def test_running_pager_cut_local_time_zone() -> None:
    row = state("sber-590-running-clean-pager-cut.txt")
    assert (row["active_state"], row["sub_state"], row["main_pid"]) == ("active", "running", 5219)
    assert row["since"] == "2026-03-03T18:39:35" and row["since_tz"] == "MSK"
    assert row["exec_failure"] is None and row["last_error"] is None


@pytest.mark.parametrize(
    "text",
    [
        "Unit nvidia-fabricmanager.service could not be found.\n",
        "○ nvidia-fabricmanager.service\n"
        "   Loaded: not-found (Reason: Unit nvidia-fabricmanager.service not found.)\n"
        "   Active: inactive (dead)\n",
    ],
)
def test_unit_not_found_is_a_row(text: str) -> None:
    [row] = fabricmanager.parse(text).rows("service_state")
    assert row["unit"] == "nvidia-fabricmanager.service"
    assert row["load_state"] == "not-found" and row["active_state"] == "not-found"


def test_restart_loop_with_failing_precheck_and_journal_error() -> None:
    text = (
        "● nvidia-fabricmanager.service - NVIDIA fabric manager service\n"
        "  Active: activating (auto-restart) (Result: exit-code) since Tue 2025-03-25 02:10:15 UTC; 3s ago\n"
        "    Process: 4806 ExecStartPre=/usr/bin/nvidia-fabricmanager-start.sh --mode precheck "
        "(code=exited, status=1/FAILURE)\n"
        "Mar 25 02:10:14 host nv-fabricmanager[2116]: request to query NVSwitch device information from "
        "NVSwitch driver failed with error:Unknown Error\n"
        "lines 1-22/22 (END)\n"
    )
    [row] = fabricmanager.parse(text).rows("service_state")
    assert (row["active_state"], row["sub_state"], row["result"]) == (
        "activating",
        "auto-restart",
        "exit-code",
    )
    assert row["exec_failure"] == "ExecStartPre code=exited, status=1/FAILURE"
    assert row["last_error"].startswith("request to query NVSwitch device information")


@pytest.mark.parametrize("path", fixture_files("fabricmanager"), ids=lambda p: p.name)
def test_detected_as_fabricmanager(path) -> None:  # type: ignore[no-untyped-def]
    assert parsers.detect_kind(path.read_text(encoding="utf-8")) == "fabricmanager"
