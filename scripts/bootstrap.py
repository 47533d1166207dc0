"""Set up .venv with hptriage installed, on a machine that has only Python 3.

Works where the ``venv`` module lacks ``ensurepip`` (Debian without python3-venv): the virtual
environment is then made without pip and pip is fetched as a wheel from PyPI.

    python3 scripts/bootstrap.py          # the tool
    python3 scripts/bootstrap.py --test   # the tool and the test dependencies
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"


def _has_pip() -> bool:
    return PY.exists() and subprocess.run([PY, "-m", "pip", "--version"], capture_output=True).returncode == 0


def _make_venv() -> None:
    if _has_pip():
        return
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    except Exception:  # ensurepip missing or broken: make it without pip and fetch pip itself
        venv.EnvBuilder(with_pip=False, clear=True).create(VENV)
    if not _has_pip():
        with urllib.request.urlopen("https://pypi.org/pypi/pip/json", timeout=60) as resp:
            release = json.load(resp)
        wheel = next(u for u in release["urls"] if u["filename"].endswith(".whl"))
        target = VENV / wheel["filename"]
        with urllib.request.urlopen(wheel["url"], timeout=120) as resp:
            target.write_bytes(resp.read())
        subprocess.run([PY, f"{target}/pip", "install", "-q", str(target)], check=True)


def main() -> int:
    _make_venv()
    extra = "[test]" if "--test" in sys.argv[1:] else ""
    cmd = [str(PY), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-e", f"{ROOT}{extra}"]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
