"""The HyperPod issue report (a folder, its zip, or the older script's zip) as one node bundle per node.

Written by awslabs/agent-plugins ``hyperpod-issue-report`` (and shimomut/sagemaker-solutions
``hyperpod_issue_report``, where it started).  Current layout (``scripts/hyperpod_issue_report.py``, the skill's collector).  The script runs a
generated bash script on every node over SSM and uploads each node's tarball to
``s3://<bucket>/<prefix>/<cluster>/<report-id>/instances/<group>_<instance-id>.tar.gz``, then a
``summary.json`` beside ``instances/`` (``cluster_name``, ``cluster_id``, ``report_id``,
``timestamp``, ``results``: one ``{"InstanceId", "NodeGroup", "Success", "Error" | "Output"}`` per
node) and, on EKS clusters, ``kubectl_resources.tar.gz``.  Downloaded, the report is the folder
``<cluster>_<report-id>/``, or its zip holding that folder.  Each tarball holds
``hyperpod_report_<group>_<instance-id>_<YYYYmmdd_HHMMSS>/`` (the time is ``date -u``) with:

- ``instance_id.txt``, ``instance_group.txt``, ``cluster_type.txt``, ``hostname.txt`` (``hostname``),
  ``timestamp.txt`` (``date -u``);
- ``nvidia_smi.txt`` (``nvidia-smi``, the default table: kind ``nvidia-smi``, not ``-q``) and
  ``disk_usage.txt`` (``df``), on every cluster type;
- Slurm: ``dmesg_T.txt`` (``dmesg -T``), ``kern.log`` and ``syslog`` (copies of /var/log),
  ``nvidia-bug-report.log.gz.gz`` (the script passes ``--output-file ...log.gz`` and
  ``nvidia-bug-report.sh`` appends ``.gz``), ``sinfo.txt``, ``sinfo_R.txt``, service status, Slurm
  config and logs;
- EKS: ``eks-logs/`` (the EKS log collector's tarball extracted: ``kernel/dmesg.human.current``,
  ``kernel/dmesg.current``, ``kernel/uname.txt``, ``system/*.txt``, ``gpu/nvidia-bug-report.log.gz``,
  and the ``mount`` part of ``storage/mounts.txt``: kind ``mounts``),
  containerd and kubelet status;
- ``command_<NN>_<command>.txt``: the user's ``--command`` outputs, read when their content is a kind
  hptriage parses and the node has no output of that kind yet.

Older layout (shimomut/sagemaker-solutions ``_archived/hyperpod_issue_report_v1``, run on the Slurm
head node): ``hyperpod_issue_report_<YYYYmmdd_HHMMSS>.zip`` holding ``hyperpod_issue_report_<...>/``
with ``control/<host>/`` (the head node) and ``worker/<host>/`` (each worker, named by
``socket.gethostname()``): ``df.log`` (``df -h``), ``dmesg-T.log`` (``dmesg -T``), ``nvidia-smi.log``
(``nvidia-smi``), ``nvidia-bug-report.log.gz``, ``kern.log``, ``syslog``, Slurm and SageMaker agent logs.

One kernel log per node: ``dmesg -T`` first, then the EKS collector's dmesg, then the bug report's
``dmesg:`` section, and ``kern.log`` only when none of them is there (it holds the same messages, and
earlier boots').  The nested bug report is read by :mod:`~analyzer.intake.foreign.nvidia_bug_report`
with its caps.  An instance whose collection failed in ``summary.json``, or that succeeded but whose
tarball is missing, is still a node (named by its instance id) with every kind absent and that error
as the reason: it shows as not examined, never as healthy.  Archives are read with
:func:`~analyzer.intake.safe_read.iter_zip` and :func:`~analyzer.intake.safe_read.iter_tar`; a
nested tarball held in the zip is written to a temporary file inside the work directory; nothing
nested deeper than the bug report is read.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import analyzer.intake.foreign.boots as boots
import analyzer.intake.foreign.eks_log_collector as eks
import analyzer.intake.foreign.nvidia_bug_report as nbr
import parsers
from analyzer.intake.foreign.layout import Absent, Converted, NodeLayout, Output, write_node
from analyzer.intake.safe_read import (
    Limits,
    Refusal,
    iter_tar,
    iter_zip,
    safe_member_name,
    zip_entry_count,
)

SOURCE = "hyperpod-issue-report"
#: the older layout's zip (the current one is named after the cluster, '<cluster>_<report-id>.zip')
NAMED = re.compile(r"^hyperpod_issue_report_\d{8}_\d{6}\.zip$", re.I)
NOT_CARRIED_NOTE = "not carried by the HyperPod issue report"
SMI_TABLE_NOTE = (
    "not carried by the HyperPod issue report: its nvidia_smi.txt is the nvidia-smi table, not -q"
)
#: the note of every kind of an instance the report holds nothing of, followed by why: failed probes
#: whose reason the verdict names (analyzer.judge.coverage.COLLECTION_FAILED)
FAILED_NOTE = "collection failed"
SUMMARY = "summary.json"
SUMMARY_KEYS = frozenset({"cluster_name", "report_id", "results"})
INSTANCES = "instances"
#: the old layout's folders of hosts, and the files only it writes there (one must be present)
OLD_ROLES = frozenset({"control", "worker"})
OLD_SIGNATURE = frozenset(
    {"df.log", "dmesg-T.log", "nvidia-smi.log", "slurmd_status.log", "slurmctld_status.log", "sinfo-R.log"}
)
_GPU_KINDS = ("nvidia-smi-q", "versions", "nvidia-smi-nvlink", "fabricmanager")
#: every kind a node of ours carries: all of them absent on a node whose collection failed
ALL_KINDS = ("nvidia-smi-q", "nvidia-smi", "dmesg", *nbr.NOT_CARRIED, *_GPU_KINDS[1:])
#: (member, kind, command as run), the first of a kind found wins
CURRENT_OUTPUTS = (
    ("nvidia_smi.txt", "nvidia-smi", "nvidia-smi"),
    ("disk_usage.txt", "df", "df"),
    ("dmesg_T.txt", "dmesg", "dmesg -T"),
    ("eks-logs/kernel/dmesg.human.current", "dmesg", "dmesg --ctime"),
    ("eks-logs/kernel/dmesg.current", "dmesg", "dmesg"),
)
CURRENT_BUG_REPORTS = (
    "nvidia-bug-report.log.gz.gz",
    "nvidia-bug-report.log.gz",
    "nvidia-bug-report.log",
    "eks-logs/gpu/nvidia-bug-report.log.gz",
)
CURRENT_FACTS = (
    "instance_id.txt",
    "instance_group.txt",
    "cluster_type.txt",
    "hostname.txt",
    "timestamp.txt",
    "eks-logs/kernel/uname.txt",
    "eks-logs/system/instance-id.txt",
    "eks-logs/system/availability-zone.txt",
    "eks-logs/system/region.txt",
)
#: the EKS collector's ``mount``, empty line, ``df -h`` file: its mount table is read (df comes from
#: the node's own disk_usage.txt)
EKS_MOUNTS = "eks-logs/storage/mounts.txt"
OLD_OUTPUTS = (
    ("nvidia-smi.log", "nvidia-smi", "nvidia-smi"),
    ("df.log", "df", "df -h"),
    ("dmesg-T.log", "dmesg", "dmesg -T"),
)
OLD_BUG_REPORTS = ("nvidia-bug-report.log.gz", "nvidia-bug-report.log.gz.gz", "nvidia-bug-report.log")
KERN_LOG = ("kern.log", "dmesg", "cat /var/log/kern.log")
#: the system logs the scripts copy: kern.log first (kernel lines only), else syslog (every line)
SYSTEM_LOGS = (("kern.log", "cp /var/log/kern.log"), ("syslog", "cp /var/log/syslog"))
#: an EKS node's: the EKS log collector's copies, in its extracted tarball
EKS_SYSTEM_LOGS = tuple((f"eks-logs/{name}", command) for name, command in eks.SYSLOGS)
#: Slurm's view of every node, as each node printed it (current layout; the older script ran sinfo -R
#: on the head node only)
SINFO = (("sinfo_R.txt", "sinfo -R"), ("sinfo.txt", "sinfo"), ("sinfo-R.log", "sinfo -R"))
#: the report's kubectl resources (EKS clusters): ``kubectl describe nodes`` is read, each node's block
#: on its instance (its labels: HyperPod's node-health-status, topology, instance type; its taints)
KUBECTL = "kubectl_resources.tar.gz"
NODES_DESCRIBE = "nodes_describe.txt"
#: the EC2 instance id a Kubernetes node name carries (``hyperpod-i-0123456789abcdef0``)
_IID = re.compile(r"(?<![0-9a-z])i-(?:[0-9a-f]{17}|[0-9a-f]{8})(?![0-9a-z])")
_COMMAND = re.compile(r"^command_\d+_.*\.txt$")
_NODE_KINDS = frozenset(ALL_KINDS)
_INNER = re.compile(r"^hyperpod_report_.*_(?P<ts>\d{8}_\d{6})$")
_TS = re.compile(r"(\d{8}_\d{6})")
_MAX_SUMMARY = 16 * 1024**2
_MAX_FACT = 64 * 1024


# -- detection ---------------------------------------------------------------------------------------
def detect(path: Path) -> bool:
    """Whether ``path`` is a HyperPod issue report: the folder (``summary.json`` with the script's keys)
    or a zip holding it, or the older layout's zip or folder (``control/`` / ``worker/`` host folders
    with the files its script writes)."""
    try:
        if path.is_symlink():
            return False
        if path.is_dir():
            return _summary_in_dir(path) is not None or _old_hosts_in_dir(path) != []
        if path.is_file():
            return _zip_layout(path) is not None
    except OSError:
        return False
    return False


def _summary_keys_ok(data: bytes) -> dict[str, Any] | None:
    try:
        summary = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(summary, dict) or not summary.keys() >= SUMMARY_KEYS:
        return None
    if not isinstance(summary.get("results"), list):
        return None
    return summary


def _summary_in_dir(root: Path) -> dict[str, Any] | None:
    path = root / SUMMARY
    if path.is_symlink() or not path.is_file() or path.stat().st_size > _MAX_SUMMARY:
        return None
    return _summary_keys_ok(path.read_bytes())


def _old_hosts_in_dir(root: Path) -> list[tuple[str, Path]]:
    """(role/host, folder) of the older layout's host folders under ``root`` (or its one top folder)."""
    tops = [root]
    if not any((root / role).is_dir() for role in OLD_ROLES):
        subdirs = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()] if root.is_dir() else []
        if len(subdirs) != 1:
            return []
        tops = subdirs
    hosts: list[tuple[str, Path]] = []
    for role in sorted(OLD_ROLES):
        folder = tops[0] / role
        if folder.is_symlink() or not folder.is_dir():
            continue
        for host in sorted(folder.iterdir()):
            if host.is_dir() and not host.is_symlink() and any((host / n).is_file() for n in OLD_SIGNATURE):
                hosts.append((f"{role}/{host.name}", host))
    return hosts


