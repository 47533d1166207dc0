"""``hptriage redact`` on the inputs other tools write: each stays in its own layout, names and contents
redacted, and ``analyze`` and ``redact --verify`` read the redacted copy.

Inputs: the real nvidia-bug-report excerpt (tests/fixtures/nvidia-bug-report), gzipped one member per
section as the script's ``gzip -c >>`` writes it (and once with the last member cut, as a killed run
leaves it); an EKS log collector tarball and a sos report built as their scripts lay them out
(tests/test_foreign_eks_log_collector.py says how), with real command outputs from tests/fixtures.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import tarfile
from pathlib import Path
from typing import Any

from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.safe_read import Limits
from analyzer.redact.bundles import redact, verify
from analyzer.redact.redactor import Redactor
from tests.analyze_json import analyze_json

FIXTURES = Path(__file__).parent / "fixtures"
BUG_REPORT = FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
DMESG = FIXTURES / "dmesg" / "uce-runbook-xid48-63-94-dbe.txt"
HOST = "sdu-dpai-turing-1"
SEP = b"_" * 44 + b"\n"


def _bug_report_gz(path: Path, cut: bool = False) -> Path:
    raw = BUG_REPORT.read_bytes()
    members = [gzip.compress(SEP + part) for part in raw.split(SEP)[1:]]  # gzip -c >> LOG
    if cut:
        members.append(gzip.compress(SEP + b"*** /proc/cmdline\nBOOT_IMAGE=x\n")[:20])
    path.write_bytes(b"".join(members))
    return path


def _analyze(tmp_path: Path, *inputs: Path) -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs)


def _map(path: Path) -> dict[str, dict[str, str]]:
    maps: dict[str, dict[str, str]] = json.loads(path.read_text())["maps"]
    return maps


def test_bug_report_stays_a_bug_report_and_its_host_is_masked(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    report_gz = _bug_report_gz(src / f"nvidia-bug-report-{HOST}.log.gz", cut=True)
    out, map_path = tmp_path / "out", tmp_path / "site.map.json"
    result = redact([report_gz], out, map_path)
    token = _map(map_path)["hostname"][HOST]
    (written,) = result.written
    assert HOST not in written.name and token in written.name, "the host in the file name is masked"
    assert any("cut" in e for e in result.errors), "the cut last member is said, not silently dropped"
    text, problems = nbr.decode(written, Limits())
    assert problems == [] and HOST not in text and f"uname: Linux {token} " in text
    assert "440.31" in text, "the driver version is no identifier: kept"
    assert verify(out, map_path) == []

    code, report, output = _analyze(tmp_path, written)
    assert code in (0, 1), output
    assert [n["node"] for n in report["nodes"]] == [token], "analyze reads the redacted copy as a bug report"
    assert HOST not in json.dumps(report)


def test_serials_in_a_bug_report_masked_on_request(tmp_path: Path) -> None:
    text = BUG_REPORT.read_text()
    serials = [
        ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.strip().startswith("Serial Number")
    ]
    real = [s for s in serials if s.isdigit() and len(s) >= 6]
    if not real:  # this consumer card prints N/A; plant one as a data-center GPU prints it
        text = text.replace(
            "Serial Number                   : N/A", "Serial Number                   : 1320521007411", 1
        )
        real = ["1320521007411"]
    src = tmp_path / "nvidia-bug-report.log"
    src.write_text(text)
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    redact([src], out, map_path, mask_serials=True)
    redacted = (out / "nvidia-bug-report.log").read_text()
    assert all(s not in redacted for s in real)
    assert set(real) <= set(_map(map_path)["gpu_serial"])


def _eks_tarball(path: Path, iid: str, host: str) -> Path:
    files = {
        "system/script-params.txt": b"ignore_introspection: false\n",
        "system/instance-id.txt": iid.encode() + b"\n",
        "system/availability-zone.txt": b"us-west-2b\n",
        "kernel/uname.txt": f"Linux {host} 5.10.230-223.885.amzn2.x86_64 #1 SMP x86_64 GNU/Linux\n".encode(),
        "kernel/dmesg.current": DMESG.read_bytes(),
    }
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_eks_tarball_stays_a_collector_tarball(tmp_path: Path) -> None:
    iid, host = "i-0123456789abcdef0", "gpu-train-a17"
    src = _eks_tarball(tmp_path / f"eks_{iid}_2026-01-05_0800-UTC_0.7.9.tar.gz", iid, host)
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    result = redact([src], out, map_path)
    (written,) = result.written
    assert iid not in written.name
    assert verify(out, map_path) == []
    code, report, output = _analyze(tmp_path, written)
    assert code in (0, 1), output
    (node,) = report["nodes"]
    assert node["node"] == _map(map_path)["hostname"][host]
    text = json.dumps(report)
    assert iid not in text and host not in text
    assert any(f["rule"].startswith("gpu.xid") for f in report["findings"]), "the Xids survive redaction"


def _sos_tar_xz(path: Path, host: str) -> Path:
    """A sos report's top directory with the host's name in it, the files that name the host, and
    a kernel log; packed as sos packs it (xz)."""
    top = path.name.removesuffix(".tar.xz")
    files = {
        "hostname": f"{host}\n".encode(),
        "uname": f"Linux {host} 5.15.0-1048-aws #53-Ubuntu SMP x86_64 GNU/Linux\n".encode(),
        "sos_commands/kernel/dmesg": DMESG.read_bytes(),
        "sos_reports/manifest.json": json.dumps({"hostname": host, "version": "4.5.6"}).encode(),
    }
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(lzma.compress(buf.getvalue()))
    return path


def test_sos_report_stays_xz_and_the_host_leaves_names_and_contents(tmp_path: Path) -> None:
    host = "trn-node-042"
    src = _sos_tar_xz(tmp_path / f"sosreport-{host}-01234567-2026-01-05-abcdefg.tar.xz", host)
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    result = redact([src], out, map_path)
    (written,) = result.written
    assert written.read_bytes()[:6] == b"\xfd7zXZ\x00", "a .tar.xz stays xz"
    assert host not in written.name
    with tarfile.open(written) as tar:
        names = tar.getnames()
        assert all(host not in n for n in names), names
        member = tar.extractfile(next(n for n in names if n.endswith("/hostname")))
        assert member is not None and member.read().decode().strip() == _map(map_path)["hostname"][host]
    assert verify(out, map_path) == []


def test_verify_finds_a_host_left_inside_a_nested_gzip(tmp_path: Path) -> None:
    """--verify opens what redaction opens: a bug report inside a tarball, a .gz inside it."""
    out = tmp_path / "out"
    out.mkdir()
    map_path = tmp_path / "m.json"
    map_path.write_text(json.dumps({"version": 1, "maps": {"hostname": {HOST: "host-1"}}}))
    inner = gzip.compress(f"uname: Linux {HOST} 5.4\n".encode())
    with tarfile.open(out / "eks_x.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("./gpu/nvidia-bug-report.log.gz")
        info.size = len(inner)
        tar.addfile(info, io.BytesIO(inner))
    leaks = verify(out, map_path)
    assert leaks and leaks[0][0] == "hostname" and "nvidia-bug-report.log.gz" in leaks[0][1]


def test_hyperpod_issue_report_folder_and_zip_are_redacted_in_their_layout(tmp_path: Path) -> None:
    """The HyperPod issue report (built as its script lays it out: tests/test_foreign_hyperpod_issue_report.py):
    the cluster name in the folder's name and summary.json, instance ids, host names in every nested
    tarball; the zip stays a zip; analyze reads both redacted copies as the same report."""
    import tests.test_foreign_hyperpod_issue_report as case

    folder = case._report(tmp_path / "src")
    summary = folder / "summary.json"  # a bucket named as sites name them ('bucket' is in every token)
    summary.write_text(summary.read_text().replace("s3://bucket/", "s3://acme-ml-hyperpod-reports/"))
    zipped = case._zip_like_the_script(folder)
    out, map_path = tmp_path / "out", tmp_path / "m.json"
    result = redact([folder, zipped], out, map_path)
    assert not result.refused and not result.errors, (result.refused, result.errors)
    maps = _map(map_path)
    sick_host, sick_iid = case.SICK[2], case.SICK[1]
    assert case.CLUSTER in maps["cluster"]
    host = Redactor.load(map_path).apply(sick_host)  # an EC2 name follows its address's token
    assert host != sick_host
    assert verify(out, map_path) == [], "no value of the map left in names or contents, zip opened"
    written_folder, written_zip = result.written
    assert case.CLUSTER not in written_folder.name and written_zip.read_bytes()[:4] == b"PK\x03\x04"
    assert sick_iid not in (written_folder / "summary.json").read_text()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    code, first, output = _analyze(tmp_path / "a", written_folder)
    assert code in (0, 1), output
    code, second, output = _analyze(tmp_path / "b", written_zip)
    assert code in (0, 1), output
    assert {f["node"] for f in first["findings"] if f["rule"] == "gpu.xid.fallen_off_bus"} == {host}
    assert sorted(n["node"] for n in first["nodes"]) == sorted(n["node"] for n in second["nodes"])
    assert case.CLUSTER not in json.dumps(first) and sick_iid not in json.dumps(first)
