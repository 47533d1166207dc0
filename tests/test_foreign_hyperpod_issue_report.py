"""The HyperPod issue report read as one node bundle per instance
(analyzer.intake.foreign.hyperpod_issue_report), and the safe zip reader it uses (safe_read.iter_zip).

No public sample of a whole report exists, so every report here is BUILT, laid out as the public
scripts lay it out:

- current layout, awslabs/agent-plugins ``plugins/sagemaker-ai/skills/hyperpod-issue-report/scripts/
  hyperpod_issue_report.py``: the folder ``<cluster>_<report-id>/`` that ``download_results_from_s3``
  writes, with ``summary.json`` shaped as ``save_summary`` writes it (``cluster_name``, ``cluster_id``,
  ``report_id``, ``timestamp``, ``total_nodes``, ``successful``, ``failed``, ``results`` with
  ``InstanceId``, ``NodeGroup``, ``Success``, ``Output`` or ``Error``, ``ElapsedTime``) and
  ``instances/<group>_<instance-id>.tar.gz``, each made as the generated bash script makes it (``tar
  -czf ... -C /tmp hyperpod_report_<group>_<instance-id>_<date -u +%Y%m%d_%H%M%S>``) with the Slurm
  files it writes (``instance_id.txt``, ``hostname.txt``, ``nvidia_smi.txt``, ``disk_usage.txt``,
  ``dmesg_T.txt``, ``kern.log``, ``nvidia-bug-report.log.gz.gz``, ``sinfo.txt``...); its zip as
  ``create_zip_archive`` writes it (members under ``<cluster>_<report-id>/``, no folder entries);
- older layout, shimomut/sagemaker-solutions ``_archived/hyperpod_issue_report_v1/
  hyperpod_issue_report.py``: ``shutil.make_archive(..., "zip", top, "hyperpod_issue_report_<ts>")``
  of ``control/<host>/`` and ``worker/<host>/`` with ``df.log``, ``dmesg-T.log``, ``nvidia-smi.log``,
  ``nvidia-bug-report.log.gz``, ``kern.log``, ``syslog``, ``sinfo.log``...

The command outputs are real ones from tests/fixtures: ``nvidia-smi`` is
nvidia-smi/della-h100-545-narrow-busid.txt, ``df`` is df/jc-ubuntu-18.04-df.out (plain ``df``) and
df/jc-ubuntu-18.04-df-h.out (``df -h``), the kernel log with Xid 79 is
dmesg/gpud-870-dmesg-decode-iso-comma-xid79.txt, the other nodes' kernel log is
dmesg/amzn-308-dmesg-efa-driver-v2.6.0g.txt, the EKS node's ``dmesg --ctime`` is
dmesg/derived-gpud-readme-xid-redacted-pci.txt, a ``--command "nvidia-smi -q"`` output is
nvidia-smi-q/della-h100-545-single-no-blank-after-banner.txt, the EKS collector's ``mount`` is
mounts/jc-ubuntu-18.04-mount.out, and the bug report is the real excerpt in
tests/fixtures/nvidia-bug-report, gzipped one member per section as its script's ``gzip -c >>``
writes it.  Cluster names, instance ids, host names, times and the summary's error text are made up.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from analyzer.intake.foreign import detect as foreign_detect
from analyzer.intake.foreign import hyperpod_issue_report as hir
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits, Refusal, iter_zip
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json

FIXTURES = Path(__file__).parent / "fixtures"
BUG_REPORT = FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--excerpt.log"
SMI = FIXTURES / "nvidia-smi" / "della-h100-545-narrow-busid.txt"
DF = FIXTURES / "df" / "jc-ubuntu-18.04-df.out"
DF_H = FIXTURES / "df" / "jc-ubuntu-18.04-df-h.out"
MOUNT = FIXTURES / "mounts" / "jc-ubuntu-18.04-mount.out"
XID79 = FIXTURES / "dmesg" / "gpud-870-dmesg-decode-iso-comma-xid79.txt"
CLEAN = FIXTURES / "dmesg" / "amzn-308-dmesg-efa-driver-v2.6.0g.txt"
DMESG_HUMAN = FIXTURES / "dmesg" / "derived-gpud-readme-xid-redacted-pci.txt"
SMI_Q = FIXTURES / "nvidia-smi-q" / "della-h100-545-single-no-blank-after-banner.txt"
SEP = b"_" * 44 + b"\n"

CLUSTER = "ml-cluster"
CLUSTER_ID = "abcd1234efgh"
REPORT_ID = "20260126_143022"
SICK = ("worker-group-1", "i-0aaaaaaaaaaaaaaa1", "ip-10-1-104-161")
WELL = ("worker-group-1", "i-0bbbbbbbbbbbbbbb2", "ip-10-1-104-162")
FAILED = ("worker-group-2", "i-0ccccccccccccccc3", "")
ERROR = "Failed to detect shell prompt after 60 seconds."


def _bug_report_gz() -> bytes:
    raw = BUG_REPORT.read_bytes()
    return b"".join(gzip.compress(SEP + part) for part in raw.split(SEP)[1:])  # gzip -c >> LOG


def _instance_files(group: str, iid: str, host: str, dmesg: Path) -> dict[str, bytes]:
    """The files the generated script writes on a Slurm node (OUTPUT_DIR)."""
    return {
        "instance_group.txt": f"{group}\n".encode(),
        "instance_id.txt": f"{iid}\n".encode(),
        "cluster_type.txt": b"slurm\n",
        "hostname.txt": f"{host}\n".encode(),
        "timestamp.txt": b"Mon Jan 26 14:30:25 UTC 2026\n",
        "systemd_services.txt": b"  UNIT LOAD ACTIVE SUB DESCRIPTION\n",
        "disk_usage.txt": DF.read_bytes(),
        "nvidia_smi.txt": SMI.read_bytes(),
        "sinfo.txt": b"PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ndev*         up   infinite      2   idle ip-10-1-104-[161-162]\n",
        "sinfo_R.txt": b"REASON               USER      TIMESTAMP           NODELIST\n",
        "slurmd_status.txt": b"* slurmd.service - Slurm node daemon\n",
        # nvidia-bug-report.sh --output-file .../nvidia-bug-report.log.gz appends .gz
        "nvidia-bug-report.log.gz.gz": _bug_report_gz(),
        "syslog": dmesg.read_bytes(),
        "kern.log": dmesg.read_bytes(),  # the same kernel messages as dmesg -T
        "dmesg_T.txt": dmesg.read_bytes(),
        "var_log_slurm/slurmd.log": b"[2026-01-26T14:00:00.000] slurmd started\n",
    }


def _instance_tarball(path: Path, group: str, iid: str, files: dict[str, bytes]) -> Path:
    """``tar -czf /tmp/<group>_<iid>.tar.gz -C /tmp hyperpod_report_<group>_<iid>_<ts>``."""
    top = f"hyperpod_report_{group}_{iid}_20260126_143025"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo(top)
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        for folder in sorted({n.split("/")[0] for n in files if "/" in n}):
            info = tarfile.TarInfo(f"{top}/{folder}")
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _summary(results: list[dict[str, Any]]) -> bytes:
    """``save_summary``: json.dumps(summary, indent=2)."""
    summary = {
        "cluster_name": CLUSTER,
        "cluster_id": CLUSTER_ID,
        "report_id": REPORT_ID,
        "timestamp": "2026-01-26T14:31:02.123456+00:00",
        "total_nodes": len(results),
        "successful": sum(1 for r in results if r["Success"]),
        "failed": sum(1 for r in results if not r["Success"]),
        "results": results,
    }
    return json.dumps(summary, indent=2).encode()


def _report(tmp_path: Path, missing_tarball: bool = False) -> Path:
    """The downloaded folder ``<cluster>_<report-id>/`` of a 3-node Slurm report: one node with Xid 79,
    one healthy, one whose collection failed."""
    root = tmp_path / f"{CLUSTER}_{REPORT_ID}"
    (root / "instances").mkdir(parents=True)
    (root / "collector_script.sh").write_text("#!/bin/bash\n# HyperPod Issue Report Collector Script\n")
    results = []
    for (group, iid, host), dmesg in ((SICK, XID79), (WELL, CLEAN)):
        if not (missing_tarball and iid == WELL[1]):
            _instance_tarball(
                root / "instances" / f"{group}_{iid}.tar.gz",
                group,
                iid,
                _instance_files(group, iid, host, dmesg),
            )
        ok = f"Successfully uploaded report to s3://bucket/hyperpod-issue-reports/{CLUSTER}/{REPORT_ID}/instances/{group}_{iid}.tar.gz"
        results.append(
            {"InstanceId": iid, "NodeGroup": group, "Success": True, "Output": ok, "ElapsedTime": 41.2}
        )
    results.append(
        {
            "InstanceId": FAILED[1],
            "NodeGroup": FAILED[0],
            "Success": False,
            "Error": ERROR + "\nThis may indicate:\n  - SSM session initialization issues\n",
            "ElapsedTime": 60.4,
        }
    )
    (root / "summary.json").write_bytes(_summary(results))
    return root


def _zip_like_the_script(directory: Path) -> Path:
    """``create_zip_archive``: every file, arcname relative to the folder's parent, deflated."""
    zip_path = directory.with_name(directory.name + ".zip")
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zipf:
        for root, _dirs, files in os.walk(directory):
            for file in files:
                file_path = os.path.join(root, file)
                zipf.write(file_path, os.path.relpath(file_path, directory.parent))
    return zip_path


