"""The EKS log collector's tarball read as a node bundle (analyzer.intake.foreign.eks_log_collector).

No public sample tarball exists, so each test input is built here, laid out as
``eks-log-collector.sh`` (awslabs/amazon-eks-ami, ``log-collector-script/linux``) lays it out: its
folders under ``/tmp/eks-log-collector`` packed with ``tar --create --gzip --directory=... .`` (members
start with ``./``) as ``eks_<instance-id>_<date --utc +%Y-%m-%d_%H%M-%Z>_<version>.tar.gz``.  The
command outputs are real ones from tests/fixtures: ``kernel/dmesg.current`` is
dmesg/uce-runbook-xid48-63-94-dbe.txt (``dmesg`` lines, Xid 48/63/94), ``kernel/dmesg.human.current``
is dmesg/derived-gpud-readme-xid-redacted-pci.txt (``--ctime`` lines, Xid 13/109), and
``gpu/nvidia-bug-report.log.gz`` is the real nvidia-bug-report excerpt (tests/fixtures/
nvidia-bug-report), gzipped one member per section as the script's ``gzip -c >>`` writes it;
``storage/mounts.txt`` is written as ``get_mounts_info`` writes it (``mount > f; echo >> f; df
--human-readable >> f``) from mounts/jc-ubuntu-18.04-mount.out and df/jc-ubuntu-18.04-df-h.out.  The
instance id, zone, region and ``uname -a`` line are made up for the test.
"""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path
from typing import Any

from analyzer.intake.foreign import eks_log_collector as eks
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

FIXTURES = Path(__file__).parent / "fixtures"
BUG_REPORT = FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
DMESG = FIXTURES / "dmesg" / "uce-runbook-xid48-63-94-dbe.txt"
DMESG_HUMAN = FIXTURES / "dmesg" / "derived-gpud-readme-xid-redacted-pci.txt"
MOUNT = FIXTURES / "mounts" / "jc-ubuntu-18.04-mount.out"
DF_H = FIXTURES / "df" / "jc-ubuntu-18.04-df-h.out"
IID = "i-0123456789abcdef0"
HOST = "ip-10-0-1-23.ec2.internal"
NAME = f"eks_{IID}_2026-01-05_0800-UTC_0.7.9.tar.gz"
SEP = b"_" * 44 + b"\n"


def _bug_report_gz() -> bytes:
    raw = BUG_REPORT.read_bytes()
    return b"".join(gzip.compress(SEP + part) for part in raw.split(SEP)[1:])  # gzip -c >> LOG


def _layout(uname: bool = True) -> dict[str, bytes]:
    files = {
        "system/script-params.txt": b"ignore_introspection: false\nignore_metrics: false\n",
        "system/instance-id.txt": IID.encode() + b"\n",
        "system/region.txt": b"us-west-2\n",
        "system/availability-zone.txt": b"us-west-2b\n",
        "kernel/dmesg.current": DMESG.read_bytes(),
        "kernel/dmesg.human.current": DMESG_HUMAN.read_bytes(),
        "storage/mounts.txt": MOUNT.read_bytes() + b"\n" + DF_H.read_bytes(),  # mount; echo; df -h
        "var_log/messages": b"",
        "gpu/nvidia-bug-report.log.gz": _bug_report_gz(),
    }
    if uname:
        files["kernel/uname.txt"] = (
            f"Linux {HOST} 5.10.230-223.885.amzn2.x86_64 #1 SMP x86_64 GNU/Linux\n".encode()
        )
    return files


def _tarball(path: Path, files: dict[str, bytes], extra: list[tarfile.TarInfo] | None = None) -> Path:
    """``tar --create --gzip --directory=/tmp/eks-log-collector .``: ./, each folder, then its files."""
    with tarfile.open(path, "w:gz") as tar:
        folders = sorted({"."} | {"./" + name.split("/")[0] for name in files})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for info in extra or []:
            tar.addfile(info, io.BytesIO(b"x" * info.size))
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _analyze(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs)


def _store(tmp_path: Path, *inputs: Path) -> Any:
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    return load(con, list(inputs), work, Limits(), jobs=1), con, work


def test_layout_members_start_with_dot_slash(tmp_path: Path) -> None:
    path = _tarball(tmp_path / NAME, _layout())
    with tarfile.open(path) as tar:
        assert all(n == "." or n.startswith("./") for n in tar.getnames())
    assert eks.detect(path)


