"""The air-gapped archive: its size, its install, and the installed tool's start and analysis.

    .venv/bin/python benchmarks/bench_offline.py [--extras mcp,ray] [--platforms manylinux2014_aarch64] [--no-record]

Builds the core archive for this machine (scripts/offline_bundle.py), the archive with the extras,
and the core archive for each further platform (size only: it cannot be installed here); installs each
archive of this machine with its install.sh into a fresh folder (inside a network namespace with no
network where ``unshare -rn`` is allowed, else with no index only); then times the installed
``hptriage --help`` (first run, and best of 5) and ``hptriage analyze`` of the xid-ecc-3node sample
with ``--json`` and ``--html`` (best of 3), beside the checkout's own ``.venv`` in the same run.  Prints
a table, the ten largest wheels of the core archive, and appends them to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SAMPLE = ROOT / "sample_bundles" / "xid-ecc-3node" / "bundle"


def _build(out: Path, *args: str) -> tuple[Path, float]:
    started = time.perf_counter()
    cmd = [sys.executable, str(ROOT / "scripts" / "offline_bundle.py"), "--out", str(out), *args]
    subprocess.run(cmd, check=True, capture_output=True)
    (archive,) = out.glob("hptriage-offline-*.tar.gz")
    return archive, time.perf_counter() - started


def _no_network() -> list[str]:
    ok = (
        shutil.which("unshare")
        and subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0
    )
    return ["unshare", "-rn"] if ok else []


def _install(archive: Path, where: Path, wrap: list[str]) -> tuple[Path, float]:
    subprocess.run(["tar", "xzf", str(archive)], cwd=where, check=True)
    top = where / archive.name.removesuffix(".tar.gz")
    prefix = where / "prefix"
    started = time.perf_counter()
    subprocess.run([*wrap, str(top / "install.sh"), str(prefix)], check=True, capture_output=True)
    return prefix / "bin" / "hptriage", time.perf_counter() - started


def _time(cmd: list[str], runs: int) -> tuple[float, float]:
    """(first run, best of ``runs``) wall seconds."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return times[0], min(times)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def _analyze(tool: Path, out: Path) -> list[str]:
    return [
        str(tool),
        "analyze",
        str(SAMPLE),
        "--json",
        str(out / "f.json"),
        "--html",
        str(out / "r.html"),
        "-q",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument(
        "--extras", default="mcp,ray", help="the extras of the second archive (default %(default)s)"
    )
    ap.add_argument("--platforms", default="manylinux2014_aarch64", help="further platforms, size only")
    ap.add_argument("--no-record", action="store_true", help="do not append to benchmarks/RESULTS.md")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    wrap = _no_network()
    rows: list[str] = []
    largest: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as tmp:
        scratch = Path(tmp)
        checkout = ROOT / ".venv" / "bin" / "hptriage"
        first, best = _time([str(checkout), "--help"], 5)
        (scratch / "co").mkdir()
        a_first, a_best = _time(_analyze(checkout, scratch / "co"), 3)
        rows.append(
            f"| checkout `.venv` (editable) | - | - | - | - | {first:.2f} / {best:.2f} | {a_best:.2f} |"
        )
        builds = (
            [("core", []), (f"+{args.extras}", ["--extras", args.extras])] if args.extras else [("core", [])]
        )
        for label, extra in builds:
            out = scratch / f"out-{len(rows)}"
            archive, build_s = _build(out, *extra)
            if label == "core":
                with tarfile.open(archive) as tar:
                    wheels = sorted(
                        (m for m in tar.getmembers() if m.name.endswith(".whl")), key=lambda m: -m.size
                    )
                largest = [f"{Path(m.name).name} {m.size / 1e6:.1f} MB" for m in wheels[:10]]
            where = scratch / f"site-{len(rows)}"
            where.mkdir()
            tool, install_s = _install(archive, where, wrap)
            first, best = _time([*wrap, str(tool), "--help"], 5)
            (where / "a").mkdir()
            _, a_best = _time([*wrap, *_analyze(tool, where / "a")], 3)
            rows.append(
                f"| `{archive.name}` | {archive.stat().st_size / 1e6:.1f} MB | {build_s:.0f} s | {install_s:.0f} s "
                f"| {_du(where / 'prefix') / 1e6:.0f} MB | {first:.2f} / {best:.2f} | {a_best:.2f} |"
            )
        for plat in filter(None, args.platforms.split(",")):
            archive, build_s = _build(scratch / f"out-{plat}", "--platform", plat)
            rows.append(
                f"| `{archive.name}` | {archive.stat().st_size / 1e6:.1f} MB | {build_s:.0f} s | (another platform) "
                "| - | - | - |"
            )
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    isolation = "inside `unshare -rn` (no network)" if wrap else "with no index (no network namespace here)"
    text = "\n".join(
        [
            f"\n## {when}: the air-gapped archive (scripts/offline_bundle.py)\n",
            f"Machine: `{' '.join(platform.uname())}`; nproc {os.cpu_count()}, load average {load:.1f} at the "
            f"start; Python {platform.python_version()}. Installs by the archive's "
            f"install.sh {isolation}; times are wall seconds; `--help` first run / best of 5, `analyze` of "
            "xid-ecc-3node with `--json --html -q`, best of 3. Build times include downloads (pip's cache warm "
            "or cold as found). Installed = the files under PREFIX.\n",
            "| archive | size | build | install | installed | `--help` s | `analyze` s |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Largest wheels of the core archive: " + "; ".join(largest) + ".",
            "",
        ]
    )
    print(text)
    if not args.no_record:
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write(text)
        print(f"appended to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