def _old_report(tmp_path: Path) -> Path:
    """The older script's zip: control/<head>/ and worker/<host>/ under hyperpod_issue_report_<ts>/."""
    top = tmp_path / "old"
    base = "hyperpod_issue_report_20240823_023724"
    control = top / base / "control" / "ip-10-2-109-13"
    control.mkdir(parents=True)
    (control / "df.log").write_bytes(DF_H.read_bytes())
    (control / "dmesg-T.log").write_bytes(CLEAN.read_bytes())
    (control / "kern.log").write_bytes(CLEAN.read_bytes())
    (control / "sinfo.log").write_text("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n")
    (control / "sinfo-R.log").write_text("REASON               USER      TIMESTAMP           NODELIST\n")
    (control / "slurmctld_status.log").write_text("* slurmctld.service - Slurm controller daemon\n")
    (control / "var_log_aws_clusters").mkdir()
    (control / "var_log_aws_clusters" / "sagemaker-cluster-agent.log").write_text("agent started\n")
    for host, dmesg in (("ip-10-2-123-231", XID79), ("ip-10-2-99-136", CLEAN)):
        worker = top / base / "worker" / host
        (worker / "var_log_slurm").mkdir(parents=True)
        (worker / "df.log").write_bytes(DF_H.read_bytes())
        (worker / "dmesg-T.log").write_bytes(dmesg.read_bytes())
        (worker / "kern.log").write_bytes(dmesg.read_bytes())
        (worker / "syslog").write_bytes(dmesg.read_bytes())
        (worker / "nvidia-smi.log").write_bytes(SMI.read_bytes())
        (worker / "nvidia-bug-report.log.gz").write_bytes(_bug_report_gz())
        (worker / "slurmd_status.log").write_text("* slurmd.service - Slurm node daemon\n")
        (worker / "var_log_slurm" / "slurmd.log").write_text("slurmd started\n")
    return Path(shutil.make_archive(str(top / base), "zip", top, base))


