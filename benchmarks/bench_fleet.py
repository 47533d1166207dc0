"""Fleet-scale speed and memory of ``hptriage analyze`` against the floor of just unpacking the bundles.

    .venv/bin/python benchmarks/bench_fleet.py [--nodes 64,256,1024] [--jobs J] [--scenario mixed]
                                               [--profile 64] [--no-record]

For each N: a cluster of N p5 node tarballs is generated (benchmarks/generate.py) into a temp dir, then

* the floor: wall time of ``tar -xzf`` of every tarball into a temp dir, one ``tar`` subprocess per
  tarball, run sequentially (the 1-process floor) and with J of them at a time (the parallel floor; J is
  the analyzer's worker count, so the comparison is fair);
* ``hptriage analyze DIR --json F --html F -q --jobs J`` end to end in a child process: wall time, peak
  RSS of the largest single process (``ru_maxrss`` of the child and of its reaped children) and the peak
  sum of RSS over the child's whole process tree (sampled from /proc every 50 ms).

Then: records/s of our iostat and df parsers against jc's on the same large inputs (many iostat samples;
a df of many file systems), and ``hptriage --help`` wall time (best of 5).  Results are printed and
appended to benchmarks/RESULTS.md with the date and the machine.  ``--profile N`` runs ``hptriage
analyze`` under cProfile at N nodes with ``--jobs 1`` and appends the top 15 cumulative entries.

Targets (the "Fast at fleet scale" issue): analyze / parallel floor <= 2.0 at 1024 nodes; peak RSS <= 1
GiB; time(1024) <= 4.4 x time(256); our parsers >= 3x jc's records/s; ``hptriage --help`` < 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import generate  # noqa: E402

MIB = 1024 * 1024


# -- the floor ---------------------------------------------------------------------------------------


def tar_floor(tarballs: list[Path], jobs: int) -> float:
    """Wall time of one ``tar -xzf`` subprocess per tarball, ``jobs`` at a time, into a fresh dir."""
    with tempfile.TemporaryDirectory(prefix="floor-") as dest:

        def one(tb: Path) -> None:
            subprocess.run(["tar", "-xzf", str(tb), "-C", dest], check=True)

        start = time.perf_counter()
        if jobs <= 1:
            for tb in tarballs:
                one(tb)
        else:
            with ThreadPoolExecutor(jobs) as pool:
                list(pool.map(one, tarballs))
        return time.perf_counter() - start


# -- the analysis ------------------------------------------------------------------------------------


def _tree_rss(root_pid: int) -> int:
    """Sum of VmRSS (bytes) over root_pid and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                stat = fh.read()
            fields = stat[stat.rindex(")") + 2 :].split()
            pid, ppid, pages = int(entry.name), int(fields[1]), int(fields[21])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(pid)
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def analyze(path: Path, out: Path, jobs: int, html: bool = True) -> dict[str, float]:
    """Wall time (s), largest-process peak RSS and peak process-tree RSS (MiB) of one analysis (with
    ``--json`` always, ``--html`` when asked)."""
    html_args = f"'--html', {str(out / 'r.html')!r}, " if html else ""
    code = (
        "import resource, sys; from analyzer.cli import main; sys.argv = ['hptriage', 'analyze', "
        f"{str(path)!r}, '--json', {str(out / 'f.json')!r}, {html_args}"
        f"'-q', '--jobs', '{jobs}']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)"
    )
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    peak_tree, done = 0, threading.Event()

    def sample() -> None:
        nonlocal peak_tree
        while not done.is_set():
            peak_tree = max(peak_tree, _tree_rss(proc.pid))
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    line = [ln for ln in stdout.splitlines() if ln.startswith("RSS ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"analyze failed (rc {proc.returncode}):\n{stderr[-3000:]}")
    own, kids, code_ = line[-1].split()[1:4]
    if code_ not in ("0", "None"):
        print(f"  note: hptriage analyze exited {code_}", file=sys.stderr)
    return {"s": elapsed, "rss": max(int(own), int(kids)) / 1024, "tree": peak_tree / MIB}


# -- parsers vs jc -----------------------------------------------------------------------------------


def big_iostat(samples: int = 2000) -> str:
    text = (FIX / "iostat" / "jc-ubuntu1804-x-sysstat11.6.out").read_text()
    banner, _, report = text.partition("\n\n")
    return banner + "\n\n" + "\n\n".join([report.strip()] * samples) + "\n"


def big_df(filesystems: int = 20000) -> str:
    lines = (FIX / "df" / "jc-ubuntu-18.04-df.out").read_text().splitlines()
    head, body = lines[0], lines[1:]
    out = [head]
    for k in range(filesystems):
        line = body[k % len(body)]
        out.append(f"{line.rstrip().rstrip('/')}/m{k}")  # a distinct mount point per line
    return "\n".join(out) + "\n"


def parser_rates() -> list[tuple[str, int, float, int, float]]:
    """(kind, our records, our records/s, jc records, jc records/s), best of 3 each."""
    import jc

    import parsers

    rows = []
    for kind, text in (("iostat", big_iostat()), ("df", big_df())):
        ours_parse = parsers.module_for(kind).parse

        def ours(t: str = text, p=ours_parse) -> int:
            res = p(t)
            return sum(len(v) for name, v in res.tables.items() if name != "iostat_host")

        def theirs(t: str = text, k: str = kind) -> int:
            return len(jc.parse(k, t, quiet=True))

        result = [kind]
        for fn in (ours, theirs):
            best, n = float("inf"), 0
            for _ in range(3):
                start = time.perf_counter()
                n = fn()
                best = min(best, time.perf_counter() - start)
            result += [n, n / best]
        rows.append(tuple(result))  # type: ignore[arg-type]
    return rows  # type: ignore[return-value]


SMALL_FILE = FIX / "iostat" / "aks-node-xy-old-format.txt"


def parse_small_times() -> tuple[float, float]:
    """Wall time (best of 5) of ``hptriage parse FILE --kind iostat`` and of ``jc --iostat < FILE`` on one
    small real capture: start-up dominates both."""

    def best(cmd: list[str], stdin: Path | None = None) -> float:
        out = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            with open(stdin, "rb") if stdin else open(os.devnull, "rb") as fh:
                subprocess.run(cmd, stdin=fh, capture_output=True, check=True)
            out = min(out, time.perf_counter() - start)
        return out

    ours = best([str(BIN / "hptriage"), "parse", str(SMALL_FILE), "--kind", "iostat"])
    theirs = best([str(BIN / "jc"), "--iostat"], stdin=SMALL_FILE)
    return ours, theirs


def help_time() -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([str(BIN / "hptriage"), "--help"], capture_output=True, check=True)
        best = min(best, time.perf_counter() - start)
    return best


# -- profile -----------------------------------------------------------------------------------------


def profile(nodes: int, scenario: str, seed: int) -> str:
    """Top 15 cumulative entries of ``hptriage analyze --jobs 1`` at ``nodes`` nodes, as a Markdown table."""
    with tempfile.TemporaryDirectory(prefix="prof-") as tmp:
        cluster, prof = Path(tmp) / "c", Path(tmp) / "p.prof"
        generate.generate(cluster, nodes, scenario, seed)
        code = (
            "import sys; from analyzer.cli import main; sys.argv = ['hptriage', 'analyze', "
            f"{str(cluster)!r}, '--json', {str(Path(tmp) / 'f.json')!r}, '--html', "
            f"{str(Path(tmp) / 'r.html')!r}, '-q', '--jobs', '1']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
        )
        script = Path(tmp) / "run.py"
        script.write_text(code)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), str(script)], check=True, cwd=ROOT)
        wall = time.perf_counter() - start
        stats = pstats.Stats(str(prof))
        total = max(v[3] for v in stats.stats.values())  # cumulative of the top frame
        entries = sorted(stats.stats.items(), key=lambda kv: kv[1][3], reverse=True)
        out = [
            f"cProfile of `hptriage analyze` at {nodes} nodes ({scenario}), `--jobs 1`: {wall:.1f} s wall "
            f"under the profiler.\n",
            "| # | module:function | cumulative % | cumulative s | calls |",
            "|---|---|---|---|---|",
        ]
        shown = 0
        for (file, line, func), (_cc, nc, _tt, ct, _callers) in entries:
            if func == "<module>" or (file == "~" and "exec" in func) or "/click/" in file:
                continue  # the interpreter's and click's wrappers: 100 % each, no information
            rel = file
            for base in (str(ROOT) + "/", "/usr/lib/python3", str(Path(sys.prefix)) + "/"):
                rel = rel.replace(base, "")
            mod = rel.removesuffix(".py").replace("/", ".") if file != "~" else "builtins"
            shown += 1
            out.append(
                f"| {shown} | `{mod}:{func}` (line {line}) | {100 * ct / total:.1f} | {ct:.2f} | {nc} |"
            )
            if shown == 15:
                break
        return "\n".join(out) + "\n"


