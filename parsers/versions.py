"""Software versions of the GPU/EFA stack: EFA installer, efa module, libfabric, aws-ofi-nccl, NCCL, CUDA, driver.

What it reads: collector.sh's own ``key=value`` lines (``cmd/versions.txt``), ``cat
/opt/amazon/efa_installed_packages`` and ``modinfo efa`` (a file each), or several outputs in one file,
each after a ``--- <command>`` line::

    echo "efa_installer=... nccl=2.21.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5) ..."  # its own key=value
    cat /opt/amazon/efa_installed_packages
    modinfo efa; cat /sys/module/efa/version; dkms status
    ls /opt/amazon/ofi-nccl/lib/libnccl-net.so /usr/lib/x86_64-linux-gnu/libnccl.so.*
    grep -H . /sys/class/infiniband/*/device/p2p

Sample (hand-written, in the formats of the fixtures and of collector.sh's key=value lines)::

    --- cat /opt/amazon/efa_installed_packages
    # EFA installer version: 1.7.0
    efa-1.4.1-1.amzn2.x86_64 libfabric-aws-1.8.1amzn1.2-1.amzn2.x86_64 openmpi40-aws-4.0.2-1.amzn2.x86_64
    --- modinfo efa
    version:        2.17.3g
    efa/2.17.3, 6.1.0-1030-aws, x86_64: installed
    nccl=2.21.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5)

Also read: RPM NVRs and deb names (``rpm -qa``, ``dpkg -l``), ``nvcc --version``, the nvidia-smi banner
(``Driver Version`` / ``CUDA Version``), ``/proc/driver/nvidia/version``, ``fi_info --version``,
``Fabric Manager version is : ...``, ``NET/OFI Initializing aws-ofi-nccl 1.9.1``, ``NCCL version``,
shared-object file names (``libnccl.so.2.21.5``, ``libnvidia-ml.so.550.54.15``, ``libnccl-net.so``),
``/usr/local/cuda-12.2``, and a bare value after ``cat /sys/module/efa/version``, ``uname -r`` or
``cat .../device/p2p``.  Command lines pasted with or without a prompt set that context; ``#``
comments are skipped.  An unrecognised line becomes a ParseIssue.  A capture that is only such a bare
value (``2.17.3g``) with its command in the bundle's manifest (``parse``'s ``command``) is read under
that command, as if it had been pasted above it.

Package lists: ``dpkg -l`` (its ``Desired=``/``||/ Name`` header is skipped; status, architecture and
description go to ``extra``), ``apt list --installed`` (``libnccl2/unknown,now 2.18.3-1+cuda12.2 amd64
[installed]``: suite, architecture and state in ``extra``; ``Listing...`` and apt's CLI warning are
skipped), ``rpm -qa`` NVRs one per line or space-separated (the efa_installed_packages line; the
architecture and the word as printed go to ``extra``, and a word among them that is not a package is a
ParseIssue while the others are kept); a file of such lines alone (``rpm -qa | grep -E
'efa|libfabric|rdma'``, ``dpkg -l | grep efa``) is detected as this kind, and a script's banner lines
(``=== What RDMA-related RPMs are installed ===``) are skipped.  ``package efa is not installed`` (rpm -q)
and ``dpkg-query: no packages found matching efa`` give a row without a version (detail ``NAME: not
installed``; a module built into the kernel has no package).  The installer's own ``env.sh``
(``EFA_INSTALLER_VERSION=1.24.1``) gives efa_installer (source ``file``).  Every package is kept: a name the rules know becomes its component (``libnccl2`` -> nccl, ``efa``/``efa-gdr`` -> efa_module, ``libfabric-aws``/``libfabric1-aws`` -> libfabric,
``rdma-core`` -> rdma_core, ``gdrdrv-dkms`` -> gdrcopy,
``nvidia-driver-535``/``cuda-drivers``/``kmod-nvidia-latest-dkms`` -> nvidia_driver, ``cuda-toolkit-12-2``
-> cuda), any other its name in snake case.  ``modinfo`` opens a row at ``filename:`` (version null until
``version:`` is read: in-tree modules often have none) and keeps every other key as printed in ``extra``
(``srcversion``, ``vermagic``, ``depends``, repeated ``alias``/``parm`` as lists).  Kernel log lines give
the driver a module loaded: ``Elastic Fabric Adapter (EFA) v2.6.0g`` (efa_module), ``Elastic Network
Adapter (ENA) v2.8.1g`` (ena_module), ``NVRM: loading NVIDIA UNIX ... Kernel Module  535.104.05``
(nvidia_driver), source ``dmesg``; other stamped kernel lines are skipped (this is not the dmesg parser).
Travel noise (launcher tags, kept in ``host``; prompts, whose command sets the context as above; fences,
elisions) is taken off by ``parsers._text.clean_lines``.

Schema
------
``software_version`` (one row per version found):

- ``line`` int — line it was read from
- ``component`` str — efa_installer, efa_module, libfabric, ofi_nccl, nccl, cuda, cuda_runtime,
  cuda_driver_max, nvidia_driver, kernel, os, rdma_core, openmpi, gdrcopy, fabricmanager,
  efa_p2p (version = the p2p provider, e.g. ``NVIDIA``), or the package name in snake case
- ``version`` str — as printed (``2.17.3g``, ``1.8.1amzn1.2``); null when only presence is known
- ``source`` str — collector, efa_installed_packages, package, modinfo, dkms, sysfs, file, nvcc,
  nvidia-smi, proc, fi_info, fabricmanager, nccl-log, command
- ``path`` str — file the version belongs to, when printed
- ``detail`` str — package name and release, or dkms kernel/arch/status
- ``extra`` str — JSON object of what else the line or block printed (modinfo keys, dpkg status/arch/
  description, apt suite/arch/state), else null
- ``host`` str — launcher tag of the line (pdsh host, srun rank, pod), else null

Examples
--------
>>> rows = parse(SAMPLE).rows("software_version")
>>> [(r["component"], r["version"], r["source"]) for r in rows]  # doctest: +NORMALIZE_WHITESPACE
[('efa_installer', '1.7.0', 'efa_installed_packages'), ('efa_module', '1.4.1', 'efa_installed_packages'),
 ('libfabric', '1.8.1amzn1.2', 'efa_installed_packages'), ('openmpi', '4.0.2', 'efa_installed_packages'),
 ('efa_module', '2.17.3g', 'modinfo'), ('efa_module', '2.17.3', 'dkms'), ('nccl', '2.21.5', 'collector')]
>>> rows[-1]["path"], rows[5]["detail"]
('/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5', '6.1.0-1030-aws, x86_64: installed')
"""  # noqa: E501