def _analyze(tmp_path: Path, *inputs: Path, tag: str = "a") -> tuple[int, dict[str, Any], str]:
    return analyze_json(tmp_path, *inputs, tag=tag)


def _xid79_nodes(report: dict[str, Any]) -> set[str]:
    return {
        f["node"]
        for f in report["findings"]
        if f["rule"] == "gpu.xid.fallen_off_bus" or (f["rule"] == "gpu.xid" and f["params"].get("xid") == 79)
    }


def _not_examined(report: dict[str, Any], node: str) -> list[dict[str, Any]]:
    return [r for r in report["verdict"]["not_examined"] if r["node"] == node]


def _shape(report: dict[str, Any]) -> tuple[Any, ...]:
    """What must not depend on folder or zip: findings by rule and node, what was not examined."""
    return (
        sorted((f["rule"], f["node"]) for f in report["findings"]),
        sorted((r["node"], r["what"], r.get("reason", "")) for r in report["verdict"]["not_examined"]),
        report["verdict"]["status"],
    )


# -- the current layout --------------------------------------------------------------------------------
def test_three_node_report_finding_on_the_host_and_failed_instance_not_examined(tmp_path: Path) -> None:
    root = _report(tmp_path)
    assert hir.detect(root) and foreign_detect(root) == hir.SOURCE
    code, report, output = _analyze(tmp_path, root)
    assert code == 0, output
    assert _xid79_nodes(report) == {SICK[2]}, "the Xid 79 is on the node named by its hostname.txt"
    failed = _not_examined(report, FAILED[1])
    assert failed, "the failed instance is a node, named by its instance id"
    kinds = {r["what"].split(" ")[0]: r["reason"] for r in failed if "reason" in r}
    assert {"dmesg", "nvidia-smi", "nvidia-smi-q", "df"} <= kinds.keys(), failed
    assert all(f"collection failed: {ERROR}" in reason for reason in kinds.values()), failed
    assert report["verdict"]["status"] != "pass"
    text = json.dumps(report)
    assert CLUSTER in text and SICK[1] in text