# -- main --------------------------------------------------------------------------------------------


def machine() -> str:
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    return f"`{uname}`; nproc {os.cpu_count()}; Python {platform.python_version()}"


def targets(
    by_n: dict[int, dict],
    growth: float | None,
    rates: list[tuple],
    help_s: float,
    parse_ratio: float,
    ingest: dict[str, float] | None = None,
) -> list[tuple[str, str, str, bool]]:
    """(target, measured, wanted, met) for every target of the fleet issue this run measured."""
    out: list[tuple[str, str, str, bool]] = []
    top = max(by_n) if by_n else None
    if top is not None:
        for n in sorted(x for x in by_n if x >= 512 or x == top):
            r = by_n[n]
            out.append((f"analyze / floor at {n} nodes, --json --html", f"{r['s'] / r['floorj']:.2f}", "<= 2.0",
                        r["s"] / r["floorj"] <= 2.0))  # fmt: skip
            out.append((f"analyze / floor at {n} nodes, --json only", f"{r['bare'] / r['floorj']:.2f}", "<= 2.0",
                        r["bare"] / r["floorj"] <= 2.0))  # fmt: skip
        peak = max(max(x["rss"], x["tree"]) for x in by_n.values())
        out.append(
            ("peak RSS (largest of process and process tree)", f"{peak:.0f} MiB", "<= 1024 MiB", peak <= 1024)
        )
    if growth is not None:
        out.append(("time(1024) / time(256)", f"{growth:.2f}", "<= 4.4", growth <= 4.4))
    for kind, _, r_ours, _, r_jc in rates:
        out.append((f"{kind} records/s vs jc", f"{r_ours / r_jc:.2f}x", ">= 3x", r_ours / r_jc >= 3))
    out.append(("hptriage --help", f"{help_s * 1000:.0f} ms", "< 300 ms", help_s < 0.3))
    out.append(("hptriage parse of a small file vs jc", f"{parse_ratio:.2f}x", "<= 2x", parse_ratio <= 2))
    if ingest is not None:
        worker, per_node = ingest["worker_ms"], ingest["analyze_ms"]
        out.append(("ingest --parquet worker time per bundle vs analyze per node", f"{worker:.0f} vs {per_node:.0f} ms",
                     "<=", worker <= per_node))  # fmt: skip
    return out


