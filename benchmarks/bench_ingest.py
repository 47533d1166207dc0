"""``hptriage ingest --parquet`` on a local Ray against the local process pool, on the same bundles, and
the wall time of a million bundles projected from the measured per-bundle cost.

    .venv/bin/python benchmarks/bench_ingest.py [--nodes 1024] [--jobs 2] [--no-record]

A cluster of N p5 node tarballs is generated (benchmarks/generate.py), then ingested into a fresh
dataset three ways, each in its own child process so that every run starts cold:

* ``local``: the process pool of ``--jobs`` workers (``--engine local``);
* ``ray``: a local Ray of ``--jobs`` CPUs (``--engine ray``), started and stopped by the run;
* ``serial``: one process (``--jobs 1``) on the first 64 bundles, for the cost of one bundle.

Each run reports its phases: listing the inputs, the workers (read_input and the fact files; the
answers consumed as they come), and the driver's ``finish`` (grouping, the cross-node rules over the
dataset, the snapshot's rows).  Ray's own overhead is said plainly: the time of ``ray.init`` and
``ray.shutdown`` alone, and the Ray run's wall time less the local one's.  The projection for 1M bundles
on W workers, as snapshots of N nodes, is ``1e6 x (serial worker s per bundle) / W`` for the workers and
``1e6 / N x (driver s per snapshot of N) / W`` for the snapshots' judging, which is spread over the same
workers (each snapshot is judged on its own rows), bounded below by one snapshot's judging.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
sys.path.insert(0, str(ROOT / "benchmarks"))
import generate  # noqa: E402

#: One ingest with its phases timed, run in a child process (the same steps as ingest_dataset).
_RUN = """
import json, os, sys, time
from pathlib import Path
start = time.perf_counter()
from analyzer.fleet import ingest as fi
from analyzer.fleet.inputs import list_inputs
from analyzer.judge.settings import load_settings
src, out, engine, jobs, limit = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
settings = load_settings()
t0 = time.perf_counter()
items = list_inputs([Path(src)]).items
items = [i for i in items if not i.is_dir][:limit] + [i for i in items if i.is_dir]
tasks = [fi.Task(i.path, os.path.abspath(i.path), i.is_dir, i.checksum, i.place()) for i in items]
t1 = time.perf_counter()
from analyzer.fleet import engines
if engine == "ray":
    with engines.ray_session(jobs, None) as ray:
        answers = list(engines.ray_answers(tasks, [], out, settings, jobs, None))
        t2 = time.perf_counter()
        done = fi.finish(answers, out, [src], settings, map_parts=engines.ray_map(ray))
else:
    answers = list(engines.local_answers(tasks, out, settings, jobs, None))
    t2 = time.perf_counter()
    done = fi.finish(answers, out, [src], settings, map_parts=engines.pool_map(jobs))
t3 = time.perf_counter()
print(json.dumps({"bundles": len(tasks), "list": t1 - t0, "workers": t2 - t1, "driver": t3 - t2,
                  "wall": t3 - start, "findings": sum(s.findings for s in done.snapshots)}))
"""
_RAY_ALONE = """
import time
t = time.perf_counter()
import ray
ray.init(num_cpus=int(__import__("sys").argv[1]), include_dashboard=False, log_to_driver=False, configure_logging=False)
ray.shutdown()
print(time.perf_counter() - t)
"""


def run(src: Path, engine: str, jobs: int, limit: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix=f"ingest-{engine}-") as out:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_DATA_LOG_LEVEL": "ERROR"}
        done = subprocess.run(
            [sys.executable, "-c", _RUN, str(src), out, engine, str(jobs), str(limit)],
            capture_output=True, text=True, env=env, cwd=ROOT,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"ingest ({engine}) failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def ray_alone(jobs: int) -> float:
    done = subprocess.run([sys.executable, "-c", _RAY_ALONE, str(jobs)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ray.init failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.system()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8))
    ap.add_argument("--serial", type=int, default=64, help="bundles of the one-process run")
    ap.add_argument("--scenario", default="mixed", choices=generate.SCENARIOS)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        raise SystemExit("bench_ingest: Ray is not installed (pip install 'hptriage[ray]')") from None
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        cluster = Path(tmp) / "cluster"
        generate.generate(cluster, args.nodes, args.scenario, 0)
        runs = {
            "local": run(cluster, "local", args.jobs, args.nodes),
            "ray": run(cluster, "ray", args.jobs, args.nodes),
            "serial": run(cluster, "local", 1, args.serial),
        }
    alone = ray_alone(args.jobs)
    local, ray_, serial = runs["local"], runs["ray"], runs["serial"]
    per_bundle = serial["workers"] / serial["bundles"]
    driver_per_bundle = local["driver"] / local["bundles"]
    lines = [
        f"\n## {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}: ingest --parquet, local pool vs local Ray\n",
        f"Machine: {machine()}. {args.nodes} generated p5 node bundles (scenario `{args.scenario}`) and their"
        f" extra/ folder; `--jobs {args.jobs}` for both engines; each run in a fresh process into a fresh"
        " dataset.\n",
        "| run | bundles | list s | workers s | driver s | wall s | bundles/s (wall) | findings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in runs.items():
        lines.append(
            f"| {name} | {r['bundles']} | {r['list']:.2f} | {r['workers']:.2f} | {r['driver']:.2f} |"
            f" {r['wall']:.2f} | {r['bundles'] / r['wall']:.1f} | {r['findings']} |"
        )
    lines += [
        "",
        f"Ray / local wall time: **{ray_['wall'] / local['wall']:.2f}x** ({ray_['bundles'] / ray_['wall']:.1f}"
        f" vs {local['bundles'] / local['wall']:.1f} bundles/s). Ray's own overhead: `ray.init` + `ray.shutdown`"
        f" alone {alone:.1f} s; the Ray run took {ray_['wall'] - local['wall']:+.1f} s against the local pool"
        f" (its workers phase {ray_['workers'] - local['workers']:+.1f} s, which includes starting Ray).",
        "",
        f"Per bundle: {per_bundle * 1000:.0f} ms of worker time in one process (read_input, node-local rules,"
        f" fact files), {driver_per_bundle * 1000:.1f} ms of driver time (cross-node rules and snapshot rows).",
        "",
        f"Projected wall time for 1,000,000 bundles as snapshots of {args.nodes} nodes (reading and judging"
        " both spread over W workers; the driver only groups and writes the schema document):",
        "",
        "| workers | reading | judging snapshots | total |",
        "|---|---|---|---|",
    ]
    for w in (2, 64, 256, 1024):
        work = 1e6 * per_bundle / w
        drive = max(1e6 * driver_per_bundle / w, local["driver"])
        lines.append(f"| {w} | {work / 3600:.2f} h | {drive / 3600:.2f} h | {(work + drive) / 3600:.2f} h |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_record:
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write(text)
        print(f"appended to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