def test_kernel_log_read_once_and_facts(tmp_path: Path) -> None:
    root = _report(tmp_path)
    con = connect(None)
    work = tmp_path / "work"
    work.mkdir()
    summary = load(con, [root], work, Limits(), jobs=1)
    assert sorted(summary.nodes) == sorted([SICK[2], WELL[2], FAILED[1]])
    xids = con.execute(
        "SELECT xid FROM kernel_event WHERE node = ? AND event_type = 'xid'", [SICK[2]]
    ).fetchall()
    assert xids == [(79,)], "dmesg_T.txt only: kern.log and the bug report's dmesg are not read again"
    parsed = con.execute("SELECT kind FROM file WHERE node = ? AND status = 'parsed' ORDER BY 1", [SICK[2]])
    # sinfo.txt and sinfo_R.txt: Slurm's view of the nodes (sinfo -R holds its header alone: no node is out)
    assert [k for (k,) in parsed.fetchall()] == [
        "df",
        "dmesg",
        "nvidia-smi",
        "nvidia-smi-q",
        "sinfo",
        "sinfo",
        "versions",
    ]
    metas = {p.read_text().split("node=")[1].split("\n")[0]: p.read_text() for p in work.rglob("meta.env")}
    meta = dict(line.split("=", 1) for line in metas[SICK[2]].splitlines())
    assert meta["instance_id"] == SICK[1] and meta["instance_group"] == SICK[0]
    assert meta["cluster"] == CLUSTER and meta["cluster_id"] == CLUSTER_ID
    assert meta["collected_at"] == "2026-01-26T14:30:25Z" and meta["hostname"] == SICK[2]
    failed = dict(line.split("=", 1) for line in metas[FAILED[1]].splitlines())
    assert failed["instance_group"] == FAILED[0] and failed["collected_at"] == "2026-01-26T14:31:02Z"


def test_folder_and_its_zip_give_the_same_result(tmp_path: Path) -> None:
    root = _report(tmp_path)
    zipped = _zip_like_the_script(root)
    with zipfile.ZipFile(zipped) as z:
        assert f"{root.name}/summary.json" in z.namelist()
    assert hir.detect(zipped) and foreign_detect(zipped) == hir.SOURCE
    code_dir, from_dir, out_dir = _analyze(tmp_path, root, tag="dir")
    code_zip, from_zip, out_zip = _analyze(tmp_path, zipped, tag="zip")
    assert code_dir == code_zip == 0, (out_dir, out_zip)
    assert _shape(from_dir) == _shape(from_zip)
    assert _xid79_nodes(from_zip) == {SICK[2]}


def test_tarball_missing_is_not_examined_with_that_reason(tmp_path: Path) -> None:
    root = _report(tmp_path, missing_tarball=True)
    code, report, output = _analyze(tmp_path, root)
    assert code == 0, output
    missing = _not_examined(report, WELL[1])
    reasons = [r["reason"] for r in missing if "reason" in r]
    assert len(reasons) > 5 and all("tarball missing" in reason for reason in reasons), missing


def test_table_without_bug_report_is_no_nvidia_smi_q(tmp_path: Path) -> None:
    files = _instance_files(*SICK[:2], SICK[2], CLEAN)
    del files["nvidia-bug-report.log.gz.gz"]
    root = tmp_path / "r"
    (root / "instances").mkdir(parents=True)
    _instance_tarball(root / "instances" / f"{SICK[0]}_{SICK[1]}.tar.gz", SICK[0], SICK[1], files)
    (root / "summary.json").write_bytes(
        _summary(
            [{"InstanceId": SICK[1], "NodeGroup": SICK[0], "Success": True, "Output": "", "ElapsedTime": 1.0}]
        )
    )
    converted = hir.convert(root, tmp_path / "w", Limits())
    assert converted.node_dir is not None
    manifest = (converted.node_dir / "manifest.tsv").read_text()
    row = next(line for line in manifest.splitlines() if "\tnvidia-smi-q\t" in line)
    assert row.endswith(hir.SMI_TABLE_NOTE)
    assert "\tfi-info\t" in manifest and hir.NOT_CARRIED_NOTE in manifest
    assert (converted.node_dir / "cmd" / "nvidia-smi.txt").read_bytes() == SMI.read_bytes()


