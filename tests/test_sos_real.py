"""A sos report made on this machine, at test time, by the sos that Debian ships (package ``sosreport``,
sos 4.0 in Debian 12), then analyzed: what the producer really writes, not what its source says.

Nothing of it is kept: the report describes the machine that made it, so it is made in the test's
temporary folder and goes with it.  .ci/run installs the package; where sos is not installed, or the
test does not run as root (sos refuses to run otherwise), the test is skipped and says why.

The plugins are a few quick ones (kernel, host, filesys, logs, nvidia: a few seconds): kernel's
``dmesg`` and ``uname -a``, host's ``hostname``, filesys's copy of ``/proc/mounts`` (which sos keeps as
the links ``proc/mounts -> self/mounts`` and ``proc/self -> <its pid>``, and ``etc/mtab ->
../proc/self/mounts``), logs (the journal's earlier boot where the machine keeps one), and nvidia (run
even without nvidia-smi, as ``--only-plugins`` forces it: its commands are not found, exit 127).  The
date plugin is left out, so the collection time is the manifest's ``start_time``, the host's local
time.  sos 4.0 writes ``<report>.md5`` beside the report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

PLUGINS = "kernel,host,filesys,logs,nvidia"
#: the most the sos run may take here (it takes a few seconds; a slow CI machine gets room)
SOS_SECONDS = 120


def _sos() -> str:
    sos = shutil.which("sos")
    if sos is None:
        pytest.skip(
            "sos is not installed (Debian package sosreport: apt-get install sosreport; .ci/run does)"
        )
    if os.geteuid() != 0:
        pytest.skip("sos report runs as root only, and this test does not")
    return sos


@pytest.fixture(scope="module")
def real_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, datetime, datetime, float]:
    """(the report tarball sos wrote, local time before and after the run, seconds the run took)."""
    sos = _sos()
    out = tmp_path_factory.mktemp("sos")
    before = datetime.now()
    start = time.monotonic()
    done = subprocess.run(
        [sos, "report", "--batch", "--tmp-dir", str(out), "--only-plugins", PLUGINS],
        capture_output=True,
        text=True,
        timeout=SOS_SECONDS,
        check=False,
    )
    took = time.monotonic() - start
    after = datetime.now()
    reports = sorted(out.glob("sosreport-*.tar.*"))
    reports = [p for p in reports if not p.name.endswith((".md5", ".sha256"))]
    assert done.returncode == 0 and len(reports) == 1, (
        done.returncode,
        done.stdout[-2000:],
        done.stderr[-2000:],
    )
    return reports[0], before, after, took


def test_real_sos_report_is_one_node_with_its_mounts_time_and_digest(
    real_report: tuple[Path, datetime, datetime, float], tmp_path: Path
) -> None:
    path, before, after, took = real_report
    assert took < SOS_SECONDS
    host = subprocess.run(["hostname"], capture_output=True, text=True, check=True).stdout.strip()
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    summary = load(con, [path], work, Limits(), jobs=1)
    assert summary.nodes == [host], summary.unread_inputs
    # the kernel's mount table, read through sos's links: the root file system is in it
    source = con.execute("SELECT DISTINCT source_file FROM mount WHERE node = ?", [host]).fetchall()
    assert len(source) == 1 and source[0][0].endswith(f"{path.name}!proc/mounts"), source
    root = con.execute("SELECT fstype FROM mount WHERE node = ? AND mountpoint = '/'", [host]).fetchall()
    assert root, con.execute("SELECT mountpoint FROM mount").fetchall()
    # the collection time: the manifest's start_time, local time, between our clock before and after
    (collected,) = con.execute("SELECT collected_at FROM node WHERE node = ?", [host]).fetchone()
    assert before - timedelta(seconds=1) <= collected <= after, (before, collected, after)
    # sos 4.0's .md5 beside it, checked
    digest = con.execute("SELECT status, sha256_file FROM bundle_checksum WHERE node = ?", [host]).fetchall()
    assert digest == [("ok", f"{path}.md5")], digest
    # the kernel log, the host plugin's uptime, and nvidia-smi not installed (exit 127: coverage)
    kinds = dict(con.execute("SELECT kind, exit_code FROM probe WHERE node = ?", [host]).fetchall())
    assert kinds.get("dmesg") == 0 and kinds.get("mounts") == 0 and kinds.get("uptime") == 0, kinds
    unread = [u.path for u in summary.unread_inputs]
    assert not [u for u in unread if u.endswith(("proc/mounts", "etc/mtab"))], unread

    code, report, output = analyze_json(tmp_path, path)
    assert code in (0, 5), output
    zone = [p["error"] for p in report["parse_problems"] if "zone is unknown" in p["error"]]
    assert zone, "the collection time is said to be local time in a zone unknown"