@dataclass
class _ZipLayout:
    kind: str  # 'current' or 'old'
    top: str  # the folder every member lies in ('' when none)


def _zip_layout(path: Path) -> _ZipLayout | None:
    """The layout a zip holds, from its member names (and summary.json's keys), or None."""
    with open(path, "rb") as fh:
        if fh.read(4) not in (b"PK\x03\x04", b"PK\x05\x06"):
            return None
        count = zip_entry_count(fh)
        if count is None or count > Limits().max_members:
            return None
        fh.seek(0)
        try:
            with zipfile.ZipFile(fh) as archive:
                names = [n for n in (safe_member_name(i.filename) for i in archive.infolist()) if n]
                current = _current_top(names)
                if current is not None:
                    info = archive.getinfo(f"{current}/{SUMMARY}" if current else SUMMARY)
                    if info.file_size > _MAX_SUMMARY or info.flag_bits & 0x1:
                        return None
                    with archive.open(info) as member:
                        if _summary_keys_ok(member.read(_MAX_SUMMARY + 1)) is not None:
                            return _ZipLayout("current", current)
                    return None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, KeyError, EOFError, OSError, RuntimeError):
            return None  # damaged, or summary.json encrypted or not decodable
        except NotImplementedError:
            return None  # summary.json in a compression method zipfile cannot read
    top = _old_top(names)
    return _ZipLayout("old", top) if top is not None else None