def test_eks_instance_reads_the_extracted_eks_logs(tmp_path: Path) -> None:
    """An EKS node: no dmesg_T.txt nor bug report at the top; the EKS log collector's tarball extracted
    into eks-logs/ (its members ./kernel/... land as eks-logs/kernel/...); a --command output."""
    group, iid = "gpu-group", "i-0eeeeeeeeeeeeeee5"
    files = {
        "instance_group.txt": f"{group}\n".encode(),
        "instance_id.txt": f"{iid}\n".encode(),
        "cluster_type.txt": b"eks\n",
        "hostname.txt": b"hyperpod-i-0eeeeeeeeeeeeeee5\n",
        "timestamp.txt": b"Mon Jan 26 14:30:25 UTC 2026\n",
        "nvidia_smi.txt": SMI.read_bytes(),
        "disk_usage.txt": DF.read_bytes(),
        "kubelet_status.txt": b"* kubelet.service - Kubernetes Kubelet\n",
        "eks-log-collector-output.txt": b"Trying to archive gathered information...\n",
        "eks-logs/kernel/dmesg.human.current": DMESG_HUMAN.read_bytes(),
        "eks-logs/kernel/dmesg.current": XID79.read_bytes(),
        "eks-logs/kernel/uname.txt": b"Linux ip-10-3-1-5 5.10.230 #1 SMP x86_64 GNU/Linux\n",
        "eks-logs/system/availability-zone.txt": b"us-west-2b\n",
        "eks-logs/gpu/nvidia-bug-report.log.gz": _bug_report_gz(),
        # eks-log-collector.sh get_mounts_info: mount > f; echo >> f; df --human-readable >> f
        "eks-logs/storage/mounts.txt": MOUNT.read_bytes() + b"\n" + DF_H.read_bytes(),
        "command_01_df_-h.txt": DF_H.read_bytes(),
        "command_02_nvidia-smi_-q.txt": SMI_Q.read_bytes(),
    }
    root = tmp_path / "r"
    (root / "instances").mkdir(parents=True)
    _instance_tarball(root / "instances" / f"{group}_{iid}.tar.gz", group, iid, files)
    (root / "summary.json").write_bytes(
        _summary([{"InstanceId": iid, "NodeGroup": group, "Success": True, "Output": "", "ElapsedTime": 1.0}])
    )
    converted = hir.convert(root, tmp_path / "w", Limits())
    assert converted.node_dir is not None and not converted.refusals
    cmd = converted.node_dir / "cmd"
    assert (cmd / "dmesg.txt").read_bytes() == DMESG_HUMAN.read_bytes(), "dmesg --ctime, and only it"
    assert sorted(p.name for p in cmd.iterdir()) == [
        "df.txt",
        "dmesg.txt",
        "mounts.txt",
        "nvidia-smi-q.txt",
        "nvidia-smi.txt",
        "versions.txt",
    ], "the bug report's -q; the --command outputs add no second df or nvidia-smi-q"
    assert (cmd / "mounts.txt").read_bytes() == MOUNT.read_bytes(), "the mount part of storage/mounts.txt"
    assert (cmd / "df.txt").read_bytes() == DF.read_bytes(), "disk_usage.txt, not the collector's df -h"
    meta = dict(line.split("=", 1) for line in (converted.node_dir / "meta.env").read_text().splitlines())
    assert meta["node"] == "hyperpod-i-0eeeeeeeeeeeeeee5" and meta["cluster_type"] == "eks"
    assert meta["availability_zone"] == "us-west-2b" and meta["instance_id"] == iid


def test_command_output_fills_a_missing_kind(tmp_path: Path) -> None:
    files = _instance_files(*SICK[:2], SICK[2], CLEAN)
    del files["nvidia-bug-report.log.gz.gz"]
    files["command_01_nvidia-smi_-q.txt"] = SMI_Q.read_bytes()
    root = tmp_path / "r"
    (root / "instances").mkdir(parents=True)
    _instance_tarball(root / "instances" / f"{SICK[0]}_{SICK[1]}.tar.gz", SICK[0], SICK[1], files)
    (root / "summary.json").write_bytes(
        _summary(
            [{"InstanceId": SICK[1], "NodeGroup": SICK[0], "Success": True, "Output": "", "ElapsedTime": 1.0}]
        )
    )
    converted = hir.convert(root, tmp_path / "w", Limits())
    assert converted.node_dir is not None
    assert (converted.node_dir / "cmd" / "nvidia-smi-q.txt").read_bytes() == SMI_Q.read_bytes()
    assert hir.SMI_TABLE_NOTE not in (converted.node_dir / "manifest.tsv").read_text()


