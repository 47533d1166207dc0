"""The EKS log collector's tarball (awslabs/amazon-eks-ami ``log-collector-script/linux/eks-log-collector.sh``)
as a node bundle.

The script gathers everything under ``/tmp/eks-log-collector`` in fixed folders (``kernel``, ``system``,
``storage``, ``var_log``, ``networking``, ``gpu``...) and packs it with ``tar --create --gzip
--directory=/tmp/eks-log-collector .`` as ``eks_<instance-id>_<YYYY-mm-dd_HHMM-UTC>_<version>.tar.gz``,
so every member starts with ``./``.  The files read here:

- ``kernel/dmesg.human.current`` (``dmesg --ctime``), else ``kernel/dmesg.current`` (``dmesg``): kind
  ``dmesg``; ``kernel/uname.txt`` (``uname -a``): the host name;
- ``system/instance-id.txt``, ``system/availability-zone.txt``, ``system/region.txt`` (from IMDS);
- ``gpu/nvidia-bug-report.log.gz`` (``nvidia-bug-report.sh --output-file .../nvidia-bug-report.log``,
  which appends ``.gz``): read by :mod:`~analyzer.intake.foreign.nvidia_bug_report`, decoded with the
  same caps, for ``nvidia-smi --query``, ``/proc/driver/nvidia/version``, nvlink and Fabric Manager.

- ``storage/mounts.txt``: ``mount``, an empty line (``echo``), then ``df --human-readable``, all in one
  file; split at that empty line into ``mounts`` (``mount``) and ``df`` (``df -h``), each citing its own
  lines of the file; ``storage/inodes.txt`` (``df --inodes``): ``df`` too.

The tarball is recognised by its member layout: no ``meta.env``, every member inside the script's own
folders, and at least one of the files only it writes (``system/script-params.txt``,
``system/instance-id.txt``, ``kernel/dmesg.current``, ``kernel/dmesg.human.current``).  Members are
read with :func:`analyzer.intake.safe_read.iter_tar` (no links, no ``..``, the size and ratio caps); a
refused member is an unread input with its reason, and is never written.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from datetime import datetime, timezone
from pathlib import Path

import analyzer.intake.foreign.boots as boots
import analyzer.intake.foreign.nvidia_bug_report as nbr
from analyzer.intake.foreign.layout import Absent, Converted, NodeLayout, Output, write_node
from analyzer.intake.safe_read import Limits, Refusal, iter_tar, open_tar, safe_member_name

SOURCE = "eks-log-collector"
NOT_CARRIED_NOTE = "not carried by the EKS log collector"
#: the script's COMMON_DIRECTORIES (plus what later versions add at the top)
FOLDERS = frozenset(
    {
        "kernel",
        "modinfo",
        "system",
        "docker",
        "containerd",
        "storage",
        "var_log",
        "networking",
        "sandbox-image",
        "ipamd",
        "sysctls",
        "kubelet",
        "nodeadm",
        "cni",
        "gpu",
    }
)
#: files only the collector writes; one of them must be there
SIGNATURE = frozenset(
    {
        "system/script-params.txt",
        "system/instance-id.txt",
        "kernel/dmesg.current",
        "kernel/dmesg.human.current",
    }
)
BUG_REPORT = "gpu/nvidia-bug-report.log.gz"
#: the system log (``tail -c 100M /var/log/messages``; Ubuntu's ``/var/log/syslog`` copied as it is),
#: whose kernel lines hold the boots before the running one
SYSLOGS = (("var_log/messages", "tail -c 100M /var/log/messages"), ("var_log/syslog", "cp /var/log/syslog"))
#: ``cp /var/log/dmesg kernel/dmesg.boot``: the kernel log as the system saved it at boot
DMESG_BOOT = "kernel/dmesg.boot"
WANTED = frozenset(
    {
        "kernel/dmesg.human.current",
        "kernel/dmesg.current",
        DMESG_BOOT,
        *(name for name, _ in SYSLOGS),
        "kernel/uname.txt",
        "system/instance-id.txt",
        "system/availability-zone.txt",
        "system/region.txt",
        "storage/mounts.txt",
        "storage/inodes.txt",
        BUG_REPORT,
    }
)
#: kinds of our bundles the script never collects in a form hptriage reads
NOT_CARRIED = tuple(k for k in nbr.NOT_CARRIED if k not in ("df", "mounts"))
MOUNTS = "storage/mounts.txt"
_GPU_KINDS = ("nvidia-smi-q", "versions", "nvidia-smi-nvlink", "fabricmanager")
_NAME = re.compile(r"^eks_(?P<iid>[^_]*)_(?P<date>\d{4}-\d\d-\d\d_\d{4})-UTC_(?P<ver>[^_]+)\.t(?:ar\.)?gz$")
_MAX_PEEK = 20000


def detect(path: Path) -> bool:
    """Whether a tarball is the EKS log collector's, by its member names (headers only, as a stream)."""
    signature = False
    seen = 0
    try:
        with open_tar(path) as archive:
            for n, info in enumerate(archive):
                if n > _MAX_PEEK:
                    break
                name = safe_member_name(info.name)
                if name is None:
                    continue  # an unsafe name is refused on reading; the layout decides here
                parts = name.split("/")
                if name == "meta.env" or parts[-1] == "meta.env":
                    return False
                if len(parts) == 1 and not info.isdir():
                    return False  # the script writes nothing at the top
                if parts[0] not in FOLDERS:
                    return False
                seen += 1
                signature = signature or name in SIGNATURE
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        pass  # damaged: decided on what was seen; reading reports the damage
    return signature and seen > 1