from __future__ import annotations

import json
import re
from typing import Any

from parsers._base import Column, ParseError, ParseIssue, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_head_text, clean_lines, keep_value, key_value, snake

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="versions",
    title="Software versions (EFA installer, efa module, libfabric, aws-ofi-nccl, NCCL, CUDA, driver)",
    commands=(
        "collector.sh's key=value lines (efa_installer=, nccl=, cuda=, nvidia_driver=, ...)",
        "cat /opt/amazon/efa_installed_packages",
        "rpm -qa | grep -E 'efa|libfabric|rdma'",
        "dpkg -l | grep efa",
        "apt list --installed",
        "cat aws-efa-installer/env.sh",
        "modinfo efa",
        "cat /sys/module/efa/version",
        "dkms status",
        "ls /opt/amazon/ofi-nccl/lib/libnccl-net.so /usr/lib/x86_64-linux-gnu/libnccl.so.*",
        "grep -H . /sys/class/infiniband/*/device/p2p",
    ),
    tables=("software_version",),
    versions_seen=(
        "EFA installer 1.5.1-1.24.1 (AL2/el8 RPMs, Ubuntu debs)",
        "efa 1.13.0g-2.17.3g (modinfo, dkms 3.x)",
        "rdma-core 60.0 (el9 rpm -qa)",
    ),
)