# -- the older layout ----------------------------------------------------------------------------------
def test_older_layout_zip(tmp_path: Path) -> None:
    zipped = _old_report(tmp_path)
    assert hir.detect(zipped) and foreign_detect(zipped) == hir.SOURCE
    code, report, output = _analyze(tmp_path, zipped)
    assert code == 0, output
    assert _xid79_nodes(report) == {"ip-10-2-123-231"}
    nodes = {r["node"] for r in report["verdict"]["not_examined"]}
    assert "ip-10-2-109-13" in nodes, "the head node is read too; it carries no GPU output"
    converted = hir.convert(zipped, tmp_path / "w", Limits())
    assert len(converted.nodes) == 3 and not converted.refusals
    folder = tmp_path / "old" / "hyperpod_issue_report_20240823_023724"
    assert hir.detect(folder), "the zip's folder, unpacked"
    unpacked = hir.convert(folder, tmp_path / "w2", Limits())
    assert sorted(p.name for p in unpacked.nodes) == sorted(p.name for p in converted.nodes)
    worker = next(p for p in unpacked.nodes if "ip-10-2-123-231" in (p / "meta.env").read_text())
    assert (worker / "cmd" / "dmesg.txt").read_bytes() == XID79.read_bytes()
    assert {"nvidia-smi.txt", "nvidia-smi-q.txt", "df.txt", "versions.txt"} <= {
        p.name for p in (worker / "cmd").iterdir()
    }


def test_other_inputs_are_not_taken_for_one(tmp_path: Path) -> None:
    plain = tmp_path / "notes.zip"
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("notes/readme.txt", "hello\n")
        z.writestr("summary.json", json.dumps({"cluster": "x"}))
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"results": []}))
    text = tmp_path / "x.txt"
    text.write_text("PK not a zip\n")
    for path in (plain, folder, text):
        assert not hir.detect(path), path


