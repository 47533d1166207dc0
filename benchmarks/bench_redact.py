"""Fleet-scale speed and memory of ``hptriage redact`` (and ``--verify``) against unpacking the bundles.

    .venv/bin/python benchmarks/bench_redact.py [--nodes 64,256] [--scenario mixed] [--no-record]

For each N: a cluster of N p5 node tarballs is generated (benchmarks/generate.py), then the floor (one
``tar -xzf`` per tarball, sequential: redaction runs in one process), ``hptriage redact DIR -o OUT`` and
``hptriage redact --verify OUT --map MAP`` in child processes: wall time and peak RSS.  Results are
printed and appended to benchmarks/RESULTS.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fleet import RESULTS, generate, machine, tar_floor  # noqa: E402


def run(args: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``hptriage ARGS`` in a child process."""
    code = (
        "import resource, sys; from analyzer.cli import main; sys.argv = ['hptriage', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code or 0\nelse:\n    code = 0\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, code)"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RSS ")]
    if not line or line[-1].split()[2] != "0":
        raise SystemExit(f"hptriage {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed, int(line[-1].split()[1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="64,256", help="comma list of cluster sizes")
    ap.add_argument("--scenario", default="mixed", choices=generate.SCENARIOS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-record", action="store_true", help="do not append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = []
    print(
        f"{'N':>6} {'floor1 s':>9} {'redact s':>9} {'ratio':>6} {'RSS MiB':>8} {'verify s':>9} {'RSS MiB':>8}"
    )
    for n in [int(x) for x in args.nodes.split(",") if x.strip()]:
        with tempfile.TemporaryDirectory(prefix=f"redact{n}-") as tmp:
            cluster, out, map_path = Path(tmp) / "cluster", Path(tmp) / "out", Path(tmp) / "map.json"
            generate.generate(cluster, n, args.scenario, args.seed)
            floor = tar_floor(sorted(cluster.glob("*.tar.gz")), 1)
            red_s, red_rss = run(["redact", str(cluster), "-o", str(out), "--map", str(map_path)])
            ver_s, ver_rss = run(["redact", "--verify", str(out), "--map", str(map_path)])
        rows.append((n, floor, red_s, red_rss, ver_s, ver_rss))
        print(
            f"{n:>6} {floor:9.2f} {red_s:9.2f} {red_s / floor:6.1f} {red_rss:8.0f} {ver_s:9.2f} {ver_rss:8.0f}"
        )
    if args.no_record:
        return
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## {stamp}: hptriage redact\n",
        f"Machine: {machine()}. Scenario `{args.scenario}`, seed {args.seed}; floor1 = one `tar -xzf` "
        "subprocess per tarball, sequential (redaction runs in one process). RSS: the peak of the child.\n",
        "| N | floor1 s | redact s | redact/floor1 | redact peak RSS MiB | verify s | verify peak RSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, floor, red_s, red_rss, ver_s, ver_rss in rows:
        lines.append(
            f"| {n} | {floor:.2f} | {red_s:.2f} | {red_s / floor:.1f} | {red_rss:.0f} | {ver_s:.2f} | {ver_rss:.0f} |"
        )
    with RESULTS.open("a") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"appended to {RESULTS.name}")


if __name__ == "__main__":
    main()
