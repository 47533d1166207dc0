"""CI cannot go green by skipping: a system package that does not install fails .ci/run before any test,
and under HPTRIAGE_CI=1 a skip that is not declared optional fails the session (tests/skips.py).

apt-get is never run here: a fake one on PATH answers as apt-get does for a package it cannot find
("E: Unable to locate package", exit 100), and a fake python3 records whether .ci/run went on to the
tests.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEP = ROOT / ".ci" / "system-packages"
BOGUS = "hptriage-no-such-package"

FAKE_APT_GET = f"""#!/bin/sh
# apt-get as it answers for a package its lists do not hold; any other package installs
echo "apt-get $*" >> "$FAKE_LOG"
[ "$1" = update ] && exit 0
for arg in "$@"; do
  case "$arg" in
    {BOGUS}*|"$FAKE_MISSING") echo "E: Unable to locate package $arg" >&2; exit 100 ;;
  esac
done
exit 0
"""


def _bin(tmp_path: Path, **scripts: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name, text in scripts.items():
        path = folder / name.replace("_", "-")
        path.write_text(text)
        path.chmod(0o755)
    return folder


def _env(tmp_path: Path, path: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HPTRIAGE_CI", "JAVA_HOME")}
    return {**env, "PATH": path, "FAKE_LOG": str(tmp_path / "log"), "FAKE_MISSING": "-", **extra}


def _root_with_apt(tmp_path: Path) -> Path:
    """A fake apt-get, and an id that says root, before this machine's own tools."""
    return _bin(
        tmp_path, apt_get=FAKE_APT_GET, id='#!/bin/sh\n[ "$1" = -u ] && echo 0 || exec /usr/bin/id "$@"\n'
    )


def test_a_package_that_cannot_be_installed_fails_the_step(tmp_path: Path) -> None:
    fake = _root_with_apt(tmp_path)
    done = subprocess.run(
        ["bash", str(STEP), "poppler-utils", BOGUS],
        capture_output=True,
        text=True,
        env=_env(tmp_path, f"{fake}:/usr/bin:/bin"),
    )
    assert done.returncode == 1, done
    assert f"E: Unable to locate package {BOGUS}" in done.stderr
    assert "ci: cannot install the system packages the tests need" in done.stderr
    log = (tmp_path / "log").read_text()
    assert f"install -y -qq --no-install-recommends poppler-utils {BOGUS}" in log
    # the same step with packages apt-get finds succeeds: the failure above is the bogus name's
    ok = subprocess.run(
        ["bash", str(STEP), "poppler-utils"],
        capture_output=True,
        text=True,
        env=_env(tmp_path, f"{fake}:/usr/bin:/bin"),
    )
    assert ok.returncode == 0, ok


def test_ci_run_stops_before_the_tests_when_a_package_cannot_be_installed(tmp_path: Path) -> None:
    """.ci/run itself: its package step's own list, one package of which apt-get cannot find; the
    README's test command (bootstrap, pytest) is never reached."""
    fake = _root_with_apt(tmp_path)
    _bin(tmp_path, python3=f'#!/bin/sh\necho python3 "$@" >> "{tmp_path}/ran"\nexit 97\n')
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        capture_output=True,
        text=True,
        env=_env(tmp_path, f"{fake}:/usr/bin:/bin", FAKE_MISSING="chromium"),
    )
    assert done.returncode == 1, done
    assert "E: Unable to locate package chromium" in done.stderr
    assert "ci: running:" not in done.stdout and not (tmp_path / "ran").exists()


def test_without_apt_get_the_step_names_each_missing_tool(tmp_path: Path) -> None:
    """Not root (or no apt-get): nothing is installed, and the check names what the tests will lack."""
    fake = _bin(tmp_path)
    done = subprocess.run(
        ["/bin/bash", str(STEP)], capture_output=True, text=True, env=_env(tmp_path, str(fake))
    )
    assert done.returncode == 1, done
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("ci: the tests need pdftotext pdftoppm pdfinfo sos chromium java libpango-1.0,")
    # with every tool there (fakes), the check passes without installing anything
    tools = {
        name: "#!/bin/sh\nexit 0\n"
        for name in ("pdftotext", "pdftoppm", "pdfinfo", "sos", "chromium", "java")
    }
    ldconfig = "#!/bin/sh\necho '\tlibpango-1.0.so.0 (libc6,x86-64) => /usr/lib/libpango-1.0.so.0'\n"
    _bin(tmp_path, ldconfig=ldconfig, **tools)
    os.symlink(shutil.which("grep") or "/bin/grep", fake / "grep")
    ok = subprocess.run(
        ["/bin/bash", str(STEP)], capture_output=True, text=True, env=_env(tmp_path, str(fake))
    )
    assert ok.returncode == 0, ok
    assert not (tmp_path / "log").exists()


# -- the skip hook --------------------------------------------------------------------------------

SESSION = """
import pytest
from tests.skips import cases

def test_passes():
    pass

def test_a_tool_is_missing():
    pytest.skip("poppler-utils (pdftotext, pdftoppm) not installed")

@pytest.mark.optional("the machine may refuse namespaces", skips="no namespace here")
def test_declared_skip():
    pytest.skip("no namespace here: unshare -rn refused")

@pytest.mark.optional("the machine may refuse namespaces", skips="no namespace here")
def test_other_skip_of_a_declaring_test():
    pytest.skip("unshare is not installed")

@pytest.mark.parametrize("name", cases(["a.txt", "b.txt"], {"b.txt": "jc reads no rows of it"}))
def test_excluded_case(name):
    assert name == "a.txt"

@pytest.mark.xfail(reason="a known bug")
def test_xfail():
    assert False
"""

MODULE_SKIPPED = (
    'import pytest\n\npytest.importorskip("hptriage_no_such_module")\n\n\ndef test_x():\n    pass\n'
)
HOOKS = (
    "from tests.conftest import (pytest_collectreport, pytest_configure, pytest_runtest_makereport,\n"
    "                            pytest_sessionfinish, pytest_terminal_summary)\n"
)


def _session(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(HOOKS)
    (tmp_path / "test_session.py").write_text(SESSION)
    (tmp_path / "test_module_skipped.py").write_text(MODULE_SKIPPED)
    env = {k: v for k, v in os.environ.items() if k != "HPTRIAGE_CI"}
    env["PYTHONPATH"] = str(ROOT)
    if ci:
        env["HPTRIAGE_CI"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def test_under_ci_an_undeclared_skip_fails(tmp_path: Path) -> None:
    done = _session(tmp_path, ci=True)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "FAILED test_session.py::test_a_tool_is_missing" in out
    assert "skipped under CI (HPTRIAGE_CI=1): poppler-utils (pdftotext, pdftoppm) not installed" in out
    # a declaring test's other skip is no declared skip
    assert "FAILED test_session.py::test_other_skip_of_a_declaring_test" in out
    assert re.search(r"SKIPPED \[1\] test_session.py:\d+: no namespace here: unshare -rn refused", out)
    assert "jc reads no rows of it" in out and "PASSED test_session.py::test_excluded_case[a.txt]" in out
    assert "XFAIL test_session.py::test_xfail" in out
    skipped_whole = out.split("skipped whole under CI", 1)[1]
    assert skipped_whole.split("\n")[1].startswith(
        "test_module_skipped.py: could not import 'hptriage_no_such"
    )
    assert "2 failed, 2 passed, 3 skipped, 1 xfailed" in out


def test_outside_ci_a_skip_is_a_skip(tmp_path: Path) -> None:
    done = _session(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 5 skipped, 1 xfailed" in done.stdout
