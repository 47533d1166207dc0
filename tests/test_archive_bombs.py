"""Compression bombs in every archive shape a reader of ours opens end in seconds, with the member
they stopped in named as an unread input, whatever their members declare.

Each bomb is built here (tests/archive_bombs.py: a small file decoding to a GiB of zeros; none is kept
in the repository) inside a report laid out as its producer writes it, so the reader that would open
it in a user's hands opens it here: a sos report (.tar.xz and .tar.gz), a HyperPod issue report zip
holding an instance tarball, an EKS log collector tarball and the nvidia-bug-report it nests, a
bug report of appended gzip members.  The other members are real outputs from tests/fixtures (a
kernel log with an Xid 79, dmesg/gpud-870-dmesg-decode-iso-comma-xid79.txt; the nvidia-bug-report
excerpt tests/fixtures/nvidia-bug-report/tool-man-440.31-rtx2080ti-x4--excerpt.log); names and ids are
made up.

The time bound (:data:`SECONDS`) is generous for a loaded machine, yet far below what the readers took
before they decoded in bounded steps and stopped the stream at the caps: ``tarfile``'s own decoding,
skipping a refused 1 GiB member of a 250 kB sos report, kept ``analyze`` busy for more than five
minutes (mostly system time: every 10 kB read copied tens of MB of decoded data).
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

from analyzer.intake import foreign
from analyzer.intake.foreign import eks_log_collector
from analyzer.intake.safe_read import Limits, Refusal, iter_tar, iter_zip
from tests.analyze_json import analyze_json
from tests.archive_bombs import GIB, MIB, gzip_members, gzip_of, tar_around, xz_of, zip_of

SECONDS = 20.0
FIXTURES = Path(__file__).parent / "fixtures"
DMESG = (FIXTURES / "dmesg" / "gpud-870-dmesg-decode-iso-comma-xid79.txt").read_bytes()
BUG_REPORT = (FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log").read_bytes()
HOST = "bomb-node-01"
TOP = f"sosreport-{HOST}-2026-01-05-abcdefg"


def _sos_parts(bomb: str, size: int = GIB) -> tuple[bytes, bytes]:
    """A sos 4.0 report's members (sorted, as Debian's sos writes them) around a member of zeros."""
    manifest = {
        "version": "4.0",
        "start_time": "2026-01-05 08:00:00.000001",
        "components": {
            "report": {
                "plugins": {
                    "kernel": {"commands": [{"exec": "dmesg", "filepath": "sos_commands/kernel/dmesg", "return_code": 0}]},
                    "host": {"commands": [{"exec": "hostname", "filepath": "sos_commands/host/hostname", "return_code": 0}]},
                }
            }
        },
    }  # fmt: skip
    before = [
        (f"{TOP}/sos_commands/host/hostname", f"{HOST}\n".encode()),
        (f"{TOP}/sos_commands/kernel/dmesg", DMESG),
    ]
    after = [
        (
            f"{TOP}/sos_logs/sos.log",
            b"2026-01-05 08:00:00,216 INFO: [sos.report:setup] executing 'sos report'\n",
        ),
        (f"{TOP}/sos_reports/manifest.json", json.dumps(manifest).encode()),
        (f"{TOP}/version.txt", b"sosreport: 4.0\n"),
    ]
    return tar_around(before, f"{TOP}/{bomb}", size, after)


def _timed_analyze(tmp_path: Path, path: Path) -> tuple[int, dict[str, Any], str, float]:
    start = time.monotonic()
    code, report, output = analyze_json(tmp_path, path)
    return code, report, output, time.monotonic() - start


def _unread(report: dict[str, Any]) -> dict[str, str]:
    return {u["path"]: u["reason"] for u in report["verdict"]["unread_inputs"]}


def _xid79_nodes(report: dict[str, Any]) -> set[str]:
    return {
        f["node"]
        for f in report["findings"]
        if f["rule"].startswith("gpu.xid") and f["params"].get("xid") == 79
    }


def test_sos_xz_report_whose_member_decodes_to_a_gib(tmp_path: Path) -> None:
    """The issue's report: one member of 1 GiB of zeros in a .tar.xz of ~250 kB (before: > 5 min)."""
    head, tail = _sos_parts("sos_commands/logs/journalctl_--no-pager")
    path = tmp_path / f"{TOP}.tar.xz"
    path.write_bytes(xz_of(head, GIB // MIB, tail))
    assert path.stat().st_size < 300_000
    code, report, output, took = _timed_analyze(tmp_path, path)
    assert took < SECONDS, f"{took:.1f} s"
    assert code == 5, output
    unread = _unread(report)
    member = f"{path}!{TOP}/sos_commands/logs/journalctl_--no-pager"
    assert member in unread and "per-file cap" in unread[member], unread
    assert _xid79_nodes(report) == {HOST}, "what came before the bomb is read"
    problems = " ".join(p["error"] for p in report["parse_problems"])
    assert "implausible" in problems and "journalctl_--no-pager" in problems, problems


def test_sos_gz_report_whose_member_decodes_to_a_gib(tmp_path: Path) -> None:
    head, tail = _sos_parts("sos_commands/logs/journalctl_--no-pager")
    path = tmp_path / f"{TOP}.tar.gz"
    path.write_bytes(gzip_of(head, GIB // MIB, tail))
    code, report, output, took = _timed_analyze(tmp_path, path)
    assert took < SECONDS, f"{took:.1f} s"
    assert code == 5, output
    assert f"{path}!{TOP}/sos_commands/logs/journalctl_--no-pager" in _unread(report)
    assert _xid79_nodes(report) == {HOST}


def test_a_member_of_no_known_type_declaring_a_gib(tmp_path: Path) -> None:
    """A header of a type tar does not know ('Z') is skipped by its declared size: decoding it stops at
    the ratio like any other, and the member is named."""
    head, tail = _sos_parts("sos_commands/kernel/odd")
    head = head[:-512] + _retyped(head[-512:], b"Z")
    path = tmp_path / f"{TOP}.tar.xz"
    path.write_bytes(xz_of(head, GIB // MIB, tail))
    refusals: list[Refusal] = []
    errors: list[str] = []
    start = time.monotonic()
    names = [name for name, _ in iter_tar(path, Limits(), refusals, errors)]
    assert time.monotonic() - start < SECONDS
    assert f"{TOP}/sos_commands/kernel/dmesg" in names and f"{TOP}/version.txt" not in names
    reasons = {r.path: r.reason for r in refusals}
    assert "not a regular file" in reasons[f"{TOP}/sos_commands/kernel/odd"], reasons
    assert any("implausible" in e and "odd" in e for e in errors), errors


def _retyped(header: bytes, kind: bytes) -> bytes:
    """A tar header block with another type flag (and its checksum made again)."""
    block = bytearray(header)
    block[156:157] = kind
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def test_zip_of_many_members_each_a_bomb_stops_at_the_first(tmp_path: Path) -> None:
    """Each member declares 200 MiB (under the per-file cap) and inflates 1000:1: the first is refused
    at the ratio and reading stops there (before, each was inflated to 64 MiB in turn: 6 GiB)."""
    path = tmp_path / "bombs.zip"
    path.write_bytes(zip_of([(f"top/member-{i:03d}.log", b"", 200) for i in range(100)]))
    refusals: list[Refusal] = []
    errors: list[str] = []
    start = time.monotonic()
    assert list(iter_zip(path, Limits(), refusals, errors)) == []
    assert time.monotonic() - start < SECONDS
    assert [r.path for r in refusals] == ["top/member-000.log"] and "expands more than" in refusals[0].reason
    assert errors and "reading stopped" in errors[0] and "member-000" in errors[0]


def _instance_tarball(bomb: bool) -> bytes:
    """A HyperPod instance tarball (``tar -czf ... -C /tmp hyperpod_report_<group>_<iid>_<ts>``)."""
    top = "hyperpod_report_worker_i-0b0b0b0b0b0b0b0b0_20260126_143025"
    members = [
        (f"{top}/hostname.txt", f"{HOST}\n".encode()),
        (f"{top}/instance_id.txt", b"i-0b0b0b0b0b0b0b0b0\n"),
        (f"{top}/dmesg_T.txt", DMESG),
    ]
    head, tail = tar_around(
        members, f"{top}/syslog", GIB if bomb else 512, [(f"{top}/timestamp.txt", b"x\n")]
    )
    return gzip_of(head, GIB // MIB if bomb else 0, (b"" if bomb else bytes(512)) + tail)


def test_hyperpod_zip_holding_an_instance_tarball_bomb(tmp_path: Path) -> None:
    """Nested: the zip's instance tarball decodes to a GiB; reading it stops at the ratio."""
    root = "c1_report-1"
    summary = {
        "cluster_name": "c1",
        "report_id": "report-1",
        "results": [{"InstanceId": "i-0b0b0b0b0b0b0b0b0", "NodeGroup": "worker", "Success": True}],
    }
    buf = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{root}/summary.json", json.dumps(summary))
        archive.writestr(f"{root}/instances/worker_i-0b0b0b0b0b0b0b0b0.tar.gz", _instance_tarball(True))
    path = tmp_path / f"{root}.zip"
    path.write_bytes(buf.getvalue())
    code, report, output, took = _timed_analyze(tmp_path, path)
    assert took < SECONDS, f"{took:.1f} s"
    assert code == 5, output
    unread = " ".join(f"{k}: {v}" for k, v in _unread(report).items())
    assert "syslog" in unread and ("per-file cap" in unread or "implausible" in unread), unread


def _eks_tarball(path: Path, bug_report: bytes, var_log_bomb: bool) -> Path:
    """The EKS log collector's ``tar --create --gzip --directory=/tmp/eks-log-collector .``."""
    members = [
        ("./system/instance-id.txt", b"i-0c0c0c0c0c0c0c0c0\n"),
        ("./kernel/dmesg.current", DMESG),
        ("./gpu/nvidia-bug-report.log.gz", bug_report),
    ]
    if var_log_bomb:
        head, tail = tar_around(members, "./var_log/messages", GIB, [("./system/region.txt", b"us-east-1\n")])
        path.write_bytes(gzip_of(head, GIB // MIB, tail))
        return path
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_eks_tarball_whose_member_decodes_to_a_gib(tmp_path: Path) -> None:
    """Read by the EKS collector's reader (iter_tar): the stream stops in the bomb, which is named, and
    the kernel log before it is read.  (Telling the tarball's kind first, that reader's own look at
    the headers must decode in bounded steps too: safe_read.open_tar.)"""
    path = _eks_tarball(tmp_path / "eks_i-0c0c0c0c0c0c0c0c0_2026-01-05_0800-UTC_0.7.8.tar.gz", b"", True)
    start = time.monotonic()
    converted = foreign.convert(eks_log_collector.SOURCE, path, tmp_path / "work", Limits())
    assert time.monotonic() - start < SECONDS
    assert converted.nodes, converted.reason
    refused = {r.path: r.reason for r in converted.refusals}
    assert "var_log/messages" in refused and "per-file cap" in refused["var_log/messages"], refused
    assert any("implausible" in p and "var_log/messages" in p for p in converted.problems), converted.problems


def test_telling_an_eks_tarball_with_a_bomb_by_its_layout_is_bounded(tmp_path: Path) -> None:
    """The EKS reader's look at the headers (detect) walks the stream past the bomb's 1 GiB member in
    bounded steps: it ends in seconds and still knows the layout by the members seen before the cut."""
    path = _eks_tarball(tmp_path / "eks_i-0c0c0c0c0c0c0c0c0_2026-01-05_0800-UTC_0.7.8.tar.gz", b"", True)
    start = time.monotonic()
    assert eks_log_collector.detect(path)
    assert time.monotonic() - start < SECONDS


def test_bug_report_of_appended_gzip_members_nested_in_an_eks_tarball(tmp_path: Path) -> None:
    """``gzip -c >>`` writes one member per section: a real report's header member, then a thousand
    members of 1 MiB of zeros; decoding stops at the cap, the report's own sections are kept."""
    bomb = gzip_members(BUG_REPORT, 512)
    alone = tmp_path / "given" / "nvidia-bug-report.log.gz"
    alone.parent.mkdir()
    alone.write_bytes(bomb)
    code, report, output, took = _timed_analyze(tmp_path / "given", alone)
    assert took < SECONDS, f"{took:.1f} s"
    problems = " ".join(p["error"] for p in report.get("parse_problems", []))
    assert "the rest was not read" in problems, (code, output, problems)
    # the member decoding stopped in is named as an unread member of the report, as other readers do
    (member,) = [p for p in _unread(report) if "nvidia-bug-report.log.gz!gzip member " in p]
    assert "decoding stopped there" in _unread(report)[member] and code == 5
    assert int(member.rsplit(" ", 1)[1]) > 1  # the report's own first member was read
    nested = tmp_path / "nested"
    nested.mkdir()
    path = _eks_tarball(nested / "eks_i-0c0c0c0c0c0c0c0c0_2026-01-05_0800-UTC_0.7.8.tar.gz", bomb, False)
    code, report, output, took = _timed_analyze(nested, path)
    assert took < SECONDS, f"{took:.1f} s"
    problems = " ".join(p["error"] for p in report.get("parse_problems", []))
    assert "the rest was not read" in problems, (code, output, problems)
    assert [p for p in _unread(report) if f"{path.name}!gpu/nvidia-bug-report.log.gz!gzip member " in p], (
        _unread(report)
    )