def convert(path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the tarball at ``path`` as a node bundle under ``dest`` (a new private work directory)."""
    refusals: list[Refusal] = []
    errors: list[str] = []
    files: dict[str, bytes] = {}
    for name, data in iter_tar(path, limits, refusals, errors):
        if name in WANTED and name not in files:
            files[name] = data
    problems = list(errors)
    layout = NodeLayout("", SOURCE, path.name)
    for name, command in (
        ("kernel/dmesg.human.current", "dmesg --ctime"),
        ("kernel/dmesg.current", "dmesg"),
    ):
        if name in files and not layout.has("dmesg"):
            text = files[name].decode("utf-8", "replace")
            layout.add(Output("dmesg", text, command, note=SOURCE, origin=f"{path.name}!{name}"))
    problems.extend(kernel_logs(layout, files, path.name))
    for output in mounts_and_df(files.get(MOUNTS), f"{path.name}!{MOUNTS}", SOURCE):
        layout.add(output)
    if "storage/inodes.txt" in files and files["storage/inodes.txt"].strip():
        text = files["storage/inodes.txt"].decode("utf-8", "replace")
        layout.add(Output("df", text, "df --inodes", note=SOURCE, origin=f"{path.name}!storage/inodes.txt"))
    if BUG_REPORT in files:
        report = nbr.read_bytes(files[BUG_REPORT], limits, origin=f"{path.name}!{BUG_REPORT}")
        if isinstance(report, str):
            problems.append(f"{BUG_REPORT}: {report}")
        else:
            problems.extend(f"{BUG_REPORT}: {p}" for p in report.problems)
            refusals.extend(Refusal(f"{BUG_REPORT}!{r.path}", r.reason) for r in report.unread)
            layout.facts.update({f"bug_report_{k}": v for k, v in report.facts.items()})
            report.beside(layout, SOURCE)
    elif not any(r.path == BUG_REPORT for r in refusals):
        gpus = gpus_without_driver(files)
        if gpus:
            layout.absent.append(
                Absent(
                    "nvidia-smi-q",
                    f"{SOURCE}: no NVIDIA driver: the kernel lists {len(gpus)} NVIDIA GPU(s) on the PCI bus "
                    f"({', '.join(gpus[:8])}) but logged no NVRM line (the driver never loaded in this boot), "
                    "and gpu/ holds no nvidia-bug-report (the collector found no nvidia-bug-report.sh)",
                    exit_code="9",
                    command="eks-log-collector.sh get_nvidia_bug_report",
                )
            )
            problems.append(
                f"no {BUG_REPORT}, and the kernel lists {len(gpus)} NVIDIA GPU(s) with no NVRM line: the NVIDIA "
                "driver is not there (read as nvidia-smi's 'driver not loaded', exit 9)"
            )
        else:
            problems.append(f"no {BUG_REPORT} in the tarball (no NVIDIA driver on the node, or it was cut)")
    if all(o.kind in ("mounts", "df") for o in layout.outputs):
        reason = "EKS log collector tarball without a kernel log or an nvidia-bug-report hptriage reads"
        return Converted(problems=problems, reason="; ".join([reason, *errors]), refusals=refusals)
    facts = layout.facts
    facts.update(_facts(path, files))
    layout.node = (
        facts.get("hostname")
        or facts.get("bug_report_hostname")
        or facts.get("instance_id")
        or path.name.split(".")[0]
    )
    layout.not_carried(NOT_CARRIED + ("dmesg", "df", "mounts", *_GPU_KINDS), NOT_CARRIED_NOTE)
    return Converted([write_node(dest / "node", layout)], problems=problems, refusals=refusals)


def mounts_and_df(data: bytes | None, origin: str, note: str) -> list[Output]:
    """``storage/mounts.txt`` as the script writes it (``mount``; ``echo``; ``df --human-readable``):
    the mount table and the df table, each with the line of the file it starts at.  A file without the
    empty line is the mount table alone (df was cut or failed)."""
    if not data or not data.strip():
        return []
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    blank = next((i for i, line in enumerate(lines) if not line.strip()), len(lines))
    outputs = []
    mount = "".join(lines[:blank])
    if mount.strip():
        outputs.append(Output("mounts", mount, "mount", note=note, origin=origin))
    rest = lines[blank + 1 :]
    skip = next((i for i, line in enumerate(rest) if line.strip()), len(rest))
    df = "".join(rest[skip:])
    if df.strip():
        outputs.append(
            Output("df", df, "df --human-readable", note=note, origin=origin, first_line=blank + 2 + skip)
        )
    return outputs


def _facts(path: Path, files: dict[str, bytes]) -> dict[str, str]:
    """hostname (``uname -a``), instance_id, availability_zone, region, and from the tarball's name the
    collection time (the script names it with ``date --utc``) and the script's version."""
    facts: dict[str, str] = {}
    uname = _first_line(files.get("kernel/uname.txt"))
    if uname and len(uname.split()) > 1:
        facts["hostname"] = uname.split()[1]
    for key, name in (
        ("instance_id", "system/instance-id.txt"),
        ("availability_zone", "system/availability-zone.txt"),
        ("region", "system/region.txt"),
    ):
        value = _first_line(files.get(name))
        if value:
            facts[key] = value
    if m := _NAME.match(path.name):
        facts.setdefault("instance_id", m.group("iid"))
        facts["collector_version"] = m.group("ver")
        try:
            when = datetime.strptime(m.group("date"), "%Y-%m-%d_%H%M").replace(tzinfo=timezone.utc)
        except ValueError:
            pass
        else:
            facts["collected_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if not facts.get("instance_id"):
        facts.pop("instance_id", None)
    return facts


def _first_line(data: bytes | None) -> str:
    if not data:
        return ""
    text = data.decode("utf-8", "replace").strip()
    return text.splitlines()[0].strip() if text else ""


def kernel_logs(layout: NodeLayout, files: dict[str, bytes], tarball: str) -> list[str]:
    """The kernel logs beside dmesg: ``kernel/dmesg.boot`` where it is this boot's, and the boots
    before the running one of ``var_log/messages`` (else ``var_log/syslog``), each as the dmesg output
    of its boot (``cmd/dmesg-boot-1-messages.txt``...); the log's last boot repeats dmesg, so it is read
    only where the tarball has no dmesg.  Returns what is said of them."""
    said: list[str] = []
    current = files.get("kernel/dmesg.current", b"").decode("utf-8", "replace")
    if DMESG_BOOT in files and files[DMESG_BOOT].strip():
        text = files[DMESG_BOOT].decode("utf-8", "replace")
        last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
        if last and last in current:
            layout.add(
                Output(
                    "dmesg",
                    text,
                    "cat /var/log/dmesg",
                    name="dmesg-saved-at-boot.txt",
                    note=f"{SOURCE}: /var/log/dmesg, this boot's",
                    origin=f"{tarball}!{DMESG_BOOT}",
                )
            )
        else:
            said.append(
                f"{DMESG_BOOT} (/var/log/dmesg) is not read: no line of it is in kernel/dmesg.current, so "
                "it cannot be told to be this boot's (it may be an earlier boot's, or dmesg wrapped past it)"
            )
    for name, command in SYSLOGS:
        if name not in files or not files[name].strip():
            continue
        cut = boots.by_boot(files[name].decode("utf-8", "replace"))
        origin = f"{tarball}!{name}"
        for boot, first, text in cut.earlier:
            layout.add(
                Output(
                    "dmesg",
                    text,
                    command,
                    name=boots.output_name(boot, name),
                    note=f"{SOURCE}: the kernel lines of {name} in boot {boot}",
                    origin=origin,
                    first_line=first,
                )
            )
        if not layout.has("dmesg") and cut.current.strip():
            layout.add(
                Output(
                    "dmesg",
                    cut.current,
                    command,
                    note=f"{SOURCE}: no dmesg; the lines of {name}'s last boot",
                    origin=origin,
                    first_line=cut.current_line,
                )
            )
            said.append(
                f"no kernel/dmesg: the kernel log is {name}'s last boot (its boot not known for certain)"
            )
        if cut.earlier:
            said.append(
                f"{name} holds {len(cut.earlier) + cut.dropped} boots before its last one (told by "
                f"{boots.how_words(cut.how)}): read as boots -1 to -{len(cut.earlier)}"
                + (f"; {cut.dropped} older boots not read" if cut.dropped else "")
            )
        break  # messages and syslog hold the same kernel lines: one of them
    return said


#: ``pci 0000:10:1c.0: [10de:2330] type 00 class 0x030200``: the kernel enumerating an NVIDIA display
#: controller at boot, whatever driver binds it later
_GPU_ON_BUS = re.compile(
    r"\bpci (?P<pci>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): \[10de:[0-9a-f]{4}\] type 00 class 0x030[02]"
)


def gpus_without_driver(files: dict[str, bytes]) -> list[str]:
    """The NVIDIA GPUs the kernel listed on the PCI bus when its log holds no line of the NVIDIA driver
    (``NVRM:``, ``nvidia:``, ``nvidia 0000:``...): a GPU node whose driver never loaded in this boot; []
    when the log shows no NVIDIA GPU, or shows the driver.

    >>> gpus_without_driver({"kernel/dmesg.current": b"[ 1.2] pci 0000:10:1c.0: [10de:2330] type 00 class 0x030200\\n"})
    ['0000:10:1c.0']
    >>> gpus_without_driver({"kernel/dmesg.current": b"[ 1.2] pci 0000:10:1c.0: [10de:2330] type 00 class 0x030200\\n"
    ...                      b"[ 9.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05\\n"})
    []
    """
    texts = [
        files.get(n, b"").decode("utf-8", "replace")
        for n in ("kernel/dmesg.current", "kernel/dmesg.human.current")
    ]
    text = "\n".join(texts)
    if re.search(r"NVRM:|\bnvidia(?:-\w+)?: |\bnvidia 0000:", text):
        return []
    return sorted({m.group("pci") for m in _GPU_ON_BUS.finditer(text)})
