"""Speed and memory of the analyzer, as ratios against baselines measured in the same run.

    .venv/bin/python benchmarks/bench_analyze.py [--nodes 200]

1. CLI start-up: ``hptriage --help`` and ``hptriage parse`` of one small file against ``jc --help``
   (the brief: start about as fast as jc).
2. Parallel parsing: analysing N node tarballs (copies of a real sample node) with --jobs 1 (the
   baseline) and with every core; the ratio is the speed-up.
3. Memory: peak RSS of the analysis at N and at 4N nodes; a ratio near 1 means memory stays flat as the
   cluster grows (rows stream into DuckDB in batches; bundles are read a few at a time).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NODE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle" / "p5-node-01"
BIN = Path(sys.executable).parent


#: Start-up as an installed tool has it: Python keeps compiled modules (a PYTHONDONTWRITEBYTECODE=1
#: in the environment would make every run compile every module again, ~150 ms for the parsers).
STARTUP_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def best_of(cmd: list[str], runs: int = 5) -> float:
    times = []
    subprocess.run(cmd, capture_output=True, check=False, env=STARTUP_ENV)  # writes the bytecode caches
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False, env=STARTUP_ENV)
        times.append(time.perf_counter() - start)
    return min(times)


def make_cluster(dest: Path, nodes: int) -> None:
    dest.mkdir(parents=True)
    meta = (NODE / "meta.env").read_text()
    for i in range(nodes):
        name = f"node-{i:04d}"
        with tarfile.open(dest / f"{name}.tar.gz", "w:gz") as tar:
            info = tarfile.TarInfo(f"{name}/meta.env")
            data = meta.replace("node=p5-node-01", f"node={name}").encode()
            info.size = len(data)
            import io

            tar.addfile(info, io.BytesIO(data))
            tar.add(NODE / "manifest.tsv", arcname=f"{name}/manifest.tsv")
            tar.add(NODE / "cmd", arcname=f"{name}/cmd")


def analyze(path: Path, jobs: int) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of one analysis in a child process."""
    code = (
        "import resource, sys; from analyzer.cli import main; sys.argv = ['hptriage', 'analyze', "
        f"{str(path)!r}, '--jobs', '{jobs}', '-q']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    own, children = (int(x) for x in done.stdout.split()[-2:])
    return elapsed, max(own, children)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=200)
    args = parser.parse_args()
    print("== start-up (best of 5) ==")
    jc = shutil.which("jc", path=str(BIN)) or shutil.which("jc")
    small = ROOT / "tests" / "fixtures" / "dmesg" / "uce-runbook-xid48-63-94-dbe.txt"
    base = best_of([jc, "--help"]) if jc else None
    ours = best_of([str(BIN / "hptriage"), "--help"])
    parse = best_of([str(BIN / "hptriage"), "parse", str(small)])
    if base:
        print(f"jc --help              {base * 1000:7.0f} ms   (baseline)")
        print(f"hptriage --help        {ours * 1000:7.0f} ms   ratio {ours / base:.2f}")
        print(f"hptriage parse (dmesg) {parse * 1000:7.0f} ms   ratio {parse / base:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        small_set, large_set = Path(tmp) / "n", Path(tmp) / "n4"
        make_cluster(small_set, args.nodes)
        make_cluster(large_set, args.nodes * 4)
        cores = os.cpu_count() or 1
        print(f"== {args.nodes} node tarballs ==")
        t1, m1 = analyze(small_set, 1)
        tn, mn = analyze(small_set, cores)
        print(f"--jobs 1               {t1:7.2f} s    (baseline)  peak RSS {m1 / 1024:.0f} MiB")
        print(f"--jobs {cores:<2}              {tn:7.2f} s    speed-up {t1 / tn:.2f}x")
        print(f"== memory: {args.nodes} vs {args.nodes * 4} nodes, --jobs {cores} ==")
        t4, m4 = analyze(large_set, cores)
        print(f"{args.nodes * 4} nodes            {t4:7.2f} s    time ratio {t4 / tn:.2f} (4x nodes)")
        print(f"peak RSS ratio         {m4 / mn:7.2f}      ({mn / 1024:.0f} -> {m4 / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
