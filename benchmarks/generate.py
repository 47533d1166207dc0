"""Generate a cluster of node tarballs, with realistic per-node sizes, from the real outputs in tests/fixtures.

    .venv/bin/python benchmarks/generate.py --nodes 256 --scenario mixed --out /tmp/cluster [--seed 0]

Writes ``DIR/<node>.tar.gz`` and ``DIR/<node>.tar.gz.sha256`` (``sha256sum`` format, as collector.sh writes
it) per node, cluster-wide nccl-tests logs (and for some scenarios a CloudWatch FSx export) under
``DIR/extra/``, and beside ``DIR`` the answer key ``DIR.expected-faults.json`` (:func:`answer_key`): the rule
ids planted and the nodes they are planted on.  The key lies outside the cluster folder, as it is no part of
a collection: ``hptriage analyze DIR`` would name a loose file in it as an input not read (exit 5).

Every node is a p5.48xlarge (8x H100) built from verbatim captures: the 8-GPU ``nvidia-smi -q`` and its
derived CSVs, ``topo -m``, NVLink status (one real GPU block repeated for the 8 GPUs with their UUIDs), a
~1 MB kernel log of ordinary noise lines (a real EC2 boot log's, with a few link and EFA driver lines
from the dmesg fixtures) with increasing timestamps, ``fi_info -p
efa`` with the real device block repeated for 32 devices, an iostat report with several samples, ``lfs df``,
``df``, ``/proc/mounts``, ``/proc/uptime`` and software versions.  GPU UUIDs and serials differ per node;
PCI bus ids are those of the dump (the same on every p5, as on real hardware).  Each distinct file is built
once and varied per node by string replacement, so 1024 nodes take seconds.

Scenarios (``SCENARIOS``): ``healthy`` (nothing planted), ``xid-ecc`` (uncorrectable ECC plus the Xid
48/63/94 burst on GPU 3 of some nodes, Xid 79 on others), ``nccl-slow-node`` (one node at 60 % in every
pairwise nccl-tests log it is in), ``fsx-saturated`` (FSx DiskIopsUtilization >= 80 % for an hour, iowait
high on some nodes) and ``mixed`` (all of those together).  The output is a function of (nodes, scenario,
seed) only.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import io
import json
import random
import re
import shutil
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_spec = importlib.util.spec_from_file_location("_sample_build", ROOT / "sample_bundles" / "build.py")
sample_build = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(sample_build)  # type: ignore[union-attr]

SCENARIOS = ("healthy", "xid-ecc", "nccl-slow-node", "fsx-saturated", "mixed")
STAMP = "2026-12-01T08:00:00Z"
HEADER = "path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote\n"
GPUS = 8
EFA_DEVICES = 32
DMESG_BYTES = 1_000_000
EVENT_SHARE = 0.002  # of kernel-log lines that are link / driver events (~30 in 1 MB)
IOSTAT_SAMPLES = 3  # collector.sh runs `iostat -c -d -x -k 2 3`
Q_FIXTURE = "collector/nvidia-smi-q/jp-simulator-8xh100-565-complete.txt"
CSV_FIXTURE = "collector/nvidia-smi-csv/jp-simulator-8xh100-565--query-gpu-derived.csv"
REMAP_FIXTURE = "collector/nvidia-smi-csv/jp-simulator-8xh100-565--remapped-rows-derived.csv"
XID79_FIXTURE = "dmesg/gpud-870-dmesg-decode-iso-comma-xid79.txt"
XID_BURST_FIXTURE = "dmesg/uce-runbook-xid48-63-94-dbe.txt"
#: A whole ordinary boot log (EC2, no fault): most noise lines are drawn from it
BOOT_FIXTURE = "dmesg/lkml-87blbg7tlo-boot-ec2-r5d-apic-verbose-blank-line.txt"
#: Link and EFA driver lines, drawn now and then (a real log has a few, and they are events)
NOISE_FIXTURES = (
    "dmesg/amzn-308-dmesg-efa-driver-v2.6.0g.txt",
    "dmesg/coreos-2374-dmesg-bond-link-status-up.txt",
    "dmesg/gpud-1209-journal-mlx5-port-link-active.txt",
)


def command_of(kind: str) -> str:
    return sample_build.command_of(kind)


def fixture(rel: str) -> str:
    return (FIX / rel).read_text()


# -- identities ---------------------------------------------------------------------------------------


def node_name(i: int) -> str:
    return f"p5-node-{i:04d}"


def hostname(i: int) -> str:
    return f"ip-10-3-{i // 250}-{i % 250 + 1}"


_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _identity_map(i: int, text_q: str) -> list[tuple[str, str]]:
    """(old, new) pairs: each GPU UUID and serial of the dump made distinct for node i."""
    uuids = list(dict.fromkeys(_UUID.findall(text_q)))
    serials = list(dict.fromkeys(re.findall(r"^\s+Serial Number\s+: (\d+)$", text_q, flags=re.M)))
    pairs = []
    for g, old in enumerate(uuids):
        pairs.append((old, f"{old[:-12]}{i:08x}{g:04x}"))
    for g, old in enumerate(serials):
        pairs.append((old, f"{1656 * 10**9 + i * 16 + g:013d}"))
    return pairs


def _apply(text: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


# -- per-kind bodies (built once) ---------------------------------------------------------------------


def _noise_messages(fixtures: tuple[str, ...]) -> list[str]:
    """Kernel messages of the fixtures, without their timestamp / syslog prefixes."""
    out = []
    for rel in fixtures:
        for line in fixture(rel).splitlines():
            m = re.match(r"^\[\s*[\d.]+\]\s(.*)$", line)
            if m:
                out.append(m.group(1))
                continue
            _, sep, msg = line.partition(" kernel: ")
            if sep:
                out.append(msg)
    return out


def build_dmesg(rng: random.Random, start_s: float = 20.0) -> tuple[str, float]:
    """~1 MB of raw ``dmesg`` noise with increasing timestamps; the last timestamp."""
    boot, events = _noise_messages((BOOT_FIXTURE,)), _noise_messages(NOISE_FIXTURES)
    lines, size, t = [], 0, start_s
    while size < DMESG_BYTES:
        t += rng.uniform(0.0005, 25.0)
        msg = rng.choice(events) if rng.random() < EVENT_SHARE else rng.choice(boot)
        line = f"[{t:12.6f}] {msg}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n", t


def build_fi_info() -> str:
    """The real efa-direct ``fi_info -p efa`` block repeated for 32 devices rdmap<N>s0."""
    block = fixture("fi-info/eks-pod-kr-201.0-efa-direct.txt")
    bus = [0x10 + 0x10 * d // 4 + d % 4 for d in range(EFA_DEVICES)]  # 4 EFAs per PCIe switch
    return "".join(block.replace("rdmap47s0", f"rdmap{b}s0") for b in bus)


def build_nvlink(uuids: list[str]) -> str:
    """The real H100 GPU-0 NVLink block once per GPU, with that GPU's UUID."""
    text = fixture("collector/nvidia-smi-nvlink/h100-status-i0-18links.txt")
    first, _, links = text.partition("\n")
    old = _UUID.search(first).group(0)  # type: ignore[union-attr]
    return "".join(
        first.replace("GPU 0:", f"GPU {g}:").replace(old, u) + "\n" + links for g, u in enumerate(uuids)
    )


