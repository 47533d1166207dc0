"""Where the operating system lacks Pango, ``analyze --pdf`` says so in one line (exit 2, usage error)
before any work, and every other report is written.  WeasyPrint prints a block of advice to standard
output when its import fails; none of it reaches ours.

Pango is hidden by binding /dev/null over its library in a private user and mount namespace
(``unshare -rm``), so the loader finds a file it cannot load, as on a host without the package; on a
machine without Pango the commands run as they are.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SAMPLES

SAMPLE = SAMPLES / "xid-ecc-3node" / "bundle"
HPTRIAGE = [sys.executable, "-m", "analyzer.cli"]
#: binds /dev/null over each library named before "--", then runs the command after it
_HIDE = 'while [ "$1" != -- ]; do mount --bind /dev/null "$1" || exit 97; shift; done; shift; exec "$@"'


def pango_libraries() -> list[str]:
    """The files of Pango's library that this machine loads (none where it has no Pango)."""
    name = ctypes.util.find_library("pango-1.0")
    if not name:
        return []
    try:
        ctypes.CDLL(name)
    except OSError:
        return []
    maps = [line.split(None, 5) for line in Path("/proc/self/maps").read_text().splitlines()]
    return sorted({os.path.realpath(f[5]) for f in maps if len(f) == 6 and "/libpango-1.0.so" in f[5]})


def namespace_refusal(flags: str) -> str | None:
    """Why ``unshare FLAGS`` (with a bind mount when -m) cannot run here, or None."""
    if shutil.which("unshare") is None:
        return "unshare (util-linux) is not installed"
    probe = ["unshare", flags, "sh", "-c", "mount --bind /dev/null /dev/null" if "m" in flags else "true"]
    done = subprocess.run(probe, capture_output=True, text=True)
    return None if done.returncode == 0 else f"unshare {flags} is refused here: {done.stderr.strip()}"


def without_pango(argv: list[str], *, network: bool = True) -> list[str]:
    """``argv`` run with Pango's library hidden (and, with network=False, in a network namespace of
    its own: no interface but a down loopback)."""
    libs = pango_libraries()
    if not libs and network:
        return argv
    return ["unshare", "-rm" if network else "-rmn", "sh", "-c", _HIDE, "sh", *libs, "--", *argv]


@pytest.fixture
def no_pango() -> None:
    if pango_libraries() and (why := namespace_refusal("-rm")):
        pytest.skip(f"cannot hide Pango: {why}")


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


@pytest.mark.optional(
    "a container may refuse user, mount and network namespaces whatever is installed", skips="is refused here"
)
@pytest.mark.usefixtures("no_pango")
def test_pdf_without_pango_is_one_line_before_the_analysis(tmp_path: Path) -> None:
    pdf, findings = tmp_path / "r.pdf", tmp_path / "f.json"
    proc = _run(
        without_pango([*HPTRIAGE, "analyze", str(SAMPLE), "--pdf", str(pdf), "--json", str(findings)])
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "", "WeasyPrint's advice must not reach standard output"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("hptriage: error: --pdf needs Pango, which WeasyPrint cannot load here ("), (
        lines[0]
    )
    assert "apt-get install libpango-1.0-0 libpangoft2-1.0-0" in lines[0] and "dnf install pango" in lines[0]
    assert not findings.exists() and not pdf.exists(), "said before the analysis, nothing written"


@pytest.mark.optional(
    "a container may refuse user, mount and network namespaces whatever is installed", skips="is refused here"
)
@pytest.mark.usefixtures("no_pango")
def test_every_other_report_is_written_without_pango(tmp_path: Path) -> None:
    outputs = {"--json": tmp_path / "f.json", "--html": tmp_path / "r.html", "--md": tmp_path / "r.md"}
    args = [a for option, path in outputs.items() for a in (option, str(path))]
    proc = _run(without_pango([*HPTRIAGE, "analyze", str(SAMPLE), *args, "--format", "summary"]))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # nothing but the summary on standard output
    assert summary["verdict"]["status"] == "concerns"
    assert json.loads(outputs["--json"].read_text())["verdict"]["status"] == "concerns"
    assert 'id="verdict"' in outputs["--html"].read_text() and outputs["--md"].read_text().strip()
