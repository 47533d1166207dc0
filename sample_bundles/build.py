"""Assemble the sample bundles from the real-output fixtures in tests/fixtures.

Each node bundle is built from verbatim captures; where a scenario needs a fault, the edit is the
function given with the fixture in SCENARIOS (or EXTRAS) below, and the scenario's README.md says what
was planted.  Kinds are those of the registry (``parsers.KINDS``); the manifest's command column is the
first of the kind's ``INFO.commands``.  Run from the repository root:

    python3 sample_bundles/build.py
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
OUT = ROOT / "sample_bundles"
STAMP = "2026-12-01T08:00:00Z"
HEADER = "path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote\n"

if str(ROOT) not in sys.path:  # run as a script: sys.path[0] is sample_bundles/
    sys.path.insert(0, str(ROOT))
import parsers  # noqa: E402


def command_of(kind: str) -> str:
    """The manifest command of a probe of this kind: the registry's first command for it."""
    if kind not in parsers.KINDS:
        raise SystemExit(f"build.py: {kind!r} is not a kind of the registry (parsers.KINDS)")
    return parsers.module_for(kind).INFO.commands[0]


def _ecc_fault(text: str) -> str:
    """GPU 3 (bus 5D) of the 8-GPU dump: two volatile and aggregate DRAM uncorrectable errors."""
    head, sep, tail = text.partition("GPU 00000000:5D:00.0")
    for scope in ("Volatile", "Aggregate"):
        marker = f"        {scope}\n"
        before, m, after = tail.partition(marker)
        after = after.replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2", 1)
        tail = before + m + after
    return head + sep + tail


# --- nccl-slow-node: 8 p5 nodes, 28 pairwise nccl-tests logs in the cluster's extra/ -------------------
A3 = "nccl-tests/a3mega-h100-2node-allreduce.txt"  # the real 2-host H100 all_reduce log
A3_HOSTS = ("ztan-mig-235z", "ztan-mig-gq73")  # as printed in its rank lines
SLOW_NODE = 5  # every pair with this node runs at 60 % of the others
GIB = 1 << 30


def _time_cell(us: float) -> str:
    """A time as nccl-tests prints it: 0 decimals from 10 ms, 1 from 100 µs, else 2."""
    return f"{us:.0f}" if us >= 10000 else f"{us:.1f}" if us >= 100 else f"{us:.2f}"


def _set_cells(line: str, cells: dict[int, str]) -> str:
    """The line with whitespace-separated tokens (index >= 1) replaced, each column's right edge kept."""
    parts = re.split(r"(\s+)", line)  # tokens at even positions; a leading blank makes the first empty
    start = 2 if parts and parts[0] == "" else 0
    for k, text in cells.items():
        pos = start + 2 * k
        width = len(parts[pos - 1]) + len(parts[pos])
        parts[pos - 1], parts[pos] = " " * max(1, width - len(text)), text
    return "".join(parts)


def _pair_log(i: int, j: int, scale: float) -> str:
    """The real log with its hosts renamed to ip-10-1-0-<i>/<j>, only the sizes >= 1 GiB kept, and the
    run `scale` times as fast: each time divided by it, algbw = size / time and, for all_reduce,
    busbw = algbw * 2(n-1)/n over the log's n ranks, so every printed column agrees with the others.
    The ``# Avg bus bandwidth`` line (the whole original sweep) is scaled by the same factor."""
    text = (FIX / A3).read_text()
    ranks = len(re.findall(r"^#\s+Rank\s+\d+", text, flags=re.M))
    factor = 2 * (ranks - 1) / ranks  # all_reduce: bus bandwidth per algorithm bandwidth
    out = []
    for line in text.splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit() and len(tokens) >= 13:
            size = int(tokens[0])
            if size < GIB:
                continue
            cells = {}
            for t in (5, 9):  # out-of-place and in-place: time, algbw, busbw
                time_us = float(tokens[t]) / scale
                algbw = size / time_us / 1e3  # B / µs -> GB/s
                cells[t] = _time_cell(time_us)
                cells[t + 1] = f"{algbw:.2f}"
                cells[t + 2] = f"{algbw * factor:.2f}"
            line = _set_cells(line, cells)
        elif "Avg bus bandwidth" in line:
            head, _, value = line.partition(":")
            line = f"{head}: {float(value) * scale:.3f}"
        out.append(line.replace(A3_HOSTS[0], f"ip-10-1-0-{i}").replace(A3_HOSTS[1], f"ip-10-1-0-{j}"))
    return "\n".join(out) + "\n"


def _pair_logs() -> dict[str, str]:
    logs = {}
    for k, (i, j) in enumerate(combinations(range(1, 9), 2)):
        jitter = 0.02 * ((k * 5) % 7 - 3) / 3  # +-2 % run-to-run noise
        scale = 1.2 * (1 + jitter) * (0.6 if SLOW_NODE in (i, j) else 1.0)
        logs[f"nccl-pair-{i:02d}-{j:02d}.txt"] = _pair_log(i, j, scale)
    return logs


def _healthy_p5(i: int) -> dict[str, object]:
    return {
        "meta": {
            "instance_type": "p5.48xlarge",
            "availability_zone": "us-east-1a",
            "hostname": f"ip-10-1-0-{i}",
        },
        "probes": {
            "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", None),
            "dmesg": ("dmesg/returnn-1486-reltime-aer-no-xid.txt", None),
        },
    }


