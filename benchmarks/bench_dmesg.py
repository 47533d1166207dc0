"""Speed of the kernel-log parser against a baseline version of it, measured in the same run.

    .venv/bin/python benchmarks/bench_dmesg.py [--baseline REV|FILE] [--runs 7] [--polars DIR] [--differs] [--cpu]

The baseline is ``parsers/dmesg.py`` as of a git revision (default ``HEAD``) or a copy of the file; both
versions parse the same inputs, alternately, best of ``--runs``, and must give the same rows and issues
(with ``--differs``, for a baseline that reads less, e.g. one before a catalog change, they may not: the
rows of each are counted instead).  A baseline revision is read whole (``parsers/dmesg.py`` and the
kernel-signature catalog beside it as they were then):

- every real kernel log of ``tests/fixtures/dmesg`` (each file parsed on its own, the times summed);
- a generated node's 1 MB kernel log (``benchmarks/generate.py``: boot-log noise, a few link and EFA
  lines);
- a 1 MB log of a node whose links flap: about 40 % of its lines hold a candidate substring (bonding and
  mlx5 link lines, EFA probes and driver banners from the fixtures, ENA ``Link is Up/Down`` and the nvidia
  driver's NVSwitch probe lines), most of them events.

Then the ways of finding the candidate lines of those logs (``parsers.dmesg.candidate_lines``): the
substring loop in Python, one compiled alternation of the keys per line, one compiled trie of them per line
(the parser's path for small logs), the vectorised RE2 pass (pyarrow.compute), and, when
``--polars DIR`` names a folder where polars is installed (``pip install --target DIR polars``; it is no
dependency of the project), polars' ``str.contains``.  Each figure includes ``splitlines``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import random
import re
import shutil
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from parsers import dmesg  # noqa: E402
from parsers._base import ParserFailure  # noqa: E402

_spec = importlib.util.spec_from_file_location("_bench_generate", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

FLAP_SHARE = 0.4
EFA_FIXTURE = "dmesg/amzn-114-dmesg-efa-setup-irq-ib-registered.txt"
#: p5.48xlarge: the four NVSwitches' PCI buses, and the ENA interfaces with theirs
NVSWITCH_BUSES = ("05", "06", "07", "08")
ENA = (("00:05.0", "eth0"), ("00:06.0", "eth1"))


from baseline import module_at  # noqa: E402


def baseline(source: str) -> types.ModuleType:
    """``parsers/dmesg.py`` of a git revision or of a file, as a module of its own; at a revision that
    has the kernel-signature catalog, with that revision's catalog (its ``_kernel_catalog`` and TOML)."""
    if Path(source).is_file() or not _has_catalog(source):
        return module_at(source, "parsers/dmesg.py", "_dmesg_baseline")
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="bench_dmesg_catalog_"))
    toml = _git_show(source, "parsers/kernel_signatures.toml")
    (folder / "kernel_signatures.toml").write_text(toml, encoding="utf-8")
    loader = _git_show(source, "parsers/_kernel_catalog.py").replace(
        "PATH = Path(__file__).resolve().parent / ", f"PATH = Path({str(folder)!r}) / "
    )
    (folder / "catalog.py").write_text(loader, encoding="utf-8")
    catalog = module_at(str(folder / "catalog.py"), "parsers/_kernel_catalog.py", "_kernel_catalog_baseline")
    saved = sys.modules.get("parsers._kernel_catalog")
    sys.modules["parsers._kernel_catalog"] = catalog
    try:
        return module_at(source, "parsers/dmesg.py", "_dmesg_baseline")
    finally:
        if saved is not None:
            sys.modules["parsers._kernel_catalog"] = saved
        shutil.rmtree(folder)  # the catalog was read when its module was loaded