def build_iostat(samples: int, iowait: list[str] | None = None) -> str:
    """The real old-layout report: since-boot report then ``samples - 1`` more, iowait per sample."""
    text = fixture("iostat/aks-node-xy-old-format.txt")
    banner, _, report = text.partition("\n\n")
    report = report.rstrip()
    out = [banner, report]
    for k in range(1, samples):
        if iowait and iowait[k - 1] != "1.90":
            idle = 100 - 3.42 - 2.92 - float(iowait[k - 1])
            out.append(
                report.replace(
                    "3.42    0.00    2.92    1.90    0.00   91.76",
                    f"3.42    0.00    2.92   {iowait[k - 1]:>5}    0.00   {idle:5.2f}",
                )
            )
        else:
            out.append(report)
    return "\n\n".join(out) + "\n"


def build_df() -> str:
    """``df -Th`` of a DLAMI (root, /dev/shm, /opt/dlami/nvme) with the FSx line of a HyperPod node."""
    text = fixture("df/dlami-df-Th-ephemeral-ext4.txt").rstrip("\n").splitlines()
    text.append("10.1.71.197@tcp:/oyuutbev      lustre    1.2T  5.5G  1.2T   1% /fsx")
    return "\n".join(text) + "\n"


VERSIONS = (
    # collector.sh's key=value lines, values of this fixture world: driver 565.57.01 (the -q dump),
    # efa 2.17.3g (the modinfo fixture), libfabric 2.x / efa provider 201.0 (the fi_info fixture)
    "efa_installer=1.38.0\nefa_module=2.17.3g\nlibfabric=2.0.0amzn3.0\nofi_nccl=1.13.2\n"
    "nccl=2.23.4\ncuda=12.6\ncuda_driver_max=12.7\nnvidia_driver=565.57.01\n"
    "kernel=6.8.0-1021-aws\nos=Ubuntu 22.04.5 LTS\n"
)


