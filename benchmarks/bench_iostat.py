"""Records/s of the iostat parser against jc's on the same large captures, and against a baseline version
of the parser, measured in the same run (alternately, best of ``--runs``).

    .venv/bin/python benchmarks/bench_iostat.py [--baseline REV|FILE] [--runs 5]

Inputs (each ~42,000 records):

- ``repeated``: the real ``jc-ubuntu1804-x-sysstat11.6.out`` (sysstat 11.6 ``-x``, 19 devices) with its
  report 2,000 times over (bench_fleet.py's ``big_iostat``);
- ``varied``: the same shape with every cell a new value (0.00 kept where the real capture prints it),
  so that no report repeats another: the figure for a capture of ever-changing values;
- ``plain -d``: the real ``jc-centos77-plain-d.out``-style plain device report (``tps kB_read/s ...
  kB_read kB_wrtn``, integer totals), varied the same way.

Our records are the rows of ``iostat_cpu`` and ``iostat_device``; jc's the records ``jc.parse('iostat')``
returns.  Both parsers' outputs are checked to be the same for the baseline and the current parser.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "iostat"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from parsers import iostat  # noqa: E402

SAMPLES = 2000


from baseline import best, module_at  # noqa: E402


def baseline(source: str) -> types.ModuleType:
    """``parsers/iostat.py`` of a git revision or of a file, as a module of its own."""

    return module_at(source, "parsers/iostat.py", "_iostat_baseline")


def repeated(name: str = "jc-ubuntu1804-x-sysstat11.6.out", samples: int = SAMPLES) -> str:
    text = (FIX / name).read_text()
    banner, _, report = text.partition("\n\n")
    return banner + "\n\n" + "\n\n".join([report.strip()] * samples) + "\n"


_CELL = re.compile(r"(?<=\s)(\d+)\.(\d\d)(?=\s|$)|(?<=\s)(\d+)(?=\s|$)")


def varied(text: str, seed: str) -> str:
    """Every number cell of the device and CPU rows a new value of the same shape (zeros stay zeros)."""
    rng = random.Random(seed)

    def new(m: re.Match[str]) -> str:
        if m.group(3) is not None:  # an integer total
            return m.group(3) if m.group(3) == "0" else str(rng.randrange(1, 10 ** max(1, len(m.group(3)))))
        if m.group(0) == "0.00":
            return "0.00"
        return f"{rng.uniform(0, 10 ** len(m.group(1))):.2f}"

    out = []
    for line in text.splitlines():
        if line.startswith(("Linux", "Device", "avg-cpu")) or not line.strip():
            out.append(line)
        else:
            out.append(_CELL.sub(new, line))
    return "\n".join(out) + "\n"


def ours_count(module: types.ModuleType, text: str) -> int:
    result = module.parse(text)
    return sum(len(rows) for name, rows in result.table_rows().items() if name != "iostat_host")


def same_output(a: types.ModuleType, b: types.ModuleType, text: str) -> bool:
    ra, rb = a.parse(text), b.parse(text)
    rows = {k: [list(r.items()) for r in v] for k, v in ra.table_rows().items()}
    return (
        rows == {k: [list(r.items()) for r in v] for k, v in rb.table_rows().items()}
        and ra.issues == rb.issues
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="HEAD", help="git revision or file of the baseline iostat.py")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import jc

    old = baseline(args.baseline)
    plain = repeated("jc-centos77-plain-d.out", 10500)
    inputs = {
        "repeated (11.6 -x)": repeated(),
        "varied (11.6 -x)": varied(repeated(), "bench_iostat:x"),
        "plain -d, varied": varied(plain, "bench_iostat:d"),
    }
    print(f"baseline: {args.baseline}; best of {args.runs}, alternately")
    print(
        "| input | records | baseline rec/s | now rec/s | jc records | jc rec/s | baseline / jc | now / jc |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, text in inputs.items():
        assert same_output(old, iostat, text), f"{name}: the outputs differ"
        n = ours_count(iostat, text)
        records = jc.parse("iostat", text, quiet=True)
        assert isinstance(records, list)
        n_jc = len(records)
        times = {"old": float("inf"), "new": float("inf"), "jc": float("inf")}
        for _ in range(args.runs):
            for key, fn in (
                ("old", lambda: old.parse(text)),  # noqa: B023
                ("new", lambda: iostat.parse(text)),  # noqa: B023
                ("jc", lambda: jc.parse("iostat", text, quiet=True)),  # noqa: B023
            ):
                times[key] = min(times[key], best(fn, 1))
        r_old, r_new, r_jc = n / times["old"], n / times["new"], n_jc / times["jc"]
        print(
            f"| {name} | {n} | {r_old:,.0f} | {r_new:,.0f} | {n_jc} | {r_jc:,.0f} | {r_old / r_jc:.2f}x |"
            f" {r_new / r_jc:.2f}x |"
        )


if __name__ == "__main__":
    main()