def _git_show(rev: str, path: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def _has_catalog(rev: str) -> bool:
    import subprocess

    return (
        subprocess.run(
            ["git", "cat-file", "-e", f"{rev}:parsers/kernel_signatures.toml"], cwd=ROOT, capture_output=True
        ).returncode
        == 0
    )


def flapping_log(rng: random.Random, size: int = generate.DMESG_BYTES) -> str:
    """~1 MB of raw dmesg in which FLAP_SHARE of the lines are link, EFA and probe lines."""
    boot = generate._noise_messages((generate.BOOT_FIXTURE,))
    events = generate._noise_messages((*generate.NOISE_FIXTURES, EFA_FIXTURE))
    # derived: the ENA driver's link lines in the shape the parser reads (``<drv> <pci> <if>: Link is Up``)
    events += [f"ena 0000:{pci} {ifname}: Link is {state}" for pci, ifname in ENA for state in ("Up", "Down")]
    events += [f"nvidia 0000:{bus}:00.0: enabling device (0000 -> 0002)" for bus in NVSWITCH_BUSES]
    lines, total, t = [], 0, 20.0
    while total < size:
        t += rng.uniform(0.0005, 25.0)
        msg = rng.choice(events) if rng.random() < FLAP_SHARE else rng.choice(boot)
        line = f"[{t:12.6f}] {msg}"
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def outcome(module: types.ModuleType, text: str) -> Any:
    try:
        r = module.parse(text)
    except ParserFailure as exc:
        return type(exc).__name__, str(exc)
    tables = {k: [list(row.items()) for row in rows] for k, rows in r.table_rows().items()}
    return tables, [(i.line_no, i.line, i.reason) for i in r.issues], r.issues_dropped


#: the clock the timings read: wall time, or with ``--cpu`` the process's CPU time (a machine shared with
#: other work stretches wall time by whatever else runs; a parse is one thread, so its CPU time is its cost)
CLOCK = time.perf_counter


def best_pair(old: Callable[[], Any], new: Callable[[], Any], runs: int) -> tuple[float, float]:
    """Best time of each, run alternately (a busy machine slows both alike)."""
    a = b = float("inf")
    for _ in range(runs):
        start = CLOCK()
        old()
        a = min(a, CLOCK() - start)
        start = CLOCK()
        new()
        b = min(b, CLOCK() - start)
    return a, b


def best_of(fn: Callable[[], Any], runs: int) -> float:
    """The shortest time of ``runs`` calls of fn, on ``CLOCK``."""
    out = float("inf")
    for _ in range(runs):
        start = CLOCK()
        fn()
        out = min(out, CLOCK() - start)
    return out


def candidates_python(text: str) -> list[int]:
    lines = text.splitlines()
    return [i for i, line in enumerate(lines) if any(k in line for k in dmesg.CANDIDATE_KEYS)]


_ONE_RE = re.compile("|".join(re.escape(k) for k in dmesg.CANDIDATE_KEYS))


def candidates_one_regex(text: str) -> list[int]:
    search = _ONE_RE.search
    return [i for i, line in enumerate(text.splitlines()) if search(line)]


def candidates_trie(text: str) -> list[int]:
    search = dmesg._CANDIDATE.search  # the parser's path below VECTOR_BELOW
    return [i for i, line in enumerate(text.splitlines()) if search(line)]


def candidates_pyarrow(text: str) -> list[int]:
    import pyarrow as pa
    import pyarrow.compute as pc

    column = pa.array(text.splitlines(), pa.large_string())
    found: list[int] = pc.indices_nonzero(pc.match_substring_regex(column, dmesg._CANDIDATE_RE2)).to_pylist()
    return found


def candidates_polars(text: str) -> list[int]:
    import polars as pl  # type: ignore[import-not-found, unused-ignore]  # measured only, no dependency

    found = pl.Series(text.splitlines(), dtype=pl.String).str.contains(dmesg._CANDIDATE_RE2)
    return list(found.arg_true().to_list())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="HEAD", help="git revision or file of the baseline dmesg.py")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--polars", type=Path, help="folder where polars is installed (measurement only)")
    ap.add_argument("--differs", action="store_true", help="the baseline may read other rows (count them)")
    ap.add_argument("--cpu", action="store_true", help="time by the process's CPU time, not wall time")
    args = ap.parse_args()
    global CLOCK
    if args.cpu:
        CLOCK = time.process_time
    old = baseline(args.baseline)
    fixtures = [p.read_text(encoding="utf-8") for p in sorted((generate.FIX / "dmesg").glob("*.txt"))]
    generated, _ = generate.build_dmesg(random.Random("bench_dmesg:0"))
    flap = flapping_log(random.Random("bench_dmesg:flap"))
    inputs = {"fixtures": fixtures, "generated 1 MB": [generated], "flapping 1 MB": [flap]}

    clock = "CPU time" if args.cpu else "wall time"
    print(f"baseline: {args.baseline}; best of {args.runs} by {clock}, run alternately")
    print(
        "| input | lines | candidate lines (baseline) | events (baseline) | baseline ms | now ms"
        " | baseline lines/s | now lines/s | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, texts in inputs.items():
        for text in texts:
            if not args.differs:
                assert outcome(old, text) == outcome(dmesg, text), f"{name}: the outputs differ"
        lines = sum(len(t.splitlines()) for t in texts)
        cands = sum(len(dmesg.candidate_lines(t.splitlines())) for t in texts)
        old_cands = sum(len(old.candidate_lines(t.splitlines())) for t in texts)
        events, old_events = (
            sum(
                len(r[0].get("kernel_event", []))
                for r in (outcome(module, t) for t in texts)
                if isinstance(r[0], dict)
            )
            for module in (dmesg, old)
        )

        def run_all(module: types.ModuleType, texts: list[str] = texts) -> None:
            for text in texts:
                with contextlib.suppress(ParserFailure):
                    module.parse(text)

        a, b = best_pair(lambda: run_all(old), lambda: run_all(dmesg), args.runs)
        print(
            f"| {name} | {lines} | {cands} ({old_cands}) | {events} ({old_events}) | {a * 1000:.1f} | {b * 1000:.1f}"
            f" | {lines / a:,.0f} | {lines / b:,.0f} | {a / b:.2f}x |"
        )

    if args.polars:
        sys.path.append(str(args.polars))
    ways: list[tuple[str, Callable[[str], list[int]]]] = [
        ("Python substring loop", candidates_python),
        ("Python, one alternation per line", candidates_one_regex),
        ("Python, one trie per line", candidates_trie),
        ("pyarrow.compute match_substring_regex", candidates_pyarrow),
    ]
    try:
        import polars  # noqa: F401

        ways.append(("polars str.contains", candidates_polars))
    except ImportError:
        pass
    print()
    print("candidate lines (splitlines included), ms, best of", args.runs)
    print("| way | " + " | ".join(inputs) + " |")
    print("|---|" + "---|" * len(inputs))
    for label, fn in ways:
        cells = []
        for texts in inputs.values():
            for text in texts:
                assert fn(text) == candidates_python(text), label
            cells.append(f"{best_of(lambda: [fn(t) for t in texts], args.runs) * 1000:.2f}")  # noqa: B023
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