SCHEMA = {
    "software_version": (
        Column("line", "int", "line it was read from"),
        Column("component", "str", "software component"),
        Column("version", "str", "version as printed"),
        Column("source", "str", "format it came from"),
        Column("path", "str", "file the version belongs to"),
        Column("detail", "str", "package name/release or dkms kernel and status"),
        Column("extra", "str", "JSON object of the other fields printed with it"),
        Column("host", "str", "launcher tag of the line"),
    )
}

_COMMAND = re.compile(
    r"^(?:---\s*|\S*[$#]\s+|[$#]\s*)?(?:sudo\s+)?(?P<cmd>(?:modinfo|cat|dkms|ls|find|grep|readlink|realpath|"
    r"strings|rpm|dpkg|nvcc|nvidia-smi|uname|fi_info|nv-fabricmanager|ldconfig|echo)\b(?!:).*)$"
)
_KEY_VALUE = re.compile(r"^(?P<key>[a-z][a-z0-9_]*|PRETTY_NAME)=(?P<value>.*)$")
_RPM = re.compile(
    r"^(?P<name>[\w.+-]+?)-(?P<ver>\d[\w.+~]*)-(?P<rel>[\w.+~]+)\.(?P<arch>x86_64|aarch64|noarch|i686)$"
)
_DEB = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9.+-]*)_(?P<ver>\d[\w.+~:-]*)_(?P<arch>amd64|arm64|all)(?:\.deb)?$"
)
_DKMS = re.compile(r"^(?P<mod>[\w.-]+)(?:/|,\s*)(?P<ver>\d[\w.+~-]*)(?P<detail>(?:,\s*[^,:]+)*:\s*\w.*)$")
_MODULES = {"efa": "efa_module", "nvidia": "nvidia_driver", "gdrdrv": "gdrcopy"}
_PACKAGES = (
    (r"libfabric(?:1)?(?:-aws)?(?:-bin)?", "libfabric"),
    (r"rdma-core", "rdma_core"),
    (r"efa(?:-gdr)?", "efa_module"),
    (r"openmpi\d*-aws", "openmpi"),
    (r"(?:libnccl-ofi|aws-ofi-nccl)(?:-aws)?", "ofi_nccl"),
    (r"libnccl2?", "nccl"),
    (r"nvidia-fabricmanager(?:-\d+)?", "fabricmanager"),
    (r"gdrcopy|libgdrapi|gdrdrv(?:-dkms)?", "gdrcopy"),
    (
        r"nvidia-driver(?:-\d+)?(?:-server|-open)?|cuda-drivers(?:-\d+)?|kmod-nvidia-(?:latest|open)-dkms",
        "nvidia_driver",
    ),
    (r"cuda(?:-toolkit)?-\d+-\d+", "cuda"),
)
#: (pattern over one line, component, source); group 1 is the version.
_LINES = (
    (re.compile(r"^#?\s*EFA installer version:\s*(\S+)"), "efa_installer", "efa_installed_packages"),
    (re.compile(r"^(?:export\s+)?EFA_INSTALLER_VERSION=[\"']?(\d[\w.]*)[\"']?$"), "efa_installer", "file"),
    (re.compile(r"Cuda compilation tools, release [\d.]+, V(\S+)"), "cuda", "nvcc"),
    (re.compile(r"Driver Version\s*:\s*(\d[\d.]+)"), "nvidia_driver", "nvidia-smi"),
    (re.compile(r"CUDA Version\s*:\s*(\d[\d.]+)"), "cuda_driver_max", "nvidia-smi"),
    (re.compile(r"NVRM version: .*?Kernel Module(?: for \S+)?\s+(\d[\d.]+)"), "nvidia_driver", "proc"),
    (re.compile(r"^libfabric:\s*(\d\S*)"), "libfabric", "fi_info"),
    (re.compile(r"^libfabric api:\s*(\d\S*)"), "libfabric_api", "fi_info"),
    (re.compile(r"Fabric Manager version is\s*:\s*(\S+)"), "fabricmanager", "fabricmanager"),
    (re.compile(r"Initializing aws-ofi-nccl (\d\S*?)(?:-aws)?$"), "ofi_nccl", "nccl-log"),
    (re.compile(r"NCCL version (\d+\.\d+\.\d+)"), "nccl", "nccl-log"),
    (re.compile(r"Elastic Fabric Adapter \(EFA\) v(\d\S*)"), "efa_module", "dmesg"),
    (re.compile(r"Elastic Network Adapter \(ENA\) v(\d\S*)"), "ena_module", "dmesg"),
    (re.compile(r"NVRM: loading NVIDIA UNIX .*Kernel Module\s+(\d[\d.]+)"), "nvidia_driver", "dmesg"),
)
_DMESG_STAMP = re.compile(r"^\[\s*\d+\.\d+\]|^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]")
_DPKG_HEADER = re.compile(r"^(?:Desired=|\| Status=|\|/ Err\?=|\|\|/ Name\b|\+\+\+-=)")
_DPKG = re.compile(r"^(?P<status>[a-zA-Z][a-zA-Z ]?[a-zA-Z ]?)\s+(?P<name>[a-z0-9][\w.+:-]*)\s+(?P<ver>\S+)\s+"
                   r"(?P<arch>amd64|arm64|all|i386|ppc64el|s390x)(?:\s+(?P<desc>.*))?$")  # fmt: skip
