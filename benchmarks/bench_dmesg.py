"""Speed of the kernel-log parser against a baseline version of it, measured in the same run.

    .venv/bin/python benchmarks/bench_dmesg.py [--baseline REV|FILE] [--runs 7] [--polars DIR]

The baseline is ``parsers/dmesg.py`` as of a git revision (default ``HEAD``) or a copy of the file; both
versions parse the same inputs, alternately, best of ``--runs``, and must give the same rows and issues:

- every real kernel log of ``tests/fixtures/dmesg`` (each file parsed on its own, the times summed);
- a generated node's 1 MB kernel log (``benchmarks/generate.py``: boot-log noise, a few link and EFA
  lines);
- a 1 MB log of a node whose links flap: about 40 % of its lines hold a candidate substring (bonding and
  mlx5 link lines, EFA probes and driver banners from the fixtures, ENA ``Link is Up/Down`` and the nvidia
  driver's NVSwitch probe lines), most of them events.

Then the ways of finding the candidate lines of those logs (``parsers.dmesg.candidate_lines``): the
substring loop in Python, one compiled regex per line, the vectorised RE2 pass (pyarrow.compute), and, when
``--polars DIR`` names a folder where polars is installed (``pip install --target DIR polars``; it is no
dependency of the project), polars' ``str.contains``.  Each figure includes ``splitlines``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import random
import re
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


from baseline import best, module_at  # noqa: E402


def baseline(source: str) -> types.ModuleType:
    """``parsers/dmesg.py`` of a git revision or of a file, as a module of its own."""

    return module_at(source, "parsers/dmesg.py", "_dmesg_baseline")


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
    tables = {k: [list(row.items()) for row in rows] for k, rows in r.tables.items()}
    return tables, [(i.line_no, i.line, i.reason) for i in r.issues], r.issues_dropped


def best_pair(old: Callable[[], Any], new: Callable[[], Any], runs: int) -> tuple[float, float]:
    """Best wall time of each, run alternately (a busy machine slows both alike)."""
    a = b = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        old()
        a = min(a, time.perf_counter() - start)
        start = time.perf_counter()
        new()
        b = min(b, time.perf_counter() - start)
    return a, b


def candidates_python(text: str) -> list[int]:
    lines = text.splitlines()
    return [i for i, line in enumerate(lines) if any(k in line for k in dmesg.CANDIDATE_KEYS)]


_ONE_RE = re.compile("|".join(re.escape(k) for k in dmesg.CANDIDATE_KEYS))


def candidates_one_regex(text: str) -> list[int]:
    search = _ONE_RE.search
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
    args = ap.parse_args()
    old = baseline(args.baseline)
    fixtures = [p.read_text(encoding="utf-8") for p in sorted((generate.FIX / "dmesg").glob("*.txt"))]
    generated, _ = generate.build_dmesg(random.Random("bench_dmesg:0"))
    flap = flapping_log(random.Random("bench_dmesg:flap"))
    inputs = {"fixtures": fixtures, "generated 1 MB": [generated], "flapping 1 MB": [flap]}

    print(f"baseline: {args.baseline}; best of {args.runs}, run alternately")
    print(
        "| input | lines | candidate lines | events | baseline ms | now ms | baseline lines/s | now lines/s | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, texts in inputs.items():
        for text in texts:
            assert outcome(old, text) == outcome(dmesg, text), f"{name}: the outputs differ"
        lines = sum(len(t.splitlines()) for t in texts)
        cands = sum(len(dmesg.candidate_lines(t.splitlines())) for t in texts)
        events = sum(
            len(r[0].get("kernel_event", []))
            for r in (outcome(dmesg, t) for t in texts)
            if isinstance(r[0], dict)
        )

        def run_all(module: types.ModuleType, texts: list[str] = texts) -> None:
            for text in texts:
                with contextlib.suppress(ParserFailure):
                    module.parse(text)

        a, b = best_pair(lambda: run_all(old), lambda: run_all(dmesg), args.runs)
        print(
            f"| {name} | {lines} | {cands} | {events} | {a * 1000:.1f} | {b * 1000:.1f} | {lines / a:,.0f} |"
            f" {lines / b:,.0f} | {a / b:.2f}x |"
        )

    if args.polars:
        sys.path.append(str(args.polars))
    ways: list[tuple[str, Callable[[str], list[int]]]] = [
        ("Python substring loop", candidates_python),
        ("Python, one regex per line", candidates_one_regex),
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
            cells.append(f"{best(lambda: [fn(t) for t in texts], args.runs) * 1000:.2f}")  # noqa: B023
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