def allreduce_log(hosts: list[str], scale: float) -> str:
    """A ring all_reduce over every node: the real 2-host log's table (>= 1 GiB rows, via
    sample_bundles/build.py), its 16 rank lines repeated for every host's 8 GPUs."""
    text = sample_build._pair_log(1, 2, scale)
    head, _, rest = text.partition("#  Rank  0")
    rank_lines = [ln for ln in ("#  Rank  0" + rest).splitlines() if ln.startswith("#  Rank")]
    tail = "\n".join(ln for ln in ("#  Rank  0" + rest).splitlines() if not ln.startswith("#  Rank"))
    out, r = [], 0
    for h in hosts:
        for line in rank_lines[:GPUS]:
            line = re.sub(r"Rank\s+\d+", f"Rank {r:2d}", line).replace("ip-10-1-0-1", h)
            out.append(line)
            r += 1
    return head + "\n".join(out) + "\n" + tail + "\n"


def pair_log(base: str, a: str, b: str) -> str:
    return base.replace("ip-10-1-0-1", a).replace("ip-10-1-0-2", b)


# -- faults -------------------------------------------------------------------------------------------


def plan(nodes: int, scenario: str, rng: random.Random) -> dict[str, list[int]]:
    """Which node indices get which fault."""
    if scenario not in SCENARIOS:
        raise SystemExit(f"generate.py: unknown scenario {scenario!r} (one of {', '.join(SCENARIOS)})")
    idx = list(range(nodes))
    rng.shuffle(idx)
    k = max(1, nodes // 32)
    faults: dict[str, list[int]] = {}
    take = iter(idx)
    if scenario in ("xid-ecc", "mixed"):
        faults["ecc"] = sorted(next(take) for _ in range(min(k, nodes)))
        faults["xid79"] = sorted(next(take) for _ in range(min(k, max(0, nodes - len(faults["ecc"])))))
    if scenario in ("nccl-slow-node", "mixed") and nodes >= 5:
        faults["slow"] = [next(take)]
    if scenario in ("fsx-saturated", "mixed"):
        faults["fsx"] = []  # cluster-wide
        faults["iowait"] = sorted(
            next(take) for _ in range(min(k, max(0, nodes - sum(map(len, faults.values())))))
        )
    return faults


#: fault -> the rule ids it makes fire (on the planted nodes; fsx is cluster-wide, node None)
RULES = {
    "ecc": ("gpu.ecc.uncorrectable", "gpu.xid"),
    "xid79": ("gpu.xid.fallen_off_bus",),
    "slow": ("nccl.pair.slow", "nccl.busbw.straggler"),
    "fsx": ("fs.fsx.utilization_sustained", "fs.verdict"),
    "iowait": ("fs.iowait.high", "straggler.host.iowait"),
}


def _xid79_line(t: float) -> str:
    """The real Xid 79 message, moved to GPU 3 (bus 5D) and onto dmesg's raw clock."""
    line = next(ln for ln in fixture(XID79_FIXTURE).splitlines() if "Xid" in ln)
    msg = line[line.index("NVRM:") :].replace("PCI:0000:04:00", "PCI:0000:5d:00")
    return f"[{t:12.6f}] {msg}\n"


def _xid_burst(t: float) -> str:
    out = []
    for k, line in enumerate(fixture(XID_BURST_FIXTURE).splitlines()):
        msg = line[line.index("NVRM:") :].replace("PCI:0000:52:00", "PCI:0000:5d:00")
        out.append(f"[{t + 0.01 * k:12.6f}] {msg}\n")
    return "".join(out)


# -- writing ------------------------------------------------------------------------------------------


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1764576000
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_node(out: Path, i: int, files: list[tuple[str, str, str]]) -> None:
    """files: (path in the bundle, kind or '-', text)."""
    name = node_name(i)
    meta = (
        f"bundle_format=1\nnode={name}\ncollected_at={STAMP}\ncollector_version=generate\n"
        f"instance_type=p5.48xlarge\navailability_zone=us-east-1a\nplacement_group=pg-train-01\n"
        f"hostname={hostname(i)}\nnproc=192\ninstance_id=i-{0x0A000000 + i:017x}\n"
    )
    rows, blobs = [], []
    for path, kind, text in files:
        data = text.encode()
        rows.append(
            f"{path}\t{kind}\t0\t0.10\t{len(data)}\t{hashlib.sha256(data).hexdigest()}\t{command_of(kind)}\t-\n"
        )
        blobs.append((path, data))
    top = f"{name}"
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar,
    ):
        _add(tar, f"{top}/meta.env", meta.encode())
        _add(tar, f"{top}/manifest.tsv", (HEADER + "".join(rows)).encode())
        for path, data in blobs:
            _add(tar, f"{top}/{path}", data)
    raw = buf.getvalue()
    tarball = out / f"{name}.tar.gz"
    tarball.write_bytes(raw)
    (out / f"{name}.tar.gz.sha256").write_text(f"{hashlib.sha256(raw).hexdigest()}  {tarball.name}\n")