_APT = re.compile(
    r"^(?P<name>[a-z0-9][\w.+-]*)/(?P<suite>\S+)\s+(?P<ver>\S+)\s+(?P<arch>\S+)(?:\s+\[(?P<state>[^\]]+)\])?$"
)
_APT_NOISE = re.compile(r"^(?:Listing\.\.\.|WARNING: apt does not have a stable CLI interface)")
_BANNER = re.compile(
    r"^(?:={2,}|#{2,}|\*{2,})\s.*\s(?:={2,}|#{2,}|\*{2,})$|^={3,}$"
)  # "=== RPMs installed ==="
_NOT_INSTALLED = re.compile(
    r"^(?:package (?P<rpm>[\w.+-]+) is not installed|dpkg-query: no packages found matching (?P<deb>[\w.+*-]+))$"
)
#: (pattern over a path, component, version group or None for presence only)
_FILES = (
    (re.compile(r"libnccl\.so\.(\d+\.\d+\.\d+)"), "nccl"),
    (re.compile(r"libnccl-net[\w-]*\.so"), "ofi_nccl"),
    (re.compile(r"libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$"), "nvidia_driver"),
    (re.compile(r"libcudart\.so\.(\d+\.\d+\.\d+)"), "cuda_runtime"),
    (re.compile(r"^/usr/local/cuda-(\d+\.\d+)/?$"), "cuda"),
)
_MODINFO_KEYS = frozenset(
    ("license", "description", "author", "srcversion", "alias", "depends", "retpoline", "intree", "name")
    + ("vermagic", "sig_id", "signer", "sig_key", "sig_hashalgo", "signature", "parm", "import_ns", "softdep")
)


_MISSING = re.compile(
    r"modinfo: ERROR: Module ([\w-]+) not found"
    r"|^(?:cat|ls|grep): (?:cannot access )?'?([^':]+)'?: No such file"
)