def ingest_vs_analyze(cluster: Path, n: int) -> dict[str, float]:
    """Worker time per bundle of ``ingest --parquet`` (one process, the first ``n`` node bundles, no
    extra/ folder: bench_ingest.py's serial run) against ``analyze --json --jobs 1`` of the same bundles,
    wall time per node (start-up, rules and report included)."""
    import bench_ingest

    with tempfile.TemporaryDirectory(prefix="ingest-vs-") as tmp:
        folder = Path(tmp) / "nodes"
        folder.mkdir()
        for tarball in sorted(cluster.glob("*.tar.gz"))[:n]:
            shutil.copy(tarball, folder / tarball.name)  # copies: an input's links are refused
            digest = tarball.with_name(tarball.name + ".sha256")
            if digest.exists():
                shutil.copy(digest, folder / digest.name)
        ingest = bench_ingest.run(folder, "local", 1, n)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "analyzer.cli", "analyze", str(folder), "--json", str(Path(tmp) / "a.json"),
             "-q", "--jobs", "1"], cwd=ROOT, check=False, capture_output=True,
        )  # fmt: skip
        analyzed = time.perf_counter() - start
    return {"bundles": ingest["bundles"], "worker_ms": ingest["workers"] / ingest["bundles"] * 1000,
            "analyze_ms": analyzed / n * 1000}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="64,256,1024", help="comma list of cluster sizes")
    ap.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="analyzer workers and parallel tar processes "
        "(default: the analyzer's default, CPU count capped at 8)",
    )
    ap.add_argument("--scenario", default="mixed", choices=generate.SCENARIOS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", type=int, default=None, metavar="N", help="also cProfile analyze at N nodes")
    ap.add_argument("--no-record", action="store_true", help="do not append to benchmarks/RESULTS.md")
    ap.add_argument("--ingest", type=int, default=64, metavar="N",
                    help="ingest --parquet worker time per bundle against analyze per node on N bundles (0: skip)")  # fmt: skip
    args = ap.parse_args()
    sizes = [int(x) for x in args.nodes.split(",") if x.strip()]
    jobs = args.jobs or min(os.cpu_count() or 1, 8)

    rows: list[dict] = []
    ingest: dict[str, float] | None = None
    print(f"== fleet: scenario {args.scenario}, --jobs {jobs} ==")
    print(
        f"{'N':>6} {'gen s':>6} {'floor1 s':>9} {f'floor{jobs} s':>9} {'analyze s':>10} "
        f"{'ratio':>6} {'ratio1':>7} {'RSS MiB':>8} {'tree MiB':>9} {'no-html s':>10} {'ratio':>6}"
    )
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix=f"fleet{n}-") as tmp:
            cluster, out = Path(tmp) / "cluster", Path(tmp) / "out"
            out.mkdir()
            start = time.perf_counter()
            generate.generate(cluster, n, args.scenario, args.seed)
            gen = time.perf_counter() - start
            tarballs = sorted(cluster.glob("*.tar.gz"))
            f1 = tar_floor(tarballs, 1)
            fj = tar_floor(tarballs, jobs)
            a = analyze(cluster, out, jobs)
            bare = analyze(cluster, out, jobs, html=False)
            if args.ingest and n == max(sizes):
                ingest = ingest_vs_analyze(cluster, min(args.ingest, n))
        row = {"n": n, "gen": gen, "floor1": f1, "floorj": fj, **a, "bare": bare["s"]}
        rows.append(row)
        print(
            f"{n:>6} {gen:6.1f} {f1:9.2f} {fj:9.2f} {a['s']:10.2f} {a['s'] / fj:6.1f} {a['s'] / f1:7.1f} "
            f"{a['rss']:8.0f} {a['tree']:9.0f} {bare['s']:10.2f} {bare['s'] / fj:6.1f}",
            flush=True,
        )
    by_n = {r["n"]: r for r in rows}
    growth = by_n[1024]["s"] / by_n[256]["s"] if 1024 in by_n and 256 in by_n else None
    if growth is not None:
        print(f"growth time(1024)/time(256) = {growth:.2f} (target <= 4.4)")

    print("== parsers vs jc (records/s, best of 3) ==")
    rates = parser_rates()
    for kind, n_ours, r_ours, n_jc, r_jc in rates:
        print(
            f"{kind:7} ours {n_ours:7d} rec {r_ours:10.0f}/s   jc {n_jc:7d} rec {r_jc:10.0f}/s   "
            f"ratio {r_ours / r_jc:.2f}x"
        )
    hl = help_time()
    print(f"hptriage --help {hl * 1000:.0f} ms (best of 5)")
    parse_ours, parse_jc = parse_small_times()
    print(
        f"hptriage parse (small iostat) {parse_ours * 1000:.0f} ms, jc --iostat {parse_jc * 1000:.0f} ms:"
        f" {parse_ours / parse_jc:.2f}x"
    )

    if ingest is not None:
        print(
            f"ingest --parquet, one process, {ingest['bundles']:.0f} bundles: {ingest['worker_ms']:.0f} ms of worker time"
            f" a bundle; analyze --jobs 1 of the same: {ingest['analyze_ms']:.0f} ms a node"
        )
    verdicts = targets(by_n, growth, rates, hl, parse_ours / parse_jc, ingest)
    print("== targets ==")
    for name, value, target, met in verdicts:
        print(f"  {'met    ' if met else 'NOT MET'}  {name}: {value} (target {target})")
    prof = profile(args.profile, args.scenario, args.seed) if args.profile else None
    if prof:
        print(prof)
    if args.no_record:
        return
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"\n## {stamp}\n",
        f"Machine: {machine()}. Scenario `{args.scenario}`, seed {args.seed}, `--jobs {jobs}`; floor = one "
        f"`tar -xzf` subprocess per tarball, sequential (floor1) and {jobs} at a time (floor{jobs}).\n",
        f"| N | generate s | floor1 s | floor{jobs} s | analyze s | analyze/floor{jobs} | analyze/floor1 "
        f"| peak RSS MiB (largest process) | peak RSS MiB (process tree) | without --html s | its /floor{jobs} |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['gen']:.1f} | {r['floor1']:.2f} | {r['floorj']:.2f} | {r['s']:.2f} | "
            f"{r['s'] / r['floorj']:.1f} | {r['s'] / r['floor1']:.1f} | {r['rss']:.0f} | {r['tree']:.0f} |"
            f" {r['bare']:.2f} | {r['bare'] / r['floorj']:.1f} |"
        )
    lines.append("")
    if growth is not None:
        lines.append(f"Growth time(1024) / time(256): **{growth:.2f}** (target <= 4.4).\n")
    lines.append("| parser | our records | our records/s | jc records | jc records/s | ours / jc |")
    lines.append("|---|---|---|---|---|---|")
    for kind, n_ours, r_ours, n_jc, r_jc in rates:
        lines.append(f"| {kind} | {n_ours} | {r_ours:.0f} | {n_jc} | {r_jc:.0f} | {r_ours / r_jc:.2f}x |")
    lines.append(f"\n`hptriage --help`: {hl * 1000:.0f} ms (best of 5; target < 300 ms).\n")
    lines.append(
        f"\n`hptriage parse` of a small iostat capture: {parse_ours * 1000:.0f} ms; `jc --iostat` of the same:"
        f" {parse_jc * 1000:.0f} ms; ratio {parse_ours / parse_jc:.2f} (target <= 2).\n"
    )
    if ingest is not None:
        lines.append(
            f"\n`ingest --parquet` in one process, {ingest['bundles']:.0f} node bundles (bench_ingest.py's serial run):"
            f" {ingest['worker_ms']:.0f} ms of worker time a bundle; `analyze --json --jobs 1` of the same bundles:"
            f" {ingest['analyze_ms']:.0f} ms a node (wall, start-up and rules included).\n"
        )
    lines.append("\n| target | measured | wanted | |")
    lines.append("|---|---|---|---|")
    for name, value, target, met in verdicts:
        lines.append(f"| {name} | {value} | {target} | {'met' if met else '**not met**'} |")
    lines.append("")
    if prof:
        lines.append(prof)
    if not RESULTS.exists():
        RESULTS.write_text("# Fleet benchmark results\n")
    with RESULTS.open("a") as fh:
        fh.write("\n".join(lines))
    print(f"appended to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
