"""A sos report (sosreport/sos ``sos report``) read as a node bundle (analyzer.intake.foreign.sos_report).

No public sos report of a GPU node exists, so each report is BUILT here as sos lays one out: one top
directory ``sosreport-<host>-<date>-<random>``, sos 4.x's tarfile order (``version.txt``,
``sos_reports/``, ``sos_logs/`` first, then the whole tree), ``sos_reports/manifest.json`` from
tests/fixtures/sos-report/manifest-4.10.2-gpu-node.json (written in the shape sos's source writes),
each command's output at the manifest's ``filepath`` (``sos_commands/<plugin>/<mangled command>``).
The outputs are real ones from tests/fixtures: ``dmesg`` and ``dmesg -T`` are
dmesg/gpud-870-dmesg-decode-iso-comma-xid79.txt (Xid 79 on PCI 0000:04:00), ``nvidia-smi -q`` is
nvidia-smi-q/jp-simulator-8xh100-565-complete.txt, ``nvidia-smi nvlink -s`` is
nvidia-smi-nvlink/h100-status-i0-18links.txt, ``nvidia-smi nvlink -e`` is
sos-report/derived-mlengineering-h100-nvlink-e.txt, the ``--query-gpu`` CSV is
nvidia-smi-csv/hpc-h100-595-11cols.txt, ``df -al`` and ``df -aliT`` are df/jc-ubuntu-18.04-df.out,
``mount -l`` is mounts/jc-ubuntu-18.04-mount.out, ``uptime`` is
uptime/jc-ubuntu-18.04-uptime-2-days-hh-mm.txt, and ``proc/driver/nvidia/version`` is the
``/proc/driver/nvidia/./version`` section of the real nvidia-bug-report excerpt.  The host name,
``uname -a`` line, ``date --utc`` line and AWS metadata values are made up for the test; ``lfs df``
timed out (exit 124, an empty output, as sos writes it).
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import tarfile
from pathlib import Path
from typing import Any

from analyzer.intake import foreign
from analyzer.intake.foreign import sos_report as sos
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST = FIXTURES / "sos-report" / "manifest-4.10.2-gpu-node.json"
DMESG = FIXTURES / "dmesg" / "gpud-870-dmesg-decode-iso-comma-xid79.txt"
HOST = "gpu-node-07"
TOP = f"sosreport-{HOST}-2026-01-05-qpkxdid"
IID = "i-0a1b2c3d4e5f60718"
OUTPUTS = {
    "dmesg": DMESG,
    "dmesg -T": DMESG,
    "nvidia-smi -q": FIXTURES / "nvidia-smi-q" / "jp-simulator-8xh100-565-complete.txt",
    "nvidia-smi nvlink -s": FIXTURES / "nvidia-smi-nvlink" / "h100-status-i0-18links.txt",
    "nvidia-smi nvlink -e": FIXTURES / "sos-report" / "derived-mlengineering-h100-nvlink-e.txt",
    sos.QUERY_GPU: FIXTURES / "nvidia-smi-csv" / "hpc-h100-595-11cols.txt",
    "df -al -x autofs": FIXTURES / "df" / "jc-ubuntu-18.04-df.out",
    "df -aliT -x autofs": FIXTURES / "df" / "jc-ubuntu-18.04-df.out",
    "mount -l": FIXTURES / "mounts" / "jc-ubuntu-18.04-mount.out",
    "uptime": FIXTURES / "uptime" / "jc-ubuntu-18.04-uptime-2-days-hh-mm.txt",
}
MADE_UP = {
    "hostname": f"{HOST}\n",
    "hostname -f": f"{HOST}.ec2.internal\n",
    "uname -a": f"Linux {HOST} 6.8.0-1021-aws #23-Ubuntu SMP Mon Dec  9 23:59:34 UTC 2024 x86_64 GNU/Linux\n",
    "date --utc": "Mon Jan  5 08:00:02 UTC 2026\n",
    "curl -sS  http://169.254.169.254/latest/meta-data/instance-id": IID,
    "curl -sS  http://169.254.169.254/latest/meta-data/instance-type": "p5.48xlarge",
    "curl -sS  http://169.254.169.254/latest/meta-data/placement/availability-zone-id": "use1-az6",
}


def _driver_version() -> bytes:
    """The /proc/driver/nvidia/version section of the real bug report excerpt, as the file held it."""
    text = (FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log").read_text()
    section = text.split("*** /proc/driver/nvidia/./version", 1)[1].split("_" * 44, 1)[0]
    lines = [ln for ln in section.splitlines() if ln.strip() and not ln.startswith("*** ls:")]
    return ("\n".join(lines) + "\n").encode()


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(MANIFEST.read_text())
    return data


def _tree(manifest: dict[str, Any] | None = None) -> dict[str, bytes]:
    """The report's files, as sos writes them (outputs at their manifest filepath)."""
    man = manifest or _manifest()
    files: dict[str, bytes] = {
        "version.txt": b"sos report: 4.10.2",  # sos/report/__init__.py version(): no newline
        "sos_logs/sos.log": b"2026-01-05 08:00:00,216 INFO: [sos.report:setup] executing 'sos report'\n",
        "sos_reports/manifest.json": json.dumps(man, indent=4).encode(),
        "proc/driver/nvidia/version": _driver_version(),
        "etc/hostname": f"{HOST}\n".encode(),
    }
    for plugin in man["components"]["report"]["plugins"].values():
        for cmd in plugin["commands"]:
            if not cmd["filepath"]:
                continue
            exe = cmd["exec"]
            if exe in OUTPUTS:
                files[cmd["filepath"]] = OUTPUTS[exe].read_bytes()
            elif exe in MADE_UP:
                files[cmd["filepath"]] = MADE_UP[exe].encode()
            elif cmd["return_code"] == 124:
                files[cmd["filepath"]] = b""  # timed out before printing
            else:
                files[cmd["filepath"]] = f"(output of {exe})\n".encode()
    return files