def detect(text: str) -> int:
    """Confidence that text is a versions capture."""
    text = clean_head_text(text)
    if "EFA installer version:" in text or re.search(r"^(?:export\s+)?EFA_INSTALLER_VERSION=\S", text, re.M):
        return 90
    keys = "efa_installer|efa_module|libfabric|ofi_nccl|nccl|cuda|nvidia_driver|gdrcopy|fabricmanager"
    if len(re.findall(rf"^\W*(?:{keys})=", text, re.MULTILINE)) >= 2:
        return 85
    if re.search(r"^\W*efa(?:/|,\s*)\d[\w.]*,.*:\s*(?:installed|built|added)", text, re.MULTILINE):
        return 70
    if re.search(r"modinfo efa|/sys/module/efa/version", text):
        return 60
    if re.search(r"^filename:\s+/\S+\.ko\b", text, re.MULTILINE) and re.search(r"^vermagic:", text, re.M):
        return 60  # a modinfo block of any module
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    packages = [line for line in lines if _DPKG.match(line) or _APT.match(line) or _rpm_line(line)]
    rest = [x for x in lines if not (_DPKG_HEADER.match(x) or _APT_NOISE.match(x) or _BANNER.match(x))]
    if packages and len(packages) * 2 >= len(rest):
        return 55  # dpkg -l / apt list --installed / rpm -qa lines
    return 50 if re.search(r"libnccl\.so\.\d+\.\d+\.\d+|libnccl-net[\w-]*\.so", text) else 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    """Parse; a capture that gives no version by itself (a bare ``cat /sys/module/efa/version`` value)
    is read again under its manifest ``command`` line, with the file's own line numbers.

    >>> parse("2.17.3g\\n", command="cat /sys/module/efa/version").rows("software_version")[0]["line"]
    1
    """
    if not command:
        return _parse(text)
    try:
        return _parse(text)
    except ParseError as alone:
        if not _COMMAND.match(command.strip()):
            raise
        failure = alone
    try:
        result = _parse(command.strip() + "\n" + text)
    except ParseError:
        raise failure from None
    for table, rows in result.tables.items():  # a row read off the command line itself is not the file's
        result.tables[table] = [{**row, "line": row["line"] - 1} for row in rows if row["line"] > 1]
    result.issues = [ParseIssue(i.line_no - 1, i.line, i.reason) for i in result.issues if i.line_no > 1]
    if not result.rows("software_version"):
        raise failure
    return result


def _parse(text: str) -> ParseResult:
    require_text(text)
    state = _State()
    cleaned = clean_lines(text)
    raw = text.splitlines()
    commands = dict(cleaned.commands)
    for no, line in enumerate(cleaned.lines, start=1):
        state.host = cleaned.hosts[no - 1] if cleaned.hosts else None
        if no in commands:
            state.line(no, "--- " + commands[no])  # a prompt's command sets the context
            continue
        line = line.strip()
        if line and not state.line(no, line):
            state.result.issue(no, raw[no - 1], "unrecognised line")
    rows = state.result.rows("software_version")
    if not rows:
        seen = next((x.strip()[:80] for x in cleaned.lines if x.strip()), "")
        raise ParseError(
            "expected version lines (key=value, efa_installed_packages, modinfo, dpkg -l, rpm -qa, "
            f"nvidia-smi/nvcc banners, library paths); saw {seen!r}"
        )
    for row in rows:
        extra = row.pop("_extra", None)
        row["extra"] = json.dumps(extra, sort_keys=True) if extra else None
    return state.result


def _skipped(line: str) -> bool:
    """A line with no version to read: a comment ("# Debug packages installed: no", prose), dpkg's header,
    apt's notes, banners, a kernel log line without a version (the dmesg parser reads those)."""
    return bool(
        line.startswith("#")
        or _DPKG_HEADER.match(line)
        or _APT_NOISE.match(line)
        or _BANNER.match(line)
        or _DMESG_STAMP.match(line)
    )