def test_node_with_instance_id_az_gpus_and_kernel_events(tmp_path: Path) -> None:
    path = _tarball(tmp_path / NAME, _layout())
    summary, con, _ = _store(tmp_path, path)
    assert summary.nodes == [HOST]
    gpus = con.execute("SELECT pci FROM gpu WHERE node = ?", [HOST]).fetchall()
    assert len(gpus) == 4, gpus  # from the bug report inside
    xids = con.execute(
        "SELECT xid FROM kernel_event WHERE node = ? AND event_type = 'xid' ORDER BY line", [HOST]
    ).fetchall()
    assert xids == [(13,), (109,)]  # dmesg.human.current is preferred
    parsed = con.execute("SELECT kind FROM file WHERE node = ? AND status = 'parsed' ORDER BY 1", [HOST])
    assert [k for (k,) in parsed.fetchall()] == ["df", "dmesg", "mounts", "nvidia-smi-q", "versions"]

    code, report, output = _analyze(tmp_path, path)
    assert code == 0, output
    text = json.dumps(report)
    assert IID in text and "us-west-2b" in text, "instance id and zone reach the report"
    not_examined = [r for r in report["verdict"]["not_examined"] if r["node"] == HOST]
    missing = {r["what"].split(" ")[0] for r in not_examined}
    assert {"fi-info", "efa-ports", "lfs-df", "iostat"} <= missing and not {"df", "mounts"} & missing
    reasons = {r.get("reason", "") for r in not_examined}
    assert eks.NOT_CARRIED_NOTE in reasons
    assert report["verdict"]["status"] != "pass"


def test_meta_from_the_collector_files(tmp_path: Path) -> None:
    path = _tarball(tmp_path / NAME, _layout(uname=False))
    files = _layout(uname=False)
    del files["kernel/dmesg.human.current"]
    plain = _tarball(tmp_path / "other.tar.gz", files)
    converted = eks.convert(path, tmp_path / "w1" / "node", Limits())
    assert converted.node_dir is not None
    meta = dict(line.split("=", 1) for line in (converted.node_dir / "meta.env").read_text().splitlines())
    # no uname.txt: the bug report's host
    assert meta["node"] == "sdu-dpai-turing-1" and meta["instance_id"] == IID
    assert meta["availability_zone"] == "us-west-2b" and meta["region"] == "us-west-2"
    assert meta["collected_at"] == "2026-01-05T08:00:00Z" and meta["source"] == eks.SOURCE
    # storage/mounts.txt split at the script's empty line, each part citing its own first line
    assert (converted.node_dir / "cmd" / "mounts.txt").read_bytes() == MOUNT.read_bytes()
    assert (converted.node_dir / "cmd" / "df.txt").read_bytes() == DF_H.read_bytes()
    origins = (converted.node_dir / "origins.tsv").read_text()
    first_df = len(MOUNT.read_bytes().splitlines()) + 2
    assert f"cmd/mounts.txt\t{NAME}!storage/mounts.txt\t1\n" in origins
    assert f"cmd/df.txt\t{NAME}!storage/mounts.txt\t{first_df}\n" in origins
    second = eks.convert(plain, tmp_path / "w2" / "node", Limits())
    assert second.node_dir is not None
    dmesg = (second.node_dir / "cmd" / "dmesg.txt").read_bytes()
    assert dmesg == DMESG.read_bytes()  # dmesg.current when there is no dmesg.human.current


def test_member_escaping_is_refused_and_never_written(tmp_path: Path) -> None:
    evil = tarfile.TarInfo("./../escaped.txt")
    evil.size = 5
    path = _tarball(tmp_path / NAME, _layout(), [evil])
    summary, con, work = _store(tmp_path, path)
    assert summary.nodes == [HOST]  # the rest is read
    assert not (tmp_path / "escaped.txt").exists() and not list(work.rglob("escaped.txt"))
    code, report, output = _analyze(tmp_path, path)
    assert code == 5, output
    unread = json.dumps(report["verdict"])
    assert "../escaped.txt" in unread and "unsafe name" in unread


def test_other_tarballs_are_not_taken_for_one(tmp_path: Path) -> None:
    other = _tarball(tmp_path / "logs.tar.gz", {"kernel/notes.txt": b"hello\n", "photos/a.txt": b"x"})
    bare = _tarball(tmp_path / "eks_i-1_2026-01-05_0800-UTC_0.7.9.tar.gz", {"README": b"not the collector\n"})
    bundle_like = _tarball(
        tmp_path / "n.tar.gz", {"system/instance-id.txt": b"i-1\n", "system/meta.env": b"x"}
    )
    for path in (other, bare, bundle_like):
        assert not eks.detect(path), path
    code, report, output = _analyze(tmp_path, other)
    assert code == 3, output


def test_mounts_txt_without_its_df_part_and_inodes(tmp_path: Path) -> None:
    """``timeout 75 df --human-readable`` printed nothing: the mount table alone; ``storage/inodes.txt``
    (``df --inodes``) is a df output of its own."""
    files = _layout()
    files["storage/mounts.txt"] = MOUNT.read_bytes() + b"\n"
    files["storage/inodes.txt"] = DF_H.read_bytes()
    converted = eks.convert(_tarball(tmp_path / NAME, files), tmp_path / "w" / "node", Limits())
    assert converted.node_dir is not None
    rows = (converted.node_dir / "manifest.tsv").read_text().splitlines()
    assert any(r.startswith("cmd/mounts.txt\tmounts\t0\t") and "\tmount\t" in r for r in rows)
    df = [r for r in rows if "\tdf\t" in r]
    assert len(df) == 1 and "\tdf --inodes\t" in df[0]
    assert eks.mounts_and_df(b"", "x", "y") == [] and eks.mounts_and_df(None, "x", "y") == []