def _tarball(
    path: Path,
    files: dict[str, bytes],
    extra: list[tuple[tarfile.TarInfo, bytes]] | None = None,
    top_dir: str = TOP,
) -> Path:
    """sos 4.x's tarfile writer: version.txt, sos_reports, sos_logs first, then the whole tree sorted."""
    mode = "w:xz" if path.name.endswith(".xz") else "w:gz"
    with tarfile.open(path, mode) as tar:

        def add(name: str) -> None:
            info = tarfile.TarInfo(f"{top_dir}/{name}")
            info.size = len(files[name])
            tar.addfile(info, io.BytesIO(files[name]))

        first = [
            n for n in sorted(files) if n == "version.txt" or n.startswith(("sos_reports/", "sos_logs/"))
        ]
        for name in first:
            add(name)
        top = tarfile.TarInfo(top_dir)
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for name in sorted(files):
            add(name)
        for info, data in extra or []:
            tar.addfile(info, io.BytesIO(data) if data else None)
    return path


def _analyze(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs)


def _store(tmp_path: Path, *inputs: Path) -> Any:
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    return load(con, list(inputs), work, Limits(), jobs=1), con


def test_mangled_names_are_the_manifest_filepaths() -> None:
    for plugin in _manifest()["components"]["report"]["plugins"].values():
        for cmd in plugin["commands"]:
            if cmd["filepath"] and not cmd["filepath"].startswith("sos_commands/aws/"):
                assert cmd["filepath"].rpartition("/")[2] == sos.mangle(cmd["exec"])


def test_xz_report_is_one_node_with_its_xid_finding_and_facts(tmp_path: Path) -> None:
    path = _tarball(tmp_path / f"{TOP}.tar.xz", _tree())
    assert foreign.detect(path) == sos.SOURCE
    summary, con = _store(tmp_path, path)
    assert summary.nodes == [HOST]
    parsed = con.execute("SELECT kind FROM file WHERE node = ? AND status = 'parsed' ORDER BY 1", [HOST])
    kinds = {k for (k,) in parsed.fetchall()}
    assert {"dmesg", "nvidia-smi-q", "nvidia-smi-nvlink", "nvidia-smi-csv", "df", "mounts", "uptime"} <= kinds
    assert "versions" in kinds
    xids = con.execute(
        "SELECT xid FROM kernel_event WHERE node = ? AND event_type = 'xid'", [HOST]
    ).fetchall()
    assert (79,) in xids
    probe = con.execute(
        "SELECT exit_code, present, command FROM probe WHERE node = ? AND kind = 'lfs-df'", [HOST]
    )
    assert sorted(probe.fetchall()) == [(124, True, "lfs df"), (124, True, "lfs df -i")]
    efa = con.execute("SELECT exit_code, present FROM probe WHERE node = ? AND kind = 'efa-ports'", [HOST])
    assert efa.fetchall() == [(127, False)]  # ibstat not installed: no file, its exit code

    code, report, output = _analyze(tmp_path, path)
    assert code == 0, output
    findings = [f for f in report["findings"] if f["node"] == HOST]
    xid = [f for f in findings if f["rule"].startswith("gpu.xid") and f["params"].get("xid") == 79]
    assert xid, [f["rule"] for f in findings]
    coverage = next(f for f in findings if f["rule"] == "bundle.coverage")
    assert "cmd/lfs-df.txt" in coverage["params"]["timed_out"]
    assert "cmd/efa-ports.txt" in coverage["params"]["missing_tool"]
    not_examined = [r for r in report["verdict"]["not_examined"] if r["node"] == HOST]
    reasons = {r["what"].split(" ")[0]: r.get("reason", "") for r in not_examined}
    for kind in ("fi-info", "iostat", "nvidia-smi-topo", "fabricmanager"):
        assert reasons.get(kind) == sos.NOT_CARRIED_NOTE, (kind, reasons)
    assert reasons["cpu-governor"] == f"{sos.NOT_CARRIED_NOTE}: sos plugin processor did not run"
    text = json.dumps(report)
    assert IID in text and "p5.48xlarge" in text