class _State:
    """The commands seen so far give meaning to bare values that follow them."""

    def __init__(self) -> None:
        self.result = ParseResult(tables={"software_version": []})
        self.pending: list[str] = []  # commands whose bare-value output has not been seen yet
        self.module: str | None = None  # the module of the modinfo block being read
        self.modpath: str | None = None
        self.modrow: dict[str, Any] | None = None  # the row of the modinfo block being read
        self.packages_file = False
        self.host: str | None = None

    def add(self, no: int, component: str, version: str | None, source: str, **extra: Any) -> bool:
        row = {"line": no, "component": component, "version": version or None, "source": source}
        row.update(path=None, detail=None, _extra=extra.pop("_extra", None), host=self.host)
        self.result.add("software_version", {**row, **extra})
        return True

    def line(self, no: int, line: str) -> bool:
        if m := _NOT_INSTALLED.match(line):  # rpm -q / dpkg -l answering for a package it does not have
            name = m["rpm"] or m["deb"]
            return self.add(no, _package_component(name), None, "package", detail=f"{name}: not installed")
        cmd = _COMMAND.match(line)
        if cmd or line.startswith("---"):
            self.command(cmd["cmd"] if cmd else line.lstrip("- "))
            return True
        if self.catalogued(no, line) or _skipped(line):
            return True
        if m := _KEY_VALUE.match(line):
            return self.key_value(no, m["key"], m["value"].strip())
        if m := _DKMS.match(line):
            return self.add(no, _MODULES.get(m["mod"], snake(m["mod"])), m["ver"], "dkms",
                            detail=m["detail"].lstrip(", :") or None)  # fmt: skip
        if m := _MISSING.search(line):
            return self.missing(no, m.group(1) or "", m.group(2) or "")
        if line.startswith("/"):
            path, _, value = line.partition(":")
            return self.path_line(no, path, value.strip())
        return self.words(no, line)

    def command(self, command: str) -> None:
        """A command line: what the bare values after it answer (a modinfo's module among them)."""
        self.pending.append(command)
        self.packages_file |= "efa_installed_packages" in command
        if mod := re.search(r"modinfo\s+(?:-F\s+\w+\s+)?([\w-]+)", command):
            self.module, self.modpath, self.modrow = mod.group(1), None, None

    def catalogued(self, no: int, line: str) -> bool:
        """The versions the catalogue of lines finds (the nvidia-smi banner carries two)."""
        found = [(c, m.group(1), s) for p, c, s in _LINES if (m := p.search(line))]
        for component, version, source in found:
            self.packages_file |= component == "efa_installer"
            self.add(no, component, version, source)
        return bool(found)

    def words(self, no: int, line: str) -> bool:
        """A line of words: a file of a listing, a dpkg / apt / rpm package line, a modinfo key, a bare value."""
        tokens = line.split()
        if file := next((t for t in tokens if any(p.search(t) for p, _ in _FILES)), None):
            return self.path_line(no, file, "")  # ls -l, ldconfig -p
        if m := _DPKG.match(line):  # dpkg -l
            extra = {"status": m["status"].strip(), "arch": m["arch"], "description": m["desc"]}
            name = m["name"]
            return self.package(no, name.split(":")[0], m["ver"], None, printed=name, extra=extra)
        if m := _APT.match(line):  # apt list --installed
            extra = {"suite": m["suite"], "arch": m["arch"], "state": m["state"]}
            return self.package(no, m["name"], m["ver"], None, extra=extra)
        if (kv := key_value(line)) is not None:
            return self.modinfo(no, *kv)
        matches = [(t, _RPM.match(t) or _DEB.match(t)) for t in tokens]
        packages = [(t, m) for t, m in matches if m is not None]
        if packages and (len(packages) * 2 >= len(tokens) or self.packages_file):
            for token, m in packages:
                extra = {"arch": m["arch"], "printed": token}
                self.package(no, m["name"], m["ver"], m.groupdict().get("rel"), extra=extra)
            if odd := [t for t, m in matches if m is None]:  # a word among the packages that is not one
                self.result.issue(no, line, f"not a package name-version: {' '.join(odd)[:120]}")
            return True
        return len(tokens) == 1 and self.bare_value(no, line)

    def key_value(self, no: int, key: str, value: str) -> bool:
        value = value.strip("\"'")
        path = None
        if m := re.match(r"^(.*?)\s*\((/[^()]*)\)$", value):
            value, path = m.group(1), m.group(2)
        component = "os" if key == "PRETTY_NAME" else key
        parts = [p.strip() for p in value.split(",")]
        if len(parts) > 1 and all(p[:1].isdigit() for p in parts):  # nccl=2.21.5,2.18.3: several installed
            return all(self.add(no, component, p, "collector", path=path) for p in parts)
        return self.add(no, component, value, "collector", path=path)

    def modinfo(self, no: int, key: str, value: str) -> bool:
        if key == "filename":
            self.modpath = value
            self.module = re.sub(r"\.ko(?:\.\w+)?$", "", value.rsplit("/", 1)[-1])
            self.add(no, _module(self.module), None, "modinfo", path=value, _extra={})
            self.modrow = self.result.rows("software_version")[-1]
            return True
        if key == "version":
            if self.modrow is not None and self.modrow["version"] is None:
                self.modrow.update(version=value or None, line=no)
                return True
            self.add(no, _module(self.module or "efa"), value, "modinfo", path=self.modpath, _extra={})
            self.modrow = self.result.rows("software_version")[-1]
            return True
        known = key in _MODINFO_KEYS
        if not known and not re.fullmatch(r"[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2})*:?", key):
            return False
        if self.modrow is not None and known:
            keep_value(self.modrow["_extra"], key, value)
        return True

    def path_line(self, no: int, path: str, value: str) -> bool:
        if m := re.search(r"/sys/module/([\w-]+)/version$", path):
            return bool(value) and self.add(no, _module(m.group(1)), value, "sysfs", path=path)
        if path.endswith("/device/p2p"):
            return self.add(no, "efa_p2p", value, "sysfs", path=path)
        for pattern, component in _FILES:
            if m := pattern.search(path):
                return self.add(no, component, m.group(1) if m.groups() else None, "file", path=path)
        return True  # other files of a listing

    def package(
        self,
        no: int,
        name: str,
        version: str,
        release: str | None,
        printed: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> bool:
        component = _package_component(name)
        source = "efa_installed_packages" if self.packages_file else "package"
        detail = f"{name}-{version}-{release}" if release else (printed or name)
        kept = {k: v for k, v in (extra or {}).items() if v}
        return self.add(no, component, version, source, detail=detail, _extra=kept or None)

    def bare_value(self, no: int, value: str) -> bool:
        """A value printed alone: the oldest pending command that prints such a value owns it."""
        for i, command in enumerate(self.pending):
            sysfs = re.search(r"/sys/(?:module/([\w-]+)/version|class/infiniband/\S*/device/p2p)", command)
            modinfo = re.search(r"modinfo\s+-F\s+version\s+([\w-]+)", command)
            module = (sysfs.group(1) if sysfs else None) or (modinfo.group(1) if modinfo else None)
            if value[:1].isdigit() and module:
                component = _module(module)
            elif value[:1].isdigit() and re.match(r"uname\s+-r", command):
                component = "kernel"
            elif sysfs and not sysfs.group(1):
                component = "efa_p2p"
            else:
                continue
            del self.pending[i]
            path = sysfs.group(0) if sysfs else None
            source = "sysfs" if sysfs else "modinfo" if modinfo else "command"
            return self.add(no, component, value, source, path=path)
        return False

    def missing(self, no: int, module: str, path: str) -> bool:
        """``modinfo: ERROR: Module efa not found``, ``cat: FILE: No such file``: a real answer."""
        if module:
            return self.add(no, _module(module), None, "modinfo", detail="not found")
        component = "efa_installer" if path.endswith("efa_installed_packages") else None
        if m := re.search(r"/sys/module/([\w-]+)/", path):
            component = _module(m.group(1))
        component = component or next((c for p, c in _FILES if p.search(path)), None)
        return component is None or self.add(no, component, None, "file", path=path, detail="not found")


def _package_component(name: str) -> str:
    return next((c for p, c in _PACKAGES if re.fullmatch(p, name)), None) or snake(name)


def _rpm_line(line: str) -> bool:
    """A line of ``rpm -qa`` output: NVRs only (``rdma-core-60.0-1.el9.x86_64``)."""
    return bool(line.split()) and all(_RPM.match(t) for t in line.split())


def _module(name: str) -> str:
    return _MODULES.get(name, f"{snake(name)}_module")