def _current_top(names: list[str]) -> str | None:
    """The folder holding summary.json ('' at the top, or one folder down), when there is one."""
    for name in names:
        parts = name.split("/")
        if parts[-1] == SUMMARY and len(parts) <= 2:
            return "/".join(parts[:-1])
    return None


def _old_top(names: list[str]) -> str | None:
    """The older layout's top folder ('' when the roles are at the top) when every file member lies in
    ``[top/]control|worker/<host>/`` and one is a file only its script writes."""
    top: str | None = None
    signature = False
    for name in names:
        parts = name.split("/")
        at = 0 if parts[0] in OLD_ROLES else 1
        this = "/".join(parts[:at])
        if len(parts) < at + 2 or parts[at] not in OLD_ROLES or (top is not None and this != top):
            if len(parts) == at + 1 and parts[-1] in OLD_ROLES:
                continue  # the role folder's own entry
            if at == 1 and len(parts) == 1:
                continue  # the top folder's own entry
            return None
        top = this
        signature = signature or (len(parts) == at + 3 and parts[-1] in OLD_SIGNATURE)
    return top if signature else None


# -- conversion --------------------------------------------------------------------------------------
@dataclass
class _Report:
    """What is gathered before nodes are written."""

    summary: dict[str, Any] = field(default_factory=dict)
    #: instance tarball name -> (files, inner folder), current layout
    instances: dict[str, tuple[dict[str, bytes], str]] = field(default_factory=dict)
    #: 'role/host' -> files, older layout
    hosts: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refusals: list[Refusal] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: kubectl_resources.tar.gz's nodes_describe.txt (EKS clusters), and how evidence names the tarball
    nodes_describe: bytes = b""
    kubectl_where: str = ""