def generate(out: Path, nodes: int, scenario: str, seed: int = 0) -> dict:
    """Write the cluster into ``out`` (created; emptied of earlier tarballs); return the answer key,
    written beside ``out`` (:func:`answer_key`)."""
    out = Path(out)
    rng = random.Random(f"{scenario}:{nodes}:{seed}")
    faults = plan(nodes, scenario, rng)
    out.mkdir(parents=True, exist_ok=True)
    for old in list(out.glob("*.tar.gz")) + list(out.glob("*.tar.gz.sha256")):
        old.unlink()
    shutil.rmtree(out / "extra", ignore_errors=True)

    q = fixture(Q_FIXTURE)
    q_ecc = sample_build._ecc_fault(q)
    csv, remap = fixture(CSV_FIXTURE), fixture(REMAP_FIXTURE)
    uuids = list(dict.fromkeys(_UUID.findall(q)))
    nvlink = build_nvlink(uuids)
    dmesg_variants = [build_dmesg(rng) for _ in range(4)]
    common = [
        (
            "cmd/nvidia-smi-topo.txt",
            "nvidia-smi-topo",
            fixture("collector/nvidia-smi-topo/della-h100-nic-legend-empty-cpu-affinity.txt"),
        ),
        ("cmd/fi-info.txt", "fi-info", build_fi_info()),
        ("cmd/lfs-df.txt", "lfs-df", fixture("lfs-df/fsx-workshop-mnt-fsx-3ost.txt")),
        ("cmd/df.txt", "df", build_df()),
        ("cmd/mounts.txt", "mounts", fixture("mounts/handwritten-hyperpod-slurm-proc-mounts.txt")),
        ("cmd/uptime.txt", "uptime", fixture("uptime/handwritten-proc-uptime.txt")),
        ("cmd/versions.txt", "versions", VERSIONS),
    ]
    iostat_ok = build_iostat(IOSTAT_SAMPLES)
    iostat_busy = build_iostat(IOSTAT_SAMPLES, ["38.50", "41.20"])
    ecc, x79, iow = set(faults.get("ecc", ())), set(faults.get("xid79", ())), set(faults.get("iowait", ()))
    for i in range(nodes):
        ids = _identity_map(i, q)
        dmesg, last_t = dmesg_variants[i % len(dmesg_variants)]
        if i in ecc:
            dmesg += _xid_burst(last_t + 3.0)
        if i in x79:
            dmesg += _xid79_line(last_t + 5.0)
        files = [
            ("cmd/nvidia-smi-q.txt", "nvidia-smi-q", _apply(q_ecc if i in ecc else q, ids)),
            ("cmd/nvidia-smi-query-gpu.txt", "nvidia-smi-csv", _apply(csv, ids)),
            ("cmd/nvidia-smi-remapped-rows.txt", "nvidia-smi-csv", _apply(remap, ids)),
            ("cmd/nvidia-smi-nvlink.txt", "nvidia-smi-nvlink", _apply(nvlink, ids)),
            ("cmd/dmesg.txt", "dmesg", dmesg),
            ("cmd/iostat.txt", "iostat", iostat_busy if i in iow else iostat_ok),
            *common,
        ]
        write_node(out, i, files)

    extra = out / "extra"
    extra.mkdir()
    hosts = [hostname(i) for i in range(nodes)]
    (extra / "nccl-allreduce-ring.txt").write_text(allreduce_log(hosts, 1.2))
    if "slow" in faults:
        slow = faults["slow"][0]
        fast_log, slow_log = sample_build._pair_log(1, 2, 1.2), sample_build._pair_log(1, 2, 1.2 * 0.6)
        for a in range(nodes):  # each node with its next two: 2N pairs, every node in 4 of them
            for step in (1, 2):
                b = (a + step) % nodes
                if b == a or (step == 2 and nodes < 5):
                    continue
                base = slow_log if slow in (a, b) else fast_log
                (extra / f"nccl-pair-{a:04d}-{b:04d}.txt").write_text(pair_log(base, hosts[a], hosts[b]))
    if "fsx" in faults:
        fs_id = sample_build.FSX_ID
        (extra / f"cw-fsx-{fs_id}.csv").write_text(sample_build._fsx_csv())

    expected: dict[str, list] = {}
    for fault, members in faults.items():
        for rule in RULES[fault]:
            names = [node_name(i) for i in members] if members else [None]
            expected.setdefault(rule, []).extend(names)
    doc = {
        "scenario": scenario,
        "nodes": nodes,
        "seed": seed,
        "node_names": [node_name(i) for i in range(nodes)],
        "faults": {rule: sorted(v, key=lambda n: n or "") for rule, v in sorted(expected.items())},
        "note": "rule id -> nodes it is planted on (null: a cluster-wide finding with no node)",
    }
    (out / "expected-faults.json").unlink(missing_ok=True)  # where an earlier version wrote it
    answer_key(out).write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def answer_key(out: Path) -> Path:
    """Where :func:`generate` writes the faults it planted in the cluster at ``out``: beside the folder
    (``/tmp/fleet`` -> ``/tmp/fleet.expected-faults.json``), not in it."""
    out = Path(out)
    return out.with_name(out.name + ".expected-faults.json")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--scenario", choices=SCENARIOS, default="healthy")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    start = time.perf_counter()
    doc = generate(args.out, args.nodes, args.scenario, args.seed)
    print(
        f"wrote {args.nodes} nodes ({args.scenario}, seed {args.seed}) to {args.out} in "
        f"{time.perf_counter() - start:.1f} s; planted: "
        + ", ".join(f"{rule} x{len(names)}" for rule, names in doc["faults"].items())
    )


if __name__ == "__main__":
    main()
