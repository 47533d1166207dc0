"""What the one-parser benchmarks share: a module of the project as it was at a git revision (or as a
copy of the file), loaded beside today's so that a benchmark compares the two in the same run, and the
best of several timings."""

from __future__ import annotations

import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def best(fn: Callable[[], Any], runs: int) -> float:
    """The shortest wall time of ``runs`` calls of fn (the least disturbed by the rest of the machine)."""
    out = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - start)
    return out
