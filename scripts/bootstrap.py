"""Set up .venv with hptriage installed, on a machine that has only Python 3.

Where the ``venv`` module lacks ``ensurepip`` (Debian and Ubuntu without ``python3-venv``), pip comes
from the platform: as root the script installs ``python3-venv`` with apt-get and tries again; otherwise
it stops with one line saying what to install.  It never fetches anything from a hard-coded address;
the packages themselves come from whatever index pip is configured to use.

    python3 scripts/bootstrap.py          # the tool
    python3 scripts/bootstrap.py --test   # the tool and the test dependencies
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"


def _has_pip() -> bool:
    return PY.exists() and subprocess.run([PY, "-m", "pip", "--version"], capture_output=True).returncode == 0


def _try_venv() -> bool:
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    except Exception:  # ensurepip missing or broken (venv raises CalledProcessError or its own)
        return False
    return _has_pip()


def _venv_package() -> str:
    major, minor = sys.version_info[:2]
    return f"python{major}.{minor}-venv"


def _make_venv() -> None:
    if _has_pip() or _try_venv():
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
        for package in (_venv_package(), "python3-venv"):
            done = subprocess.run(["apt-get", "install", "-y", "-qq", package], env=env, check=False)
            if done.returncode == 0 and _try_venv():
                return
    sys.exit(
        f"bootstrap: Python's venv module cannot install pip here (ensurepip is missing); install "
        f"{_venv_package()} (Debian/Ubuntu: sudo apt-get install {_venv_package()}) and run this again"
    )


def main() -> int:
    _make_venv()
    extra = "[test]" if "--test" in sys.argv[1:] else ""
    cmd = [str(PY), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", f"{ROOT}{extra}"]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
