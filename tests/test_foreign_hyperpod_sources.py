"""The HyperPod issue report's Slurm view, system logs and Kubernetes nodes, read into the rules that judge them.

Reports are laid out as the script lays them out (tests/test_foreign_hyperpod_issue_report.py says how).
Inputs are real where one exists, else labelled:

- ``sinfo_R.txt`` is DERIVED from the real ``sinfo -R`` of tests/fixtures/sinfo/unige-hpc-3909-sinfo-R-gres-gpu.txt
  (its header and the layout of its rows, ``%20E %9u %19H %N``), with the node named as HyperPod names
  Slurm nodes; ``sinfo.txt`` likewise from the WashU partition view's ``drain`` row.
- ``kern.log`` is the real ``/var/log/kern.log`` part of the tool_man nvidia-bug-report: four boots.
- ``kubectl_resources.tar.gz!nodes_describe.txt`` is the real ``kubectl describe node`` of
  tests/fixtures/placement/training-on-eks-p4d-describe-node-full-prompt-fence-cut-tail.txt, DERIVED: its
  ``Name:`` made the HyperPod node name of an instance of the report and the label
  ``sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReboot`` added after its last label.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

from analyzer.intake.foreign import hyperpod_issue_report as hp
from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.store.tables import connect
from tests.analyze_json import analyze_json
from tests.test_foreign_hyperpod_issue_report import (
    SICK,
    WELL,
    XID79,
    _instance_files,
    _instance_tarball,
    _old_report,
    _report,
    _zip_like_the_script,
)

FIXTURES = Path(__file__).parent / "fixtures"
WHOLE = FIXTURES / "nvidia-bug-report" / "tool-man-440.31-rtx2080ti-x4--kernel-scan-whole.log"
DESCRIBE = FIXTURES / "placement" / "training-on-eks-p4d-describe-node-full-prompt-fence-cut-tail.txt"
REASON = "Kill task failed     root      2026-01-26T13:58:41 "


def _replace_instance(root: Path, who: tuple[str, str, str], **files: bytes) -> None:
    group, iid, host = who
    base = _instance_files(group, iid, host, XID79)
    base.update({k.replace("__", "."): v for k, v in files.items()})
    _instance_tarball(root / "instances" / f"{group}_{iid}.tar.gz", group, iid, base)


def test_a_node_slurm_drained_is_a_finding_with_its_reason(tmp_path: Path) -> None:
    root = _report(tmp_path)
    sinfo_r = f"REASON               USER      TIMESTAMP           NODELIST\n{REASON}{WELL[2]}\n"
    sinfo = (
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        f"dev*         up   infinite      1  drain {WELL[2]}\n"
        f"dev*         up   infinite      1   idle {SICK[2]}\n"
    )
    for who in (SICK, WELL):  # every node prints the whole cluster's view
        _replace_instance(root, who, sinfo_R__txt=sinfo_r.encode(), sinfo__txt=sinfo.encode())
    code, report, output = analyze_json(tmp_path, root)
    assert code in (0, 1), output
    (finding,) = [f for f in report["findings"] if f["rule"] == "host.slurm.unavailable"]
    assert finding["node"] == WELL[2] and finding["severity"] == "warning"
    assert finding["params"]["reasons"] == ["Kill task failed"] and finding["params"]["states"] == ["drain"]
    assert "(set by root at 2026-01-26T13:58:41)" in finding["message"]
    tarball = f"instances/{WELL[0]}_{WELL[1]}.tar.gz"
    assert sorted((e["file"], e["line"]) for e in finding["evidence"]) == [
        (f"{WELL[2]}/{tarball}!sinfo.txt", 2),
        (f"{WELL[2]}/{tarball}!sinfo_R.txt", 2),
    ]
    outcome = next(o for o in report["rules"] if o["rule"] == "host.slurm.unavailable")
    assert SICK[2] in outcome["nodes_checked"]  # named idle by its own sinfo: checked, in service


def test_the_older_scripts_head_node_sinfo_is_every_hosts(tmp_path: Path) -> None:
    _old_report(tmp_path)
    base = "hyperpod_issue_report_20240823_023724"
    head = tmp_path / "old" / base / "control" / "ip-10-2-109-13" / "sinfo-R.log"
    head.write_text(f"REASON               USER      TIMESTAMP           NODELIST\n{REASON}ip-10-2-99-136\n")
    zipped = Path(shutil.make_archive(str(tmp_path / "old" / base), "zip", tmp_path / "old", base))
    code, report, output = analyze_json(tmp_path, zipped)
    (finding,) = [f for f in report["findings"] if f["rule"] == "host.slurm.unavailable"]
    assert finding["node"] == "ip-10-2-99-136"
    assert finding["evidence"][0]["file"].endswith("control/ip-10-2-109-13/sinfo-R.log")


def test_kern_log_gives_the_boots_before_the_running_one(tmp_path: Path) -> None:
    (kern,) = [
        p
        for b in nbr.split_blocks(WHOLE.read_text(encoding="utf-8"))
        for p in nbr.kernel_scan(b)
        if p.boot is None
    ]
    root = _report(tmp_path)
    _replace_instance(root, SICK, kern__log=kern.text.encode(), syslog=b"")
    con = connect(None)
    (tmp_path / "work").mkdir()
    load(con, [root], tmp_path / "work", Limits(), jobs=1)
    boots = con.execute(
        "SELECT boot, count(*) FILTER (WHERE xid = 45) FROM kernel_event WHERE node = ? GROUP BY 1 ORDER BY 1",
        [SICK[2]],
    ).fetchall()
    assert [b for b, _ in boots] == [-3, -2, -1, 0] and boots[0][1] == 29
    # the running boot is dmesg -T's (dmesg_T.txt: its Xid 79), not kern.log's last boot again
    assert con.execute(
        "SELECT count(*) FROM kernel_event WHERE node = ? AND boot = 0 AND xid = 79", [SICK[2]]
    ).fetchone() == (1,)


def _kubectl_tarball(path: Path, iid: str, edit: dict[str, str] | None = None) -> bytes:
    text = DESCRIBE.read_text(encoding="utf-8")
    for old, new in (edit or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    text = text.replace(
        "Name:               ip-10-0-5-152.ap-northeast-2.compute.internal",
        f"Name:               hyperpod-{iid}",
        1,
    )
    lines = text.splitlines(keepends=True)
    last_label = max(
        i for i, ln in enumerate(lines) if ln.startswith("                    ") and "=" in ln and i < 80
    )
    lines.insert(
        last_label + 1,
        "                    sagemaker.amazonaws.com/node-health-status=UnschedulablePendingReboot\n",
    )
    data = "".join(lines).encode()
    with tarfile.open(path, "w:gz") as tar:  # files at the top (arcname=filename)
        info = tarfile.TarInfo(hp.NODES_DESCRIBE)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return data


def test_kubectl_describe_nodes_gives_each_node_its_health_label(tmp_path: Path) -> None:
    root = _report(tmp_path)
    _kubectl_tarball(root / hp.KUBECTL, WELL[1])
    code, report, output = analyze_json(tmp_path, root)
    (finding,) = [f for f in report["findings"] if f["rule"] == "host.deep_health.failed"]
    assert finding["node"] == WELL[2] and finding["severity"] == "warning"
    assert finding["params"]["value"] == "UnschedulablePendingReboot"
    assert finding["evidence"][0]["file"] == f"{WELL[2]}/{hp.KUBECTL}!{hp.NODES_DESCRIBE}"
    # the zip of the same folder reads the same
    code, zipped, output = analyze_json(tmp_path, _zip_like_the_script(root), tag="z")
    assert [(f["rule"], f["node"]) for f in zipped["findings"] if f["rule"] == "host.deep_health.failed"] == [
        ("host.deep_health.failed", WELL[2])
    ]


def test_a_nodes_kubernetes_conditions_are_judged_with_their_reason(tmp_path: Path) -> None:
    # the describe's Ready row given the words the kubelet's node controller writes when the kubelet
    # stops posting (the real kubectl 1.5 describe of tests/fixtures/placement/vmware-k8s-describe-node-
    # ready-unknown-tabs-conditions.txt): Ready Unknown, NodeStatusUnknown
    ready = "  Ready            True    Thu, 18 Dec 2025 01:29:49 +0000   Thu, 18 Dec 2025 01:29:17 +0000   KubeletReady                 kubelet is posting ready status"  # noqa: E501
    stopped = ready.replace("True   ", "Unknown").replace(
        "KubeletReady                 kubelet is posting ready status",
        "NodeStatusUnknown            Kubelet stopped posting node status.",
    )
    root = _report(tmp_path)
    data = _kubectl_tarball(root / hp.KUBECTL, WELL[1], {ready: stopped})
    line = data.decode().splitlines().index(stopped) + 1
    code, report, output = analyze_json(tmp_path, root)
    (finding,) = [f for f in report["findings"] if f["rule"] == "host.k8s.condition"]
    assert (finding["node"], finding["severity"]) == (WELL[2], "critical")
    assert finding["params"]["condition"] == "Ready" and finding["params"]["reason"] == "NodeStatusUnknown"
    assert finding["evidence"][0]["file"] == f"{WELL[2]}/{hp.KUBECTL}!{hp.NODES_DESCRIBE}"
    assert finding["evidence"][0]["line"] == line
    # the instance the describe does not name has no conditions: not examined, never passed
    (outcome,) = [o for o in report["rules"] if o["rule"] == "host.k8s.condition"]
    assert outcome["nodes_checked"] == [WELL[2]] and SICK[2] in outcome["nodes_without_data"]


def test_an_eks_nodes_messages_gives_its_earlier_boots(tmp_path: Path) -> None:
    (kern,) = [
        p
        for b in nbr.split_blocks(WHOLE.read_text(encoding="utf-8"))
        for p in nbr.kernel_scan(b)
        if p.boot is None
    ]
    group, iid = "gpu-group", "i-0eeeeeeeeeeeeeee5"
    files = {
        "instance_group.txt": f"{group}\n".encode(),
        "instance_id.txt": f"{iid}\n".encode(),
        "cluster_type.txt": b"eks\n",
        "hostname.txt": f"hyperpod-{iid}\n".encode(),
        "eks-logs/kernel/dmesg.current": XID79.read_bytes(),
        "eks-logs/var_log/messages": kern.text.encode(),  # tail -c 100M /var/log/messages
    }
    root = tmp_path / "r"
    (root / "instances").mkdir(parents=True)
    _instance_tarball(root / "instances" / f"{group}_{iid}.tar.gz", group, iid, files)
    result = {"InstanceId": iid, "NodeGroup": group, "Success": True}
    (root / "summary.json").write_text(
        json.dumps({"cluster_name": "c", "report_id": "r", "results": [result]})
    )
    converted = hp.convert(root, tmp_path / "w", hp.Limits())
    assert converted.node_dir is not None
    names = sorted(p.name for p in (converted.node_dir / "cmd").iterdir() if p.name.startswith("dmesg"))
    assert names == [
        "dmesg-boot-1-messages.txt",
        "dmesg-boot-2-messages.txt",
        "dmesg-boot-3-messages.txt",
        "dmesg.txt",  # the running boot: the collector's dmesg.current
    ]
    assert any("eks-logs/var_log/messages holds 3 boots before its last one" in p for p in converted.problems)
