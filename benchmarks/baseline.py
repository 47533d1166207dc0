"""A module of the project as it was at a git revision (or as a copy of the file), loaded beside today's,
so that a benchmark compares the two in the same run."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_at(source: str, relative: str, name: str) -> types.ModuleType:
    """``relative`` (e.g. ``parsers/dmesg.py``) as of the git revision ``source``, or the file at
    ``source``, as the module ``name``."""
    path = Path(source)
    if path.is_file():
        code = path.read_text()
    else:
        code = subprocess.run(
            ["git", "show", f"{source}:{relative}"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    module = types.ModuleType(name)
    module.__file__ = str(ROOT / relative)
    sys.modules[module.__name__] = module
    exec(compile(code, f"{source}:{relative}", "exec"), module.__dict__)  # noqa: S102
    return module