# -- safety --------------------------------------------------------------------------------------------
def _symlink_member(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def test_unsafe_members_are_unread_inputs_and_never_written(tmp_path: Path) -> None:
    root = _report(tmp_path)
    zipped = _zip_like_the_script(root)
    with zipfile.ZipFile(zipped, "a") as z:
        z.writestr("../evil", "escaped\n")
        z.writestr(_symlink_member(f"{root.name}/instances/link.tar.gz", "/etc/passwd"), "/etc/passwd")
    code, report, output = _analyze(tmp_path, zipped)
    assert code == 5, output
    unread = json.dumps(report["verdict"])
    assert f"{zipped.name}!../evil" in unread or f"{zipped}!../evil" in unread, unread
    assert "instances/link.tar.gz" in unread and "link not followed" in unread
    assert _xid79_nodes(report) == {SICK[2]}, "the rest is read"
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()


def _zeros_zip(path: Path, name: str, size: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z, z.open(name, "w", force_zip64=True) as fh:
        block = bytes(1024 * 1024)
        for _ in range(size // len(block)):
            fh.write(block)
    return path


def test_zip_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    root = _report(tmp_path)
    zipped = _zip_like_the_script(root)
    with (
        zipfile.ZipFile(zipped, "a", zipfile.ZIP_DEFLATED) as z,
        z.open(f"{root.name}/instances/bomb_i-0ddddddddddddddd4.tar.gz", "w", force_zip64=True) as fh,
    ):
        block = bytes(1024 * 1024)
        for _ in range(300):
            fh.write(block)
    limits = Limits(max_file_bytes=8 * 1024**2, ratio_floor_bytes=1024**2)
    converted = hir.convert(zipped, tmp_path / "w", limits)
    refused = {r.path: r.reason for r in converted.refusals}
    bomb = f"{root.name}/instances/bomb_i-0ddddddddddddddd4.tar.gz"
    assert bomb in refused and "cap" in refused[bomb], refused
    assert len(converted.nodes) == 3, "the rest is read"


# -- iter_zip ------------------------------------------------------------------------------------------
def _read(path: Path, limits: Limits | None = None) -> tuple[dict[str, bytes], list[Refusal], list[str]]:
    refusals: list[Refusal] = []
    errors: list[str] = []
    got = dict(iter_zip(path, limits or Limits(), refusals, errors))
    return got, refusals, errors


def test_iter_zip_reads_files_and_refuses_unsafe_members(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("top/", "")
        z.writestr("top/a.txt", "a\n")
        z.writestr("top/./b/c.txt", "c\n")
        z.writestr("../evil", "x")
        z.writestr("/abs", "x")
        z.writestr(_symlink_member("top/link", "/etc/passwd"), "/etc/passwd")
        fifo = zipfile.ZipInfo("top/fifo")
        fifo.create_system = 3
        fifo.external_attr = (stat.S_IFIFO | 0o644) << 16
        z.writestr(fifo, "")
        z.writestr(
            zipfile.ZipInfo("top/old.bz2", (2026, 1, 1, 0, 0, 0)), "x", compress_type=zipfile.ZIP_BZIP2
        )
    got, refusals, errors = _read(path)
    assert got == {"top/a.txt": b"a\n", "top/b/c.txt": b"c\n"} and not errors
    reasons = {r.path: r.reason for r in refusals}
    assert "unsafe name" in reasons["../evil"] and "unsafe name" in reasons["/abs"]
    assert reasons["top/link"] == "link not followed" and "not a regular file" in reasons["top/fifo"]
    assert "compression method" in reasons["top/old.bz2"]


def test_iter_zip_caps_declared_and_actual_size(tmp_path: Path) -> None:
    big = _zeros_zip(tmp_path / "big.zip", "zeros", 4 * 1024**2)
    got, refusals, _ = _read(big, Limits(max_file_bytes=1024**2))
    assert not got and "exceeds the per-file cap" in refusals[0].reason  # by the declared size
    # a header that lies: declared 1000 bytes in both headers, 4 MiB of zeros inside
    data = bytearray(big.read_bytes())
    with zipfile.ZipFile(big) as z:
        info = z.getinfo("zeros")
    for needle in (info.file_size.to_bytes(8, "little"), info.file_size.to_bytes(4, "little")):
        data = bytearray(bytes(data).replace(needle, (1000).to_bytes(len(needle), "little")))
    lying = tmp_path / "lying.zip"
    lying.write_bytes(bytes(data))
    got, refusals, errors = _read(lying, Limits(max_file_bytes=2000))
    assert not got, "never more than the declared size is taken, and a mismatch is refused"
    assert refusals or errors


def test_iter_zip_encrypted_member_count_and_damage(tmp_path: Path) -> None:
    path = tmp_path / "e.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("secret.txt", "not really encrypted")
        for n in range(5):
            z.writestr(f"f{n}.txt", "x")
    # zipfile writes no encrypted member: set the flag's bit 0 in both headers of the first one
    data = bytearray(path.read_bytes())
    data[6] |= 0x1  # the local header, at offset 0
    central = bytes(data).index(b"PK\x01\x02")
    data[central + 8] |= 0x1
    path.write_bytes(bytes(data))
    got, refusals, errors = _read(path)
    assert refusals[0].reason == "encrypted member not read" and len(got) == 5
    got, _, errors = _read(path, Limits(max_members=3))
    assert not got and "more than 3" in errors[0]
    damaged = tmp_path / "d.zip"
    damaged.write_bytes(path.read_bytes()[:40])
    got, _, errors = _read(damaged)
    assert not got and "damaged" in errors[0]


def test_iter_zip_total_and_ratio_stop_reading(tmp_path: Path) -> None:
    path = _zeros_zip(tmp_path / "z.zip", "zeros", 8 * 1024**2)
    got, refusals, errors = _read(path, Limits(ratio_floor_bytes=1024**2))
    assert not got and "expands more than" in refusals[0].reason
    got, _, errors = _read(path, Limits(max_bundle_bytes=1024**2))
    assert not got and "total size cap" in errors[0]


@pytest.mark.parametrize("name", ["hyperpod_issue_report_20240823_023724.zip"])
def test_named_like_the_older_zip(tmp_path: Path, name: str) -> None:
    fake = tmp_path / name
    fake.write_bytes(b"not a zip")
    assert hir.NAMED.search(fake.name) and not hir.detect(fake)