# --- fsx-saturated: 4 nodes stalled on I/O while the FSx file system is pinned above 80 % ---------------
FSX_ID = "fs-0123456789abcdef0"


def _iowait_report(text: str, iowait: str) -> str:
    """The real AKS iostat report as the since-boot report, then the same layout with iowait edited."""
    banner, _, rest = text.partition("\n\n")
    edited = rest.replace(
        "3.42    0.00    2.92    1.90    0.00   91.76", f"3.42    0.00    2.92   {iowait}    0.00   60.00"
    )
    return f"{banner}\n\n{rest.rstrip()}\n\n{edited}"


def _fsx_csv() -> str:
    """SYNTHETIC (no real FSx export exists in the samples): 90 minutes of 1-minute FSx metrics in the
    long-CSV shape, DiskIopsUtilization above 80 % for the last 60 minutes."""
    start = datetime(2026, 12, 1, 6, 30)
    rows = ["Timestamp,Namespace,MetricName,DimensionName,DimensionValue,Statistic,Value,Unit,Period"]
    for m in range(90):
        ts = (start + timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M:%SZ")
        iops = 55 + m * 0.3 if m < 30 else 88 + (m % 7)
        rows.append(f"{ts},AWS/FSx,DiskIopsUtilization,FileSystemId,{FSX_ID},Maximum,{iops:.1f},Percent,60")
        read = (2.0e9 if m < 30 else 3.1e9) * 60
        rows.append(f"{ts},AWS/FSx,DataReadBytes,FileSystemId,{FSX_ID},Sum,{read:.0f},Bytes,60")
    return "\n".join(rows) + "\n"


def _fsx_node(i: int) -> dict[str, object]:
    return {
        "meta": {
            "instance_type": "p5.48xlarge",
            "availability_zone": "us-east-1a",
            "hostname": f"ip-10-2-0-{i}",
        },
        "probes": {
            "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", None),
            "iostat": (
                "iostat/aks-node-xy-old-format.txt",
                lambda t, i=i: _iowait_report(t, f"{30 + i:.2f}"),
            ),
            "lfs-df": ("lfs-df/fsx-workshop-mnt-fsx-3ost.txt", None),
            "df": ("df/hyperpod-workshop-controller-opt-sagemaker-fsx.txt", None),
        },
    }


EXTRAS: dict[str, Callable[[], dict[str, str]]] = {
    "nccl-slow-node": _pair_logs,
    "fsx-saturated": lambda: {f"cw-fsx-{FSX_ID}.csv": _fsx_csv()},
}

SCENARIOS: dict[str, dict[str, dict[str, object]]] = {
    "nccl-slow-node": {f"p5-node-{i:02d}": _healthy_p5(i) for i in range(1, 9)},
    "fsx-saturated": {f"train-{i:02d}": _fsx_node(i) for i in range(1, 5)},
    "xid-ecc-3node": {
        "p5-node-01": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "ip-10-1-0-11",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", _ecc_fault),
                # The runbook's Xid 48/63/94 burst, moved from bus 52 to this dump's GPU 3 (bus 5D).
                "dmesg": (
                    "dmesg/uce-runbook-xid48-63-94-dbe.txt",
                    lambda t: t.replace("PCI:0000:52:00", "PCI:0000:5d:00"),
                ),
            },
        },
        "p5-node-02": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "ip-10-1-0-12",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", None),
                "dmesg": ("dmesg/ogkm-1150-xid45-after-149-145-syslog.txt", None),
            },
        },
        "p5-node-03": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "ip-10-1-0-13",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", None),
                "dmesg": ("dmesg/returnn-1486-reltime-aer-no-xid.txt", None),
            },
        },
        "h100-node-04": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "della-k17g3",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/della-h100-545-single-no-blank-after-banner.txt", None),
                "dmesg": ("dmesg/gpud-readme-dmesg-ctime-xid13-109.txt", None),
            },
        },
    },
}


def build_node(dest: Path, node: str, spec: dict[str, object]) -> None:
    (dest / "cmd").mkdir(parents=True)
    meta = {"bundle_format": "1", "node": node, "collected_at": STAMP, "collector_version": "sample"}
    meta.update(spec["meta"])  # type: ignore[arg-type]
    (dest / "meta.env").write_text("".join(f"{k}={v}\n" for k, v in meta.items()))
    rows = []
    for kind, (fixture, edit) in spec["probes"].items():  # type: ignore[attr-defined]
        text = (FIX / fixture).read_text()
        if edit is not None:
            text = edit(text)
        data = text.encode()
        path = f"cmd/{kind}.txt"
        (dest / path).write_bytes(data)
        (dest / f"cmd/{kind}.err").write_bytes(b"")
        digest = hashlib.sha256(data).hexdigest()
        rows.append(f"{path}\t{kind}\t0\t0.10\t{len(data)}\t{digest}\t{command_of(kind)}\t-\n")
    (dest / "manifest.tsv").write_text(HEADER + "".join(rows))


def main() -> None:
    for scenario, nodes in SCENARIOS.items():
        target = OUT / scenario / "bundle"
        shutil.rmtree(target, ignore_errors=True)
        for node, spec in nodes.items():
            build_node(target / node, node, spec)
        if scenario in EXTRAS:
            (target / "extra").mkdir()
            for name, text in EXTRAS[scenario]().items():
                (target / "extra" / name).write_text(text)
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