def convert(path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the report at ``path`` (folder or zip) as one node bundle per instance under ``dest``."""
    dest.mkdir(parents=True)
    report = _Report()
    kind = "current"
    try:
        if path.is_dir():
            summary = _summary_in_dir(path)
            if summary is not None:
                report.summary = summary
                _read_instances_dir(path / INSTANCES, dest, limits, report)
                kubectl = path / KUBECTL
                if kubectl.is_file() and not kubectl.is_symlink():
                    _read_kubectl(kubectl, KUBECTL, limits, report)
            else:
                kind = "old"
                _read_old_dir(path, limits, report)
        else:
            held = _zip_layout(path)
            if held is None:
                return Converted(reason="not a HyperPod issue report (its layout changed while read?)")
            kind = held.kind
            _read_zip(path, held, dest, limits, report)
    except OSError as exc:
        report.problems.append(f"not readable: {exc.strerror or exc}")
    if kind == "current":
        layouts = _current_nodes(report, limits)
        if report.nodes_describe:
            report.problems.extend(kubectl_nodes(layouts, report.nodes_describe, report.kubectl_where))
    else:
        layouts = [
            _old_node(name, files, limits, report.problems, report.refusals)
            for name, files in sorted(report.hosts.items())
        ]
        _share_sinfo(layouts)
    nodes: list[Path] = []
    taken: set[str] = set()
    for n, layout in enumerate(layouts):
        layout.node = _unique(layout, taken)
        nodes.append(write_node(dest / f"node-{n:04d}", layout))
    if not nodes:
        reason = "HyperPod issue report with no instance hptriage reads"
        return Converted(problems=report.problems, refusals=report.refusals, reason=reason)
    return Converted(nodes, problems=report.problems, refusals=report.refusals)


def _unique(layout: NodeLayout, taken: set[str]) -> str:
    """The node's name; an instance id where two instances give one host name."""
    name = layout.node
    if name in taken:
        name = layout.facts.get("instance_id") or name
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def _wanted_current(rel: str) -> bool:
    return (
        rel in CURRENT_FACTS
        or rel in CURRENT_BUG_REPORTS
        or rel == KERN_LOG[0]
        or rel == "syslog"
        or any(rel == name for name, _ in EKS_SYSTEM_LOGS)
        or any(rel == name for name, _ in SINFO)
        or rel == EKS_MOUNTS
        or any(rel == m for m, _, _ in CURRENT_OUTPUTS)
        or bool(_COMMAND.match(rel))
    )


def _read_instance(
    tarball: Path, display: str, limits: Limits, report: _Report
) -> tuple[dict[str, bytes], str]:
    """The wanted files of one instance tarball (names under its ``hyperpod_report_...`` folder)."""
    refusals: list[Refusal] = []
    errors: list[str] = []
    files: dict[str, bytes] = {}
    inner = ""
    for name, data in iter_tar(tarball, limits, refusals, errors):
        top, _, rel = name.partition("/")
        if not rel:
            continue
        if not inner:
            inner = top
        if top == inner and rel not in files and _wanted_current(rel):
            files[rel] = data
    report.refusals.extend(Refusal(f"{display}!{r.path}", r.reason) for r in refusals)
    report.problems.extend(f"{display}: {e}" for e in errors)
    return files, inner


def _read_kubectl(tarball: Path, display: str, limits: Limits, report: _Report) -> None:
    """``kubectl describe nodes`` out of the report's kubectl_resources.tar.gz (its files at the top)."""
    refusals: list[Refusal] = []
    errors: list[str] = []
    for name, data in iter_tar(tarball, limits, refusals, errors):
        if name == NODES_DESCRIBE and not report.nodes_describe:
            report.nodes_describe, report.kubectl_where = data, display
    report.refusals.extend(Refusal(f"{display}!{r.path}", r.reason) for r in refusals)
    report.problems.extend(f"{display}: {e}" for e in errors)


def _read_instances_dir(folder: Path, dest: Path, limits: Limits, report: _Report) -> None:
    if folder.is_symlink():
        report.refusals.append(Refusal(INSTANCES, "directory link not followed"))
        return
    if not folder.is_dir():
        return
    found: list[tuple[str, Path]] = []
    for n, child in enumerate(sorted(folder.iterdir())):
        rel = f"{INSTANCES}/{child.name}"
        if n >= limits.max_members:
            report.problems.append(
                f"{INSTANCES}: more than {limits.max_members} files; the rest was not read"
            )
            break
        if not child.name.endswith((".tar.gz", ".tgz")):
            continue
        if child.is_symlink():
            report.refusals.append(Refusal(rel, "link not followed"))
            continue
        if not stat.S_ISREG(child.stat().st_mode):
            report.refusals.append(Refusal(rel, "not a regular file (device, FIFO or other)"))
            continue
        found.append((rel, child))
    for rel, tarball in found:
        report.instances[rel] = _read_instance(tarball, rel, limits, report)


def _read_old_dir(root: Path, limits: Limits, report: _Report) -> None:
    wanted = {m for m, _, _ in OLD_OUTPUTS} | set(OLD_BUG_REPORTS) | {KERN_LOG[0], "syslog", "sinfo-R.log"}
    for name, host in _old_hosts_in_dir(root):
        files: dict[str, bytes] = {}
        for member in sorted(wanted):
            target = host / member
            rel = f"{name}/{member}"
            if target.is_symlink():
                report.refusals.append(Refusal(rel, "link not followed"))
                continue
            if not target.is_file():
                continue
            size = target.stat().st_size
            if size > limits.max_file_bytes:
                report.refusals.append(Refusal(rel, f"{size} bytes exceeds the per-file cap"))
                continue
            with open(target, "rb") as fh:
                files[member] = fh.read(limits.max_file_bytes + 1)
        report.hosts[name] = files


def _read_zip(path: Path, layout: _ZipLayout, dest: Path, limits: Limits, report: _Report) -> None:
    prefix = f"{layout.top}/" if layout.top else ""
    errors: list[str] = []
    if layout.kind == "current":

        def select(name: str) -> bool:
            rel = name.removeprefix(prefix) if name.startswith(prefix) else ""
            return rel in (SUMMARY, KUBECTL) or (
                rel.startswith(f"{INSTANCES}/") and rel.count("/") == 1 and rel.endswith((".tar.gz", ".tgz"))
            )

        nested = Path(tempfile.mkdtemp(prefix=".nested-", dir=dest))
        try:
            for name, data in iter_zip(path, limits, report.refusals, errors, select):
                rel = name.removeprefix(prefix)
                if rel == SUMMARY:
                    report.summary = _summary_keys_ok(data) or {}
                    continue
                if rel == KUBECTL:
                    tarball = nested / "kubectl.tar.gz"
                    tarball.write_bytes(data)
                    del data
                    _read_kubectl(tarball, name, limits, report)
                    tarball.unlink()
                    continue
                if rel in report.instances:
                    report.refusals.append(Refusal(name, "duplicate member name; the first copy was kept"))
                    continue
                tarball = nested / "instance.tar.gz"
                tarball.write_bytes(data)
                del data
                report.instances[rel] = _read_instance(tarball, name, limits, report)
                tarball.unlink()
        finally:
            shutil.rmtree(nested, ignore_errors=True)
    else:
        wanted = (
            {m for m, _, _ in OLD_OUTPUTS} | set(OLD_BUG_REPORTS) | {KERN_LOG[0], "syslog", "sinfo-R.log"}
        )
        at = prefix.count("/")

        def select_old(name: str) -> bool:
            parts = name.split("/")
            return len(parts) == at + 3 and parts[-1] in wanted

        for name, data in iter_zip(path, limits, report.refusals, errors, select_old):
            parts = name.split("/")
            host = "/".join(parts[at : at + 2])
            report.hosts.setdefault(host, {}).setdefault(parts[-1], data)
        if not report.hosts:
            report.problems.append("no host folder with a file hptriage reads")
    report.problems.extend(errors)


# -- one node ----------------------------------------------------------------------------------------
def _current_nodes(report: _Report, limits: Limits) -> list[NodeLayout]:
    summary = report.summary
    results = [r for r in summary.get("results", []) if isinstance(r, dict)]
    by_iid: dict[str, dict[str, Any]] = {}
    for result in results:
        iid = result.get("InstanceId")
        if isinstance(iid, str) and iid:
            by_iid.setdefault(iid, result)
    common = {
        "cluster": _text(summary.get("cluster_name")),
        "cluster_id": _text(summary.get("cluster_id")),
        "report_id": _text(summary.get("report_id")),
    }
    layouts: list[NodeLayout] = []
    seen: set[str] = set()
    for name, (files, inner) in sorted(report.instances.items()):
        group, iid = _group_and_iid(name)
        result = by_iid.get(iid, {})
        if result and result.get("Success") is not True:
            report.problems.append(
                f"{name}: summary.json says its collection failed ({_error(result)}), yet its tarball is here: read"
            )
        if iid:
            seen.add(iid)
        layouts.append(
            _current_node(
                name, files, inner, group, iid, common, summary, limits, report.problems, report.refusals
            )
        )
    for iid, result in by_iid.items():
        if iid in seen:
            continue
        group = _text(result.get("NodeGroup")) or "unknown"
        # the verdict names a kind's reason where its note says 'collection failed' (coverage.COLLECTION_FAILED)
        if result.get("Success") is True:
            why = f"{FAILED_NOTE}: tarball missing ({INSTANCES}/{group}_{iid}.tar.gz is not in the report)"
        else:
            why = f"{FAILED_NOTE}: {_error(result)}"
        layout = NodeLayout(iid, SOURCE, f"{INSTANCES}/{group}_{iid}.tar.gz")
        layout.facts.update({k: v for k, v in common.items() if v})
        layout.facts.update({"instance_id": iid, "instance_group": group})
        if when := _summary_time(summary):
            layout.facts["collected_at"] = when
        layout.absent.extend(Absent(kind, why) for kind in ALL_KINDS)
        report.problems.append(f"{iid}: {why.removeprefix(FAILED_NOTE + ': ')}")
        layouts.append(layout)
    return layouts


def _current_node(
    name: str,
    files: dict[str, bytes],
    inner: str,
    group: str,
    iid: str,
    common: dict[str, str],
    summary: dict[str, Any],
    limits: Limits,
    problems: list[str],
    unread: list[Refusal],
) -> NodeLayout:
    facts = {k: v for k, v in common.items() if v}
    for key, member in (
        ("instance_id", "instance_id.txt"),
        ("instance_group", "instance_group.txt"),
        ("cluster_type", "cluster_type.txt"),
        ("hostname", "hostname.txt"),
        ("availability_zone", "eks-logs/system/availability-zone.txt"),
        ("region", "eks-logs/system/region.txt"),
    ):
        if value := _first_line(files.get(member)):
            facts[key] = value
    facts.setdefault("instance_id", _first_line(files.get("eks-logs/system/instance-id.txt")) or iid)
    facts.setdefault("instance_group", group)
    uname = _first_line(files.get("eks-logs/kernel/uname.txt")).split()
    if "hostname" not in facts and len(uname) > 1:
        facts["hostname"] = uname[1]
    when = _folder_time(inner) or _date_u(_first_line(files.get("timestamp.txt"))) or _summary_time(summary)
    if when:
        facts["collected_at"] = when
    facts = {k: v for k, v in facts.items() if v}
    layout = NodeLayout(facts.get("hostname") or facts.get("instance_id") or name, SOURCE, name, facts)
    mounts = eks.mounts_and_df(files.get(EKS_MOUNTS), _origin(name, EKS_MOUNTS), f"{SOURCE} {EKS_MOUNTS}")
    for output in mounts:
        if output.kind == "mounts":
            layout.add(output)
    _outputs(layout, files, CURRENT_OUTPUTS, CURRENT_BUG_REPORTS, limits, problems, name, unread)
    for member in sorted(files):
        if _COMMAND.match(member):
            text = files[member].decode("utf-8", "replace")
            kind = parsers.detect_kind(text)
            if kind in _NODE_KINDS and not layout.has(kind):
                origin = f"{name}!{member}"
                layout.add(Output(kind, text, "-", exit_code="-", note=f"{SOURCE} {member}", origin=origin))
    if not files:
        problems.append(f"{name}: no file hptriage reads in the instance tarball")
    return layout


def _old_node(
    host: str, files: dict[str, bytes], limits: Limits, problems: list[str], unread: list[Refusal]
) -> NodeLayout:
    role, _, name = host.partition("/")
    layout = NodeLayout(name, SOURCE, host, {"hostname": name, "hyperpod_role": role})
    _outputs(layout, files, OLD_OUTPUTS, OLD_BUG_REPORTS, limits, problems, host, unread)
    return layout


def _outputs(
    layout: NodeLayout,
    files: dict[str, bytes],
    outputs: tuple[tuple[str, str, str], ...],
    bug_reports: tuple[str, ...],
    limits: Limits,
    problems: list[str],
    where: str,
    unread: list[Refusal],
) -> None:
    """The node's outputs, one per kind, and the kinds it lacks with why; the gzip member of its bug
    report a cap stopped decoding in goes to ``unread`` (``<where>!<report>!gzip member N``)."""
    for member, kind, command in outputs:
        if member in files and not layout.has(kind):
            text = files[member].decode("utf-8", "replace")
            layout.add(Output(kind, text, command, exit_code="-", note=SOURCE, origin=_origin(where, member)))
    bug = next((m for m in bug_reports if m in files), None)
    read_bug = False
    if bug is not None:
        content = nbr.read_bytes(files[bug], limits, origin=_origin(where, bug))
        if isinstance(content, str):
            problems.append(f"{where}/{bug}: {content}")
        else:
            read_bug = True
            problems.extend(f"{where}/{bug}: {p}" for p in content.problems)
            unread.extend(Refusal(f"{_origin(where, bug)}!{r.path}", r.reason) for r in content.unread)
            for key, value in content.facts.items():
                layout.facts[f"bug_report_{key}"] = value
            if "collected_at" not in layout.facts and content.facts.get("collected_at"):
                layout.facts["collected_at"] = content.facts["collected_at"]
            content.beside(layout, f"{SOURCE} {bug}")
    problems.extend(f"{where}: {p}" for p in system_log(layout, files, where))
    for member, command in SINFO:
        if member in files and files[member].strip():
            text = files[member].decode("utf-8", "replace")
            origin = _origin(where, member)
            layout.add(Output("sinfo", text, command, exit_code="-", note=SOURCE, origin=origin))
    if not read_bug and layout.has("nvidia-smi"):
        layout.not_carried(("nvidia-smi-q",), SMI_TABLE_NOTE)
    layout.not_carried(ALL_KINDS, NOT_CARRIED_NOTE)


def system_log(
    layout: NodeLayout,
    files: dict[str, bytes],
    where: str,
    logs: tuple[tuple[str, str], ...] = SYSTEM_LOGS + EKS_SYSTEM_LOGS,
) -> list[str]:
    """The node's copy of ``/var/log/kern.log`` (else ``syslog``; an EKS node's
    ``eks-logs/var_log/messages`` or ``syslog``) cut at each boot: the boots before the running one are
    kernel logs of those boots (``cmd/dmesg-boot-1-kern.log.txt``...), its last boot the kernel log
    only where the node has none (``dmesg -T`` and the bug report's repeat it).  Returns what is said
    of it."""
    for member, command in logs:
        if member not in files or not files[member].strip():
            continue
        cut = boots.by_boot(files[member].decode("utf-8", "replace"))
        origin = _origin(where, member)
        for boot, first, text in cut.earlier:
            layout.add(
                Output(
                    "dmesg",
                    text,
                    command,
                    exit_code="-",
                    name=boots.output_name(boot, member),
                    note=f"{SOURCE}: the kernel lines of {member} in boot {boot}",
                    origin=origin,
                    first_line=first,
                )
            )
        said = []
        if not layout.has("dmesg") and cut.current.strip():
            layout.add(
                Output(
                    "dmesg",
                    cut.current,
                    command,
                    exit_code="-",
                    note=f"{SOURCE}: no dmesg; the lines of {member}'s last boot",
                    origin=origin,
                    first_line=cut.current_line,
                )
            )
        if cut.earlier:
            said.append(
                f"{member} holds {len(cut.earlier) + cut.dropped} boots before its last one (told by "
                f"{boots.how_words(cut.how)}): read as boots -1 to -{len(cut.earlier)}"
                + (f"; {cut.dropped} older boots not read" if cut.dropped else "")
            )
        return said
    return []


def _share_sinfo(layouts: list[NodeLayout]) -> None:
    """The older script runs ``sinfo -R`` on the head node only: its listing (the whole cluster's nodes
    out of service) is every host's, cited at the head node's file."""
    shared = [o for layout in layouts for o in layout.outputs if o.kind == "sinfo"]
    for layout in layouts:
        if shared and not layout.has("sinfo"):
            o = shared[0]
            layout.add(Output("sinfo", o.text, o.command, exit_code="-", note=o.note, origin=o.origin))


def describe_blocks(text: str) -> list[tuple[str, int, str]]:
    """``kubectl describe nodes`` cut into its nodes: (node name, first line, block), each block from its
    ``Name:`` line to the next.

    >>> [(n, ln) for n, ln, _ in describe_blocks("Name:  a\\nRoles: <none>\\n\\n\\nName:  b\\n")]
    [('a', 1), ('b', 5)]
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Name:")]
    out = []
    for k, i in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        out.append((lines[i].split(":", 1)[1].strip(), i + 1, "".join(lines[i:end])))
    return out


def kubectl_nodes(layouts: list[NodeLayout], data: bytes, where: str) -> list[str]:
    """Each ``kubectl describe nodes`` block laid out on its instance's node as a ``placement`` output
    (HyperPod names EKS nodes ``hyperpod-i-<instance id>``); what is said of the rest."""
    by_iid = {
        layout.facts.get("instance_id", ""): layout for layout in layouts if layout.facts.get("instance_id")
    }
    said, unmatched = [], []
    for name, first, block in describe_blocks(data.decode("utf-8", "replace")):
        iid = _IID.search(name.lower())
        layout = by_iid.get(iid.group(0) if iid else "")
        if layout is None:
            unmatched.append(name)
            continue
        layout.add(
            Output(
                "placement",
                block,
                f"kubectl describe nodes  # {name}",
                exit_code="-",
                note=f"{SOURCE} {KUBECTL}: the node's own block",
                origin=f"{where}!{NODES_DESCRIBE}",
                first_line=first,
            )
        )
    if unmatched:
        said.append(
            f"{where}!{NODES_DESCRIBE}: {len(unmatched)} Kubernetes node(s) match no instance of the report, "
            f"not read: {', '.join(unmatched[:10])}"
        )
    return said


# -- small helpers -----------------------------------------------------------------------------------


def _origin(where: str, member: str) -> str:
    """How evidence names a file of one node: inside its instance tarball (``instances/x.tar.gz!m``), or
    in the older layout's host folder (``worker/<host>/m``)."""
    return f"{where}!{member}" if where.endswith((".tar.gz", ".tgz")) else f"{where}/{member}"


def _group_and_iid(name: str) -> tuple[str, str]:
    """``instances/<group>_<instance-id>.tar.gz`` -> (group, instance id)."""
    base = name.rsplit("/", 1)[-1].removesuffix(".tar.gz").removesuffix(".tgz")
    group, sep, iid = base.rpartition("_i-")
    return (group, f"i-{iid}") if sep else ("", "")


def _error(result: dict[str, Any]) -> str:
    error = _text(result.get("Error")) or "no error given"
    error = " ".join(error.split())
    return error if len(error) <= 300 else error[:297] + "..."


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _first_line(data: bytes | None) -> str:
    if not data:
        return ""
    text = data[:_MAX_FACT].decode("utf-8", "replace").strip()
    return text.splitlines()[0].strip() if text else ""


def _iso(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _folder_time(inner: str) -> str:
    """``hyperpod_report_<group>_<id>_<YYYYmmdd_HHMMSS>`` (``date -u``) -> ISO UTC."""
    m = _INNER.match(inner)
    return _compact(m.group("ts")) if m else ""


def _compact(ts: str) -> str:
    try:
        return _iso(datetime.strptime(ts, "%Y%m%d_%H%M%S").replace(tzinfo=timezone.utc))
    except ValueError:
        return ""


def _date_u(text: str) -> str:
    """``date -u`` in the C locale ('Mon Jan 26 14:30:25 UTC 2026') -> ISO UTC."""
    try:
        return _iso(
            datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S UTC %Y").replace(tzinfo=timezone.utc)
        )
    except ValueError:
        return ""


def _summary_time(summary: dict[str, Any]) -> str:
    """summary.json's ``timestamp`` (``datetime.now(timezone.utc).isoformat()``), else its report id."""
    stamp = _text(summary.get("timestamp"))
    try:
        when = datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        when = None
    if when is not None and when.tzinfo is not None:
        return _iso(when)
    m = _TS.fullmatch(_text(summary.get("report_id")))
    return _compact(m.group(1)) if m else ""