def test_meta_env_facts(tmp_path: Path) -> None:
    path = _tarball(tmp_path / f"{TOP}.tar.gz", _tree())
    converted = sos.convert(path, tmp_path / "w" / "node", Limits())
    assert converted.node_dir is not None and not converted.refusals, converted
    meta = dict(line.split("=", 1) for line in (converted.node_dir / "meta.env").read_text().splitlines())
    assert meta["node"] == HOST and meta["source"] == sos.SOURCE and meta["source_file"] == path.name
    assert (
        meta["instance_id"] == IID and meta["instance_type"] == "p5.48xlarge" and meta["az_id"] == "use1-az6"
    )
    assert meta["collected_at"] == "2026-01-05T08:00:01Z"  # the first command's start (epoch seconds)
    assert meta["kernel"] == "6.8.0-1021-aws" and meta["collector_version"] == "sos 4.10.2"
    manifest = (converted.node_dir / "manifest.tsv").read_text()
    assert "cmd/nvidia-smi-csv.txt\tnvidia-smi-csv\t0\t-\t" in manifest and sos.QUERY_GPU in manifest
    assert (converted.node_dir / "cmd" / "dmesg.txt").read_bytes() == DMESG.read_bytes()


def test_gz_and_xz_read_alike_and_a_directory_too(tmp_path: Path) -> None:
    files = _tree()
    xz = sos.convert(_tarball(tmp_path / f"{TOP}.tar.xz", files), tmp_path / "a" / "n", Limits())
    gz = sos.convert(_tarball(tmp_path / f"{TOP}.tar.gz", files), tmp_path / "b" / "n", Limits())
    folder = tmp_path / "extracted" / TOP
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    assert sos.detect(folder)
    plain = sos.convert(folder, tmp_path / "c" / "n", Limits())
    listings = []
    for conv in (xz, gz, plain):
        assert conv.node_dir is not None
        listings.append({p.name: p.read_bytes() for p in (conv.node_dir / "cmd").iterdir()})
    assert listings[0] == listings[1] == listings[2]


def test_without_a_manifest_outputs_are_found_by_their_names(tmp_path: Path) -> None:
    files = _tree()
    del files["sos_reports/manifest.json"]
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files)
    assert sos.detect(path)  # sos_commands/ and sos_logs/
    converted = sos.convert(path, tmp_path / "w" / "node", Limits())
    assert converted.node_dir is not None
    names = {p.name for p in (converted.node_dir / "cmd").iterdir()}
    assert {"dmesg.txt", "nvidia-smi-q.txt", "nvidia-smi-csv.txt", "df.txt", "mounts.txt"} <= names
    meta = (converted.node_dir / "meta.env").read_text()
    assert f"node={HOST}\n" in meta and "collected_at=2026-01-05T08:00:02Z\n" in meta  # date --utc


def test_plugin_that_did_not_run_is_not_carried_with_that_reason(tmp_path: Path) -> None:
    manifest = _manifest()
    del manifest["components"]["report"]["plugins"]["nvidia"]
    files = {n: d for n, d in _tree(manifest).items() if not n.startswith("proc/driver/")}
    converted = sos.convert(_tarball(tmp_path / f"{TOP}.tar.xz", files), tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    rows = (converted.node_dir / "manifest.tsv").read_text().splitlines()
    smi = next(r.split("\t") for r in rows if r.startswith("cmd/nvidia-smi-q.txt"))
    assert smi[7] == f"{sos.NOT_CARRIED_NOTE}: sos plugin nvidia did not run"


def test_truncated_output_is_read_from_its_tail(tmp_path: Path) -> None:
    """sos >= 4.2 (_collect_cmd_output): a cut output is written to sos_strings/<plugin>/<name>.tailed,
    the manifest's filepath names that file, and sos_commands/<plugin>/<name> is a link to it."""
    manifest = _manifest()
    for cmd in manifest["components"]["report"]["plugins"]["kernel"]["commands"]:
        if cmd["exec"] == "dmesg -T":
            cmd["truncated"] = True
            cmd["filepath"] = "sos_strings/kernel/dmesg_-T.tailed"
    files = _tree(manifest)  # the tail at the manifest's filepath
    assert "sos_commands/kernel/dmesg_-T" not in files
    link = tarfile.TarInfo(f"{TOP}/sos_commands/kernel/dmesg_-T")
    link.type, link.linkname = tarfile.SYMTYPE, "../../sos_strings/kernel/dmesg_-T.tailed"
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files, [(link, b"")])
    converted = sos.convert(path, tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None and not converted.refusals  # sos's own link is not needed
    row = next(
        r for r in (converted.node_dir / "manifest.tsv").read_text().splitlines() if r.startswith("cmd/dmesg")
    )
    assert "dmesg -T" in row and "tail was kept" in row
    origins = (converted.node_dir / "origins.tsv").read_text()
    assert f"{TOP}.tar.xz!sos_strings/kernel/dmesg_-T.tailed" in origins


def test_truncated_output_of_a_manifest_naming_the_link_is_read_from_its_tail(tmp_path: Path) -> None:
    """A manifest whose filepath still names the sos_commands link: the tail is looked up beside it."""
    manifest = _manifest()
    for cmd in manifest["components"]["report"]["plugins"]["kernel"]["commands"]:
        if cmd["exec"] == "dmesg -T":
            cmd["truncated"] = True
    files = _tree(manifest)
    del files["sos_commands/kernel/dmesg_-T"]
    files["sos_strings/kernel/dmesg_-T.tailed"] = DMESG.read_bytes()
    converted = sos.convert(_tarball(tmp_path / f"{TOP}.tar.xz", files), tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    assert (converted.node_dir / "cmd" / "dmesg.txt").read_bytes() == DMESG.read_bytes()


def test_escaping_member_and_link_are_unread_inputs(tmp_path: Path) -> None:
    files = _tree()
    del files["sos_commands/kernel/dmesg_-T"]
    evil = tarfile.TarInfo(f"{TOP}/../escaped.txt")
    evil.size = 5
    link = tarfile.TarInfo(f"{TOP}/sos_commands/kernel/dmesg_-T")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
    harmless = tarfile.TarInfo(f"{TOP}/etc/localtime")
    harmless.type, harmless.linkname = tarfile.SYMTYPE, "/usr/share/zoneinfo/UTC"
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files, [(evil, b"x" * 5), (link, b""), (harmless, b"")])
    summary, con = _store(tmp_path, path)
    assert summary.nodes == [HOST]  # the rest is read: plain dmesg stands in
    assert not list(tmp_path.rglob("escaped.txt"))
    xids = con.execute("SELECT xid FROM kernel_event WHERE event_type = 'xid'").fetchall()
    assert (79,) in xids
    code, report, output = _analyze(tmp_path, path)
    assert code == 5, output
    unread = json.dumps(report["verdict"])
    assert f"{path}!{TOP}/../escaped.txt" in unread or f"{TOP}/../escaped.txt" in unread
    assert f"!{TOP}/sos_commands/kernel/dmesg_-T" in unread and "not followed" in unread
    assert "etc/localtime" not in unread  # a host symlink sos kept, not something read here


def test_xz_bomb_stops_at_the_caps(tmp_path: Path) -> None:
    files = _tree()
    bomb = tarfile.TarInfo(f"{TOP}/sos_commands/kernel/dmesg")
    size = 8 * 1024**2
    bomb.size = size
    path = tmp_path / f"{TOP}.tar.xz"
    with lzma.open(path, "wb", preset=1) as raw, tarfile.open(fileobj=raw, mode="w|") as tar:
        for name in ("version.txt", "sos_logs/sos.log", "sos_reports/manifest.json"):
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size = len(files[name])
            tar.addfile(info, io.BytesIO(files[name]))

        class Zeros(io.RawIOBase):
            left = size

            def readinto(self, b: Any) -> int:
                n = min(len(b), self.left)
                b[:n] = bytes(n)
                self.left -= n
                return n

        tar.addfile(bomb, Zeros())
    assert path.stat().st_size < 64 * 1024  # a few kB expanding to 8 MiB
    converted = sos.convert(path, tmp_path / "w" / "n", Limits(ratio_floor_bytes=1024**2))
    assert converted.node_dir is None  # reading stopped before the bomb was kept
    assert "expansion ratio" in converted.reason and "implausible" in converted.reason
    capped = sos.convert(path, tmp_path / "w2" / "n", Limits(max_file_bytes=1024**2))
    refused = [r for r in capped.refusals if r.path.endswith("sos_commands/kernel/dmesg")]
    assert refused and "per-file cap" in refused[0].reason  # refused on its header, never expanded


def test_other_tarballs_and_names(tmp_path: Path) -> None:
    other = tmp_path / "logs.tar.xz"
    with tarfile.open(other, "w:xz") as tar:
        for name in ("a/sos_commands/x", "b/sos_logs/y"):  # two top directories
            info = tarfile.TarInfo(name)
            tar.addfile(info, io.BytesIO(b""))
    assert not sos.detect(other)
    assert sos.NAMED.search(f"{TOP}.tar.xz") and sos.NAMED.search("sosreport-h-01234567-2026-01-05-ab.tar.gz")
    assert not sos.NAMED.search("report.tar.xz")
    assert sos._name_host(Path(f"{TOP}.tar.xz")) == HOST


def test_df_inodes_of_sos_3_5_to_4_7_1(tmp_path: Path) -> None:
    """sos 3.5-4.7.1's filesys plugin ran "df -ali -x autofs" (4.7.2 added -T: "df -aliT -x autofs")."""
    manifest = _manifest()
    for cmd in manifest["components"]["report"]["plugins"]["filesys"]["commands"]:
        if cmd["exec"] == "df -aliT -x autofs":
            cmd["exec"], cmd["parameters"] = "df -ali -x autofs", ["-ali", "-x", "autofs"]
            cmd["filepath"] = "sos_commands/filesys/df_-ali_-x_autofs"
    files = _tree(manifest)
    files["sos_commands/filesys/df_-ali_-x_autofs"] = OUTPUTS["df -al -x autofs"].read_bytes()
    converted = sos.convert(_tarball(tmp_path / f"{TOP}.tar.xz", files), tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    rows = (converted.node_dir / "manifest.tsv").read_text().splitlines()
    df = [r.split("\t") for r in rows if "\tdf\t" in r]
    assert sorted(r[6] for r in df) == ["df -al -x autofs", "df -ali -x autofs"]
    assert sos.mangle("df -ali -x autofs") == "df_-ali_-x_autofs"


#: sos 3.0-3.5: hostname, uptime and date in the general plugin, no manifest, eight --query-gpu fields
#: and no nvidia-smi -q (sos/plugins/general.py, nvidia.py @ tags 3.2-3.5), the 'legacy' name pattern
#: (sosreport-<host>[.<case>]-<YYYYmmddHHMMSS>) of policies other than Red Hat's and Debian's
LEGACY_TOP = f"sosreport-{HOST}.01234567-20260105080002"


def _sos_3_tree() -> dict[str, bytes]:
    return {
        "version.txt": b"sosreport: 3.4\ngeneral: 3.4\nkernel: 3.4",  # sosreport.py version()
        "sos_logs/sos.log": b"2026-01-05 08:00:02,216 INFO: [sos.sosreport:setup] executing 'sosreport'\n",
        "sos_commands/general/hostname": f"{HOST}\n".encode(),
        "sos_commands/general/uptime": OUTPUTS["uptime"].read_bytes(),
        "sos_commands/general/date": b"Mon Jan  5 08:00:02 UTC 2026\n",
        "sos_commands/kernel/dmesg": DMESG.read_bytes(),
        "sos_commands/kernel/uname_-a": MADE_UP["uname -a"].encode(),
        "sos_commands/filesys/df_-al": OUTPUTS["df -al -x autofs"].read_bytes(),
        "sos_commands/filesys/df_-ali": OUTPUTS["df -al -x autofs"].read_bytes(),
        "sos_commands/filesys/mount_-l": OUTPUTS["mount -l"].read_bytes(),
        f"sos_commands/nvidia/{sos.mangle(sos.QUERY_GPU_OLD)}": b"name, pci.bus_id\n",
        "sos_commands/nvidia/nvidia-smi_-q_-d_PERFORMANCE": b"==============NVSMI LOG==============\n",
    }


def test_sos_3_report_general_plugin_old_query_and_legacy_name(tmp_path: Path) -> None:
    path = _tarball(tmp_path / f"{LEGACY_TOP}.tar.xz", _sos_3_tree(), top_dir=LEGACY_TOP)
    assert sos.detect(path) and sos.NAMED.search(path.name)
    converted = sos.convert(path, tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None, converted
    names = {p.name for p in (converted.node_dir / "cmd").iterdir()}
    assert {"dmesg.txt", "df.txt", "df-2.txt", "mounts.txt", "uptime.txt", "nvidia-smi-csv.txt"} <= names
    rows = [r.split("\t") for r in (converted.node_dir / "manifest.tsv").read_text().splitlines()]
    by_kind = {r[1]: r for r in rows[1:]}
    assert by_kind["nvidia-smi-csv"][6] == sos.QUERY_GPU_OLD
    assert by_kind["nvidia-smi-q"][7] == (
        f"{sos.NOT_CARRIED_NOTE}: no 'nvidia-smi -q' from sos plugin nvidia"
    )  # sos < 4.3 ran only -q -d PERFORMANCE and the like
    meta = dict(line.split("=", 1) for line in (converted.node_dir / "meta.env").read_text().splitlines())
    assert meta["node"] == HOST and meta["collector_version"] == "sos 3.4"
    assert meta["collected_at"] == "2026-01-05T08:00:02Z"  # general/date, printed in UTC
    assert sos._name_host(Path(f"{LEGACY_TOP}.tar.xz")) == HOST


def test_report_names_of_each_policy_pattern() -> None:
    """sos/policies/__init__.py get_archive_name, and sos clean's '-obfuscated' (cleaner/archives)."""
    assert sos._name_host(Path(f"sosreport-{HOST}-20260105080002.tar.xz")) == HOST
    assert sos._name_host(Path(f"sosreport-{HOST}.01234567-20260105080002.tar.gz")) == HOST
    assert sos._name_host(Path(f"{TOP}-obfuscated.tar.xz")) == HOST
    assert sos._name_host(Path("sosreport-host0-2026-01-05-qpkxdid-obfuscated.tar.xz")) == "host0"
    # --label and --case-id stay with the host in the friendly pattern: they cannot be told apart
    assert sos._name_host(Path(f"sosreport-{HOST}-mylabel-2026-01-05-qpkxdid.tar.xz")) == f"{HOST}-mylabel"


#: the kernel's mount table as sos copies it from /proc/<its own pid>/mounts (a hand-written HyperPod
#: table, tests/fixtures/mounts/PROVENANCE.md; the real one is read in tests/test_sos_real.py)
PROC_MOUNTS = FIXTURES / "mounts" / "handwritten-hyperpod-slurm-proc-mounts.txt"
NVLINK_E = OUTPUTS["nvidia-smi nvlink -e"]


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(f"{TOP}/{name}")
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, b""


def _debian_links() -> list[tuple[tarfile.TarInfo, bytes]]:
    """The links Debian's sos 4.0 keeps (seen in a report it made): sorted, etc/mtab before its target."""
    return [
        _link("etc/mtab", "../proc/self/mounts"),
        _link("proc/mounts", "self/mounts"),
        _link("proc/self", "4242"),
        _link("lib", "usr/lib"),  # a link to nothing sos copied, not read here
    ]


def test_mount_table_behind_the_links_sos_keeps(tmp_path: Path) -> None:
    """proc/mounts -> self/mounts, proc/self -> 4242, etc/mtab -> ../proc/self/mounts: the file is
    proc/4242/mounts, read through the chain as the kernel's own table, before mount -l."""
    files = _tree()
    files["proc/4242/mounts"] = PROC_MOUNTS.read_bytes()
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files, _debian_links())
    converted = sos.convert(path, tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None and not converted.refusals, converted.refusals
    assert (converted.node_dir / "cmd" / "mounts.txt").read_bytes() == PROC_MOUNTS.read_bytes()
    row = next(r for r in (converted.node_dir / "manifest.tsv").read_text().splitlines() if "\tmounts\t" in r)
    assert "\tcat /proc/mounts\t" in row
    assert f"{path.name}!proc/mounts" in (converted.node_dir / "origins.tsv").read_text()
    summary, con = _store(tmp_path, path)
    mounts = con.execute("SELECT mountpoint FROM mount WHERE node = ?", [HOST]).fetchall()
    assert ("/fsx",) in mounts and summary.nodes == [HOST]


def test_links_out_of_the_report_or_in_a_loop_are_named(tmp_path: Path) -> None:
    """The same names, made hostile: proc/mounts a loop, etc/mtab out of the archive; both are unread
    inputs with why, the target outside is never read, and mount -l stands in."""
    files = _tree()
    links = [
        _link("etc/mtab", "../../../../etc/mtab"),
        _link("proc/mounts", "self/mounts"),
        _link("proc/self", "../proc/self"),
    ]
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files, links)
    converted = sos.convert(path, tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    reasons = {r.path: r.reason for r in converted.refusals}
    assert "a loop of links" in reasons[f"{TOP}/proc/mounts"], reasons
    assert "leads out of the archive" in reasons[f"{TOP}/etc/mtab"], reasons
    row = next(r for r in (converted.node_dir / "manifest.tsv").read_text().splitlines() if "\tmounts\t" in r)
    assert "\tmount -l\t" in row
    code, report, output = _analyze(tmp_path, path)
    assert code == 5, output
    unread = {u["path"]: u["reason"] for u in report["verdict"]["unread_inputs"]}
    assert "a loop of links" in unread[f"{path}!{TOP}/proc/mounts"], unread


def test_md5_sos_writes_beside_its_report_is_checked(tmp_path: Path) -> None:
    """sos 4.0 (Debian) writes <report>.md5: the hex digest and a newline (sos/report/__init__.py)."""
    path = _tarball(tmp_path / f"{TOP}.tar.xz", _tree())
    md5 = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    Path(f"{path}.md5").write_text(md5 + "\n")
    summary, con = _store(tmp_path, path)
    rows = con.execute("SELECT node, status, sha256_file FROM bundle_checksum").fetchall()
    assert rows == [(HOST, "ok", f"{path}.md5")]
    assert not [u for u in summary.unread_inputs if u.path.endswith(".md5")]  # no loose file
    Path(f"{path}.md5").write_text("0" * 32 + "\n")
    code, report, output = _analyze(tmp_path, path)
    checksum = [f for f in report["findings"] if f["rule"] == "bundle.checksum"]
    assert len(checksum) == 1 and checksum[0]["severity"] == "warning" and checksum[0]["node"] == HOST
    assert f"MD5 {md5} does not match {path}.md5" in checksum[0]["message"]


def test_manifest_start_time_is_the_collection_time_with_its_zone_unknown(tmp_path: Path) -> None:
    """sos 4.0-4.2 without the date plugin: no command start times, no date --utc; the manifest's
    start_time (local time) is the collection time, and a problem says the zone is unknown."""
    manifest = _manifest()
    del manifest["components"]["report"]["plugins"]["date"]
    for plugin in manifest["components"]["report"]["plugins"].values():
        for cmd in plugin["commands"]:
            del cmd["start_time"]
    files = _tree(manifest)
    converted = sos.convert(_tarball(tmp_path / f"{TOP}.tar.xz", files), tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    meta = (converted.node_dir / "meta.env").read_text()
    assert "collected_at=2026-01-05T08:00:00\n" in meta  # manifest start_time 2026-01-05 08:00:00.215731
    assert any("zone" in p and "unknown" in p for p in converted.problems), converted.problems


def test_journal_of_the_previous_boot_feeds_earlier_boot_events(tmp_path: Path) -> None:
    """logs plugin, journalctl --no-pager --catalog --boot -1 (sos 4.0-4.x): its kernel lines are events
    of boot -1.  The journal is the real -1 part of the tool_man bug report's kernel-log scan
    (tests/fixtures/nvidia-bug-report, journalctl -b -1), plus one derived Xid 79 line in its style."""
    scan = (
        FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--kernel-scan-whole.log"
    ).read_text()
    journal = scan.split("  journalctl -b -1:\n", 1)[1].split("\n  journalctl", 1)[0] + "\n"
    journal += "11月 15 15:53:10 sdu-dpai-turing-1 kernel: NVRM: Xid (PCI:0000:03:00): 79, pid=3074, GPU has fallen off the bus.\n"
    manifest = _manifest()
    command = "journalctl --no-pager --catalog --boot -1"
    manifest["components"]["report"]["plugins"]["logs"] = {
        "commands": [
            {"exec": command, "filepath": f"sos_commands/logs/{sos.mangle(command)}", "return_code": 0}
        ]
    }
    files = _tree(manifest)
    files[f"sos_commands/logs/{sos.mangle(command)}"] = journal.encode()
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files)
    summary, con = _store(tmp_path, path)
    boots = con.execute(
        "SELECT boot, pci FROM kernel_event WHERE node = ? AND xid = 79 ORDER BY boot", [HOST]
    ).fetchall()
    assert (-1, "0000:03:00.0") in boots and (0, "0000:04:00.0") in boots, boots
    code, report, output = _analyze(tmp_path, path)
    earlier = [f for f in report["findings"] if "previous boot" in f["message"] and f["node"] == HOST]
    assert earlier and "0000:03:00" in earlier[0]["message"], [f["message"] for f in report["findings"]]


def test_journal_without_an_earlier_boot_is_no_kernel_log(tmp_path: Path) -> None:
    manifest = _manifest()
    command = "journalctl --no-pager --boot -1"
    manifest["components"]["report"]["plugins"]["logs"] = {
        "commands": [
            {"exec": command, "filepath": f"sos_commands/logs/{sos.mangle(command)}", "return_code": 1}
        ]
    }
    files = _tree(manifest)
    files[f"sos_commands/logs/{sos.mangle(command)}"] = b"-- No entries --\n"
    converted = sos.convert(_tarball(tmp_path / f"{TOP}.tar.xz", files), tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    assert not (converted.node_dir / "cmd" / "dmesg-boot-1.txt").exists()


def test_nvlink_error_counters_merge_into_each_links_row(tmp_path: Path) -> None:
    """sos >= 4.3 runs nvidia-smi nvlink -s and -e: the counters join the status rows, no link twice."""
    files = _tree()
    assert files["sos_commands/nvidia/nvidia-smi_nvlink_-e"] == NVLINK_E.read_bytes()
    path = _tarball(tmp_path / f"{TOP}.tar.xz", files)
    summary, con = _store(tmp_path, path)
    rows = con.execute(
        "SELECT link, state, extra FROM nvlink WHERE node = ? AND gpu = 0 ORDER BY link", [HOST]
    ).fetchall()
    assert [r[0] for r in rows] == list(range(18)) and {r[1] for r in rows} == {"active"}
    extra = {link: json.loads(e) for link, _state, e in rows}
    assert extra[17] == {"Replay Errors": "0", "Recovery Errors": "0", "CRC Errors": "0"}
    assert extra[5] == {}  # the excerpt leaves links 2-16 out
    converted = sos.convert(path, tmp_path / "w" / "n", Limits())
    assert converted.node_dir is not None
    manifest = (converted.node_dir / "manifest.tsv").read_text()
    row = next(r for r in manifest.splitlines() if "\tnvidia-smi-nvlink\t" in r)
    assert "nvidia-smi nvlink -s; nvidia-smi nvlink -e" in row and "nvidia-smi_nvlink_-e appended" in row


def _driver_absent(tmp_path: Path, with_aws: bool) -> Path:
    """nvidia-smi installed, the driver not loaded: every nvidia-smi command answers the real one-line
    "couldn't communicate with the NVIDIA driver" (tests/fixtures/probe-answers, ci-runners-40), exit 9."""
    answer = (FIXTURES / "probe-answers" / "nvidia-smi--ci-runners-40-driver-unreachable.txt").read_bytes()
    manifest = _manifest()
    plugins = manifest["components"]["report"]["plugins"]
    if not with_aws:
        del plugins["aws"]
    for cmd in plugins["nvidia"]["commands"]:
        if cmd["exec"].startswith("nvidia-smi"):
            cmd["return_code"] = 9
    files = {n: d for n, d in _tree(manifest).items() if not n.startswith("proc/driver/")}
    for cmd in plugins["nvidia"]["commands"]:
        if cmd["exec"].startswith("nvidia-smi") and cmd["filepath"]:
            files[cmd["filepath"]] = answer
    folder = tmp_path / ("aws" if with_aws else "plain")
    folder.mkdir()
    return _tarball(folder / f"{TOP}.tar.xz", files)


def test_nvidia_plugin_showing_the_driver_absent_is_a_finding(tmp_path: Path) -> None:
    """Severity by instance type, as for a failed nvidia-smi: critical on a p5.48xlarge (the aws
    plugin's instance type), a warning where the type is unknown."""
    for with_aws, severity in ((True, "critical"), (False, "warning")):
        path = _driver_absent(tmp_path, with_aws)
        code, report, output = _analyze(path.parent, path)
        smi = [f for f in report["findings"] if f["rule"] == "gpu.smi.unreachable" and f["node"] == HOST]
        assert len(smi) == 1 and smi[0]["severity"] == severity, (
            with_aws,
            [f["rule"] for f in report["findings"]],
        )
        assert "cannot communicate with the NVIDIA driver" in smi[0]["message"]
        assert 9 in smi[0]["params"]["exit_codes"]
