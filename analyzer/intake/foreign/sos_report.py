"""A sos report (sosreport/sos: ``sos report``) as a node bundle.

sos packs one host's report as ``sosreport-<host>[-<case>]-<date>-<random>.tar.xz`` (``.tar.gz`` with
``--compression-type gzip``): one top directory holding the host's copied files at their own paths
(``proc/...``, ``etc/...``), each plugin's command outputs in ``sos_commands/<plugin>/<name>``, its own
logs in ``sos_logs/`` and, since sos 4.0, ``sos_reports/manifest.json``.  Later sos 4.x's tarfile
writer adds ``version.txt``, ``sos_reports`` and ``sos_logs`` first, then the whole tree in sorted
order; Debian's sos 4.0 writes the whole tree sorted (``sos_commands/`` before ``sos_reports/``).  Beside
the report sos writes its digest, ``<report>.md5`` (sos 4.0's default; Debian) or ``.sha256`` (Red
Hat), checked by discovery (:mod:`analyzer.intake.bundle`).

The manifest (``components.report.plugins.<plugin>.commands``) lists every command a plugin ran:
``exec`` (the command line), ``filepath`` (``sos_commands/<plugin>/<name>``; null when the command
was not found, exit 126/127, and no file was written), ``return_code`` (124: timed out, the output up
to then is kept), ``truncated`` (sos >= 4.2: the output was over sos's size limit; its tail is in
``sos_strings/<plugin>/<name>.tailed``, which ``filepath`` then names, and the ``sos_commands`` path
is a link to it) and ``start_time`` (sos >= 4.3, seconds since the epoch).  A plugin that did not run
has no entry.  Without a manifest (sos 3.x) the outputs are found by their names: sos names an output
after its command (:func:`mangle`).

Read here (kind: plugin, command):

- ``nvidia-smi-q``: nvidia, ``nvidia-smi -q``; ``nvidia-smi-nvlink``: ``nvidia-smi nvlink -s`` with
  ``nvidia-smi nvlink -e`` (the error counters) appended, so the parser merges each link's counters
  into its status row (all since sos 4.3); ``nvidia-smi-csv``: ``nvidia-smi --query-gpu=...
  --format=csv`` (ten fields since sos 4.3, eight before; the command line goes with it).  A driver
  that is not loaded makes each answer "couldn't communicate with the NVIDIA driver" (exit 9), read
  as that probe's failure (``gpu.smi.unreachable``); the plugin runs only where ``nvidia-smi`` is
  installed (or is forced: then exit 127, not installed, a coverage fact);
- ``dmesg``: kernel, ``dmesg -T``, else ``dmesg``; and logs, ``journalctl --no-pager [--catalog]
  --boot -1`` (the previous boot's journal, ``cmd/dmesg-boot-1.txt``: its events are of boot -1);
  the journal of the running boot and the whole journal repeat ``dmesg`` and are not read;
- ``df``: filesys, ``df -al -x autofs`` and ``df -aliT -x autofs`` (sos 3.5-4.7.1: ``df -ali -x
  autofs``; sos < 3.5: ``df -al``, ``df -ali``);
  ``mounts``: the copied ``proc/mounts`` (the kernel's own table, as our collector reads it; sos keeps
  it behind links: ``proc/mounts -> self/mounts``, ``proc/self -> <sos's pid>``, followed inside the
  report), else ``mount -l``, else ``etc/mtab`` (``-> ../proc/self/mounts``);
- ``lfs-df``: lustre, ``lfs df`` and ``lfs df -i``;
- ``efa-ports``: infiniband, ``ibstat``, else ``ibv_devinfo -v``;
- ``uptime``: host (sos < 3.6: general), ``uptime``; ``cpu-governor``: processor, ``cpupower frequency-info``, else
  ``cpufreq-info``;
- ``versions``: the copied ``proc/driver/nvidia/version`` (kernel plugin);
- facts: the node from ``hostname`` (host plugin; general in sos < 3.6), else ``uname -a`` (kernel), else ``etc/hostname``,
  else the tarball's name; ``kernel`` from ``uname -a``; ``instance_id``, ``instance_type`` and
  ``az_id`` from the aws plugin (sos >= 4.10.1; IMDS ``placement/availability-zone-id``);
  ``collected_at`` from the manifest's first command start (epoch seconds), else ``date --utc``
  (date plugin; sos < 3.6: the general plugin's ``date`` when it printed UTC), else the manifest's
  own ``start_time`` (sos 4.0-4.2: the host's local time, zone unknown: written without a zone and
  said in a problem); ``collector_version`` from the manifest's ``version``, else ``version.txt``.

A command that failed is written with its exit code (a timeout, 124, keeps its partial output); one
with no output file is a manifest row with its exit code and no file (127: not installed).  A kind
whose plugin did not run, and the kinds sos never collects in a form hptriage reads (fi_info, iostat,
``nvidia-smi topo -m``, Fabric Manager, ``/dev/shm``, placement), are noted ``not carried by the sos
report`` with why.

Recognised by its layout: one top directory holding ``sos_reports/manifest.json``, or both
``sos_commands/`` and ``sos_logs/`` (an extracted report, a directory holding them, is read too).
Members are read in one pass with :func:`analyzer.intake.safe_read.iter_tar` (no ``..``, the size,
count and ratio caps; a link read as the file its chain resolves to inside the report).  sos keeps the
host's symlinks and adds its own (``hostname``, ``uname`` at the top); a link that leads out of the
report, is absolute or ends in a loop or in nothing is refused, and is named as an unread input only
where it stands for an output read here (most are links to what sos did not copy); every other refused
member (an unsafe name, one over the caps, the member a compression bomb stopped in) is named.  A bomb
that stops the stream before the layout showed still leaves a ``sosreport-*`` tarball whose top
directory holds ``sos_commands/`` recognised, so the member it stopped in is named.
"""

from __future__ import annotations

import json
import re
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from analyzer.intake.foreign.layout import Absent, Converted, NodeLayout, Output, write_node
from analyzer.intake.safe_read import (
    CapReached,
    Limits,
    Refusal,
    iter_dir,
    iter_tar,
    open_tar,
    safe_member_name,
)

SOURCE = "sos-report"
#: the names sos gives its tarballs (a file named so but holding something else is refused)
NAMED = re.compile(r"^sosreport-.+\.(?:tar\.(?:xz|gz|bz2)|txz|tgz)$", re.I)
NOT_CARRIED_NOTE = "not carried by the sos report"
MANIFEST = "sos_reports/manifest.json"
#: kinds of our bundles sos never collects in a form hptriage reads
NOT_CARRIED = ("fi-info", "iostat", "nvidia-smi-topo", "fabricmanager", "shm", "placement")
QUERY_GPU = (
    "nvidia-smi --query-gpu=gpu_name,gpu_bus_id,vbios_version,temperature.gpu,utilization.gpu,"
    "memory.total,memory.free,memory.used,clocks.applications.graphics,clocks.applications.memory "
    "--format=csv"
)
#: sos < 4.3 queried eight fields (no clocks), and ran no ``nvidia-smi -q`` nor ``nvlink -s``
QUERY_GPU_OLD = (
    "nvidia-smi --query-gpu=gpu_name,gpu_bus_id,vbios_version,temperature.gpu,utilization.gpu,"
    "memory.total,memory.free,memory.used --format=csv"
)
_MAX_PEEK = 100_000


@dataclass(frozen=True)
class Spec:
    """Where one kind comes from: a plugin's commands, each tried in turn (``every``: all are kept)."""

    kind: str
    plugin: str
    commands: tuple[str, ...]
    every: bool = False
    #: a command line that starts so matches too (the --query-gpu fields differ between sos versions)
    prefix: str = ""
    #: the plugin's name in older sos (3.0-3.5 ran ``hostname``, ``uptime`` and ``date`` in ``general``),
    #: tried by file name when the report has no manifest
    legacy: str = ""


SPECS = (
    Spec("nvidia-smi-q", "nvidia", ("nvidia-smi -q",)),
    Spec("nvidia-smi-nvlink", "nvidia", ("nvidia-smi nvlink -s",)),
    Spec("nvidia-smi-csv", "nvidia", (QUERY_GPU, QUERY_GPU_OLD), prefix="nvidia-smi --query-gpu="),
    Spec("dmesg", "kernel", ("dmesg -T", "dmesg")),
    # sos 3.5-4.7.1: "df -ali -x autofs"; 4.7.2 on: "df -aliT -x autofs"; sos < 3.5: no "-x autofs"
    Spec(
        "df",
        "filesys",
        ("df -al -x autofs", "df -aliT -x autofs", "df -ali -x autofs", "df -al", "df -ali"),
        every=True,
    ),
    Spec("mounts", "filesys", ("mount -l",)),
    Spec("lfs-df", "lustre", ("lfs df", "lfs df -i"), every=True),
    Spec("efa-ports", "infiniband", ("ibstat", "ibv_devinfo -v")),
    Spec("uptime", "host", ("uptime",), legacy="general"),
    Spec("cpu-governor", "processor", ("cpupower frequency-info", "cpufreq-info")),
)
#: copied files read as a kind: the paths in the report tried in turn, kind, plugin, and whether the
#: copy is read before the plugin's command (the kernel's own mount table, as our collector reads it,
#: before ``mount -l``).  sos keeps the host's links: ``proc/mounts -> self/mounts``, ``proc/self ->
#: <sos's pid>``, ``etc/mtab -> ../proc/self/mounts`` lead to ``proc/<pid>/mounts``, read through them.
COPIED = (
    (("proc/driver/nvidia/version",), "versions", "kernel", False),
    (("proc/mounts", "etc/mtab"), "mounts", "filesys", True),
)
#: sos's journal of an earlier boot (logs plugin: ``journalctl --no-pager [--catalog] --boot -1``)
_JOURNAL_BOOT = re.compile(r"^journalctl_.*--boot_(?P<n>-\d+)(?:_|$)")
#: a journal line (``-o short``: ``Jan 05 08:00:01 host ident: ...``, or ISO): a journal output
#: holding none ("-- No entries --", no persistent journal) is no kernel log
_JOURNAL_LINE = re.compile(r"^(?:\w{3} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\S* \S+ ", re.M)
#: the NVLink error counters (nvidia plugin, sos >= 4.3), appended to ``nvidia-smi nvlink -s``
NVLINK_ERRORS = "nvidia-smi nvlink -e"
#: outputs read for facts: (plugin, command or suggested file name)
FACT_FILES = {
    "hostname": ("host", "hostname"),
    "hostname_legacy": ("general", "hostname"),
    "uname": ("kernel", "uname -a"),
    "date_utc": ("date", "date --utc"),
    # plain ``date`` (general plugin in sos < 3.6): read only when it printed UTC
    "date_legacy": ("general", "date"),
    "instance_id": ("aws", "aws_metadata_instance-id.txt"),
    "instance_type": ("aws", "aws_metadata_instance-type.txt"),
    "az_id": ("aws", "aws_metadata_placement_availability-zone-id.txt"),
}
_FACT_CHECK = {
    "instance_id": re.compile(r"^i-[0-9a-f]{8,32}$"),
    "instance_type": re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$"),
    "az_id": re.compile(r"^[a-z]{2,5}\d*-az\d+$"),
}
#: the policies' name patterns: 'friendly' (Red Hat, Debian and their kin:
#: ``sosreport-<host>[-<label>][-<case>]-<YYYY-mm-dd>-<7 letters>``) and 'legacy' (SUSE, COS, any other,
#: and sos < 3.3: ``sosreport-<host>[.<case>]-<YYYYmmddHHMMSS>``); ``sos clean`` adds ``-obfuscated``
_NAME = re.compile(
    r"^sosreport-(?P<host>.+?)-(?P<date>\d{4}-\d\d-\d\d)-(?P<rand>[A-Za-z0-9]+)(?:-obfuscated)?\."
)
_LEGACY_NAME = re.compile(r"^sosreport-(?P<host>[^.]+?)(?:\.[^.]+?)?-(?P<date>\d{14})(?:-obfuscated)?\.")
#: version.txt: "sosreport: 3.9" (sos 3.x, 4.0-4.x before the rename) or "sos report: 4.10.2"
_VERSION_TXT = re.compile(r"^sos ?report: *(?P<version>\S+)", re.M)


def mangle(command: str, name_max: int = 255) -> str:
    """The file name sos gives a command's output (``sos.report.plugins._mangle_command``).

    >>> mangle("nvidia-smi -q"), mangle("/usr/bin/lfs df -i"), mangle("df -aliT -x autofs")
    ('nvidia-smi_-q', 'lfs_df_-i', 'df_-aliT_-x_autofs')
    >>> mangle("nvidia-smi --query-gpu=gpu_name,gpu_bus_id --format=csv")
    'nvidia-smi_--query-gpu_gpu_name_gpu_bus_id_--format_csv'
    """
    name = re.sub(r"^/(usr/|)(bin|sbin)/", "", command)
    name = re.sub(r"[^\w\-\.\/]+", "_", name)
    return re.sub(r"/", ".", name).strip(" ._-")[:name_max]


_LEGACY = {s.plugin: s.legacy for s in SPECS if s.legacy}
_PLUGINS = frozenset(
    {s.plugin for s in SPECS} | {s.legacy for s in SPECS if s.legacy} | {p for p, _ in FACT_FILES.values()}
)
_COPIES = frozenset(name for names, *_ in COPIED for name in names)


def _wanted(name: str) -> bool:
    """Whether a file of the report may be read here (the rest is only counted against the caps).

    >>> _wanted("proc/mounts"), _wanted("sos_commands/logs/journalctl_--no-pager_--catalog_--boot_-1")
    (True, True)
    >>> _wanted("sos_commands/logs/journalctl_--no-pager"), _wanted("proc/4242/mounts")
    (False, False)
    """
    if name in (MANIFEST, "version.txt", "etc/hostname") or name in _COPIES:
        return True
    parts = name.split("/")
    if len(parts) != 3 or parts[0] not in ("sos_commands", "sos_strings"):
        return False
    if parts[1] == "logs":
        return bool(_JOURNAL_BOOT.match(parts[2]))
    return parts[1] in _PLUGINS


def detect(path: Path) -> bool:
    """Whether a directory or a tarball is a sos report, by its layout (a tarball: headers only)."""
    if path.is_dir():
        return not (path / "meta.env").exists() and (
            (path / MANIFEST).is_file() or ((path / "sos_commands").is_dir() and (path / "sos_logs").is_dir())
        )
    if not path.is_file():
        return False
    top: str | None = None
    seen: set[str] = set()
    try:
        with open_tar(path) as archive:
            for n, info in enumerate(archive):
                if n > _MAX_PEEK:
                    break
                name = safe_member_name(info.name)
                if name is None:
                    continue  # refused on reading; the layout decides here
                parts = name.split("/")
                if top is None:
                    top = parts[0]
                if parts[0] != top or (len(parts) == 1 and not info.isdir()):
                    return False  # one top directory, nothing beside it
                if len(parts) > 1:
                    if parts[1] == "meta.env":
                        return False
                    seen.add(parts[1])
                    if "/".join(parts[1:]) == MANIFEST or {"sos_commands", "sos_logs"} <= seen:
                        return True
    except CapReached:
        # a bomb stopped the stream before sos_logs/ or the manifest showed (Debian's sos 4.0 writes
        # the tree sorted: sos_commands/ first): a tarball named as sos names its reports whose one
        # top directory holds sos_commands/ is read as one, so the member it stopped in is named
        return bool(NAMED.search(path.name)) and "sos_commands" in seen
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        pass  # not a tarball, or damaged before the layout showed
    return False


@dataclass
class _Report:
    """The files read from one report, and what was asked of it."""

    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)  # sos_commands/<plugin> folders seen
    asked: set[str] = field(default_factory=set)

    def get(self, name: str) -> bytes | None:
        self.asked.add(name)
        return self.files.get(name)

    def text(self, name: str) -> str | None:
        data = self.get(name)
        return None if data is None else data.decode("utf-8", "replace")


@dataclass(frozen=True)
class _Command:
    """One command of the manifest."""

    plugin: str
    exec: str
    filepath: str | None
    return_code: int | None
    truncated: bool
    start: float | None


def convert(path: Path, dest: Path, limits: Limits) -> Converted:
    """Write the report at ``path`` as a node bundle under ``dest`` (a new private work directory)."""
    refusals: list[Refusal] = []
    errors: list[str] = []
    report = _Report()
    for name, data in _members(path, limits, refusals, errors):
        parts = name.split("/")
        if len(parts) > 2 and parts[0] == "sos_commands":
            report.dirs.add(parts[1])
        if _wanted(name) and name not in report.files:
            report.files[name] = data
    problems = list(errors)
    manifest, ran, commands = _manifest(report, problems)
    layout = NodeLayout("", SOURCE, path.name)
    for names, kind, _plugin, first in COPIED:
        if first:
            _read_copy(names, kind, report, layout)
    for spec in SPECS:
        if not layout.has(spec.kind):
            _read_spec(spec, report, ran, commands, layout)
    for names, kind, plugin, _first in COPIED:
        read = layout.has(kind) or _read_copy(names, kind, report, layout)
        if not read and not any(a.kind == kind for a in layout.absent):
            _not_run(layout, kind, plugin, ran, report, f"no {' / '.join(names)} in the report")
    _read_nvlink_errors(report, commands, layout)
    _read_journals(report, ran, commands, layout)
    # a link that stood for something read here, or any other member refused (an unsafe name, one
    # over the caps, the member a bomb stopped in); sos's own links to what it did not copy are not
    # needed, so they are not named
    missing = report.asked - set(report.files)
    kept = [r for r in refusals if not _link(r) or _inside(r.path, path) in missing]
    if not layout.outputs:
        reason = "sos report without an output hptriage reads (no kernel log, nvidia-smi, df or mounts)"
        return Converted(problems=problems, reason="; ".join([reason, *errors]), refusals=kept)
    layout.facts = _facts(path, report, manifest, commands, problems)
    layout.node = layout.facts.get("hostname", "") or _name_host(path)
    layout.not_carried(NOT_CARRIED, NOT_CARRIED_NOTE)
    return Converted([write_node(dest / "node", layout)], problems=problems, refusals=kept)


def _members(
    path: Path, limits: Limits, refusals: list[Refusal], errors: list[str]
) -> Iterator[tuple[str, bytes]]:
    """(path inside the report, content) of each safe regular file: a tarball's members below its top
    directory, or a directory's files."""
    if path.is_dir():
        yield from iter_dir(path, limits, refusals, errors, select=_wanted)
        return
    top: list[str] = []  # the report's top directory, from its first file
    outside: set[str] = set()

    def select(name: str) -> bool:
        head, _, rest = name.partition("/")
        if not top:
            top.append(head)
        if head != top[0] or not rest:
            outside.add(name)
            return False
        return _wanted(rest)

    for name, data in iter_tar(path, limits, refusals, errors, select=select):
        yield name.partition("/")[2], data
    if outside:
        errors.append(f"{len(outside)} member(s) outside the report's top directory {top[0]!r} were not read")


def _inside(member: str, path: Path) -> str:
    """A refused member's path inside the report (a tarball's member names start with its top)."""
    return member if path.is_dir() else member.partition("/")[2]


def _link(refusal: Refusal) -> bool:
    """A link that was not followed (absolute, out of the archive, a loop, to nothing)."""
    return refusal.reason.startswith("link to ")


def _read_copy(names: tuple[str, ...], kind: str, report: _Report, layout: NodeLayout) -> bool:
    """The first of a copied file's paths the report holds (through its links), as ``kind``."""
    for name in names:
        text = report.text(name)
        if text is not None and text.strip():
            origin = f"{layout.source_file}!{name}"
            layout.add(Output(kind, text, f"cat /{name}", note=f"{SOURCE}: {name}", origin=origin))
            return True
    return False


def _read_nvlink_errors(report: _Report, commands: list[_Command], layout: NodeLayout) -> None:
    """``nvidia-smi nvlink -e`` (sos >= 4.3), appended to the ``nvlink -s`` output it goes with: the
    parser merges each link's counters (Replay, Recovery, CRC errors) into that link's status row
    (``nvlink.extra``), so a link is never counted twice.  Without a status output the counters
    alone say nothing of the links' state and are left out."""
    status = next((o for o in layout.outputs if o.kind == "nvidia-smi-nvlink"), None)
    cmd = next((c for c in commands if c.plugin == "nvidia" and c.exec == NVLINK_ERRORS), None)
    if status is None or cmd is None or not cmd.filepath or cmd.return_code not in (0, None):
        return
    data, _note = _output(report, cmd.filepath, cmd.truncated, "nvidia")
    if not data or not data.strip():
        return
    separator = "" if status.text.endswith("\n") else "\n"
    status.text += f"{separator}{NVLINK_ERRORS}\n{data.decode('utf-8', 'replace')}"
    status.command = f"{status.command}; {NVLINK_ERRORS}"
    status.note = f"{status.note or SOURCE}; with {cmd.filepath} appended after its command line"


def _read_journals(
    report: _Report, ran: set[str] | None, commands: list[_Command], layout: NodeLayout
) -> None:
    """sos's journal of earlier boots (logs plugin, ``journalctl --no-pager [--catalog] --boot -1``),
    each a kernel log of that boot (kind ``dmesg``, ``cmd/dmesg-boot-1.txt``): the dmesg parser
    reads its ``kernel:`` lines, with the boot its command gives.  The journal of the running boot
    and the whole journal repeat ``dmesg`` and are not read."""
    if ran is not None:
        found = [c for c in commands if c.plugin == "logs" and c.filepath and _journal_boot(c.filepath)]
    else:
        found = [
            _Command("logs", "", name, None, False, None)
            for name in sorted(report.files)
            if name.startswith("sos_commands/logs/") and _journal_boot(name)
        ]
    for cmd in sorted(found, key=lambda c: -(_journal_boot(c.filepath or "") or 0)):
        name = cmd.filepath or ""
        boot = _journal_boot(name)
        data, note = _output(report, name, cmd.truncated or ran is None, "logs")
        text = data.decode("utf-8", "replace") if data else ""
        if boot is None or not _JOURNAL_LINE.search(text):
            continue  # "-- No entries --": no earlier boot in the journal
        command = cmd.exec if ran is not None else f"journalctl --no-pager --boot {boot}"
        origin = f"{layout.source_file}!{name}"
        out_name = f"dmesg-boot{boot}.txt"
        if any(o.name == out_name for o in layout.outputs):
            continue
        layout.add(Output("dmesg", text, command, name=out_name, note=note, origin=origin))


def _journal_boot(name: str) -> int | None:
    """The boot of sos's journal output named so (``-1``), None for any other file.

    >>> _journal_boot("sos_commands/logs/journalctl_--no-pager_--catalog_--boot_-1")
    -1
    >>> _journal_boot("sos_strings/logs/journalctl_--no-pager_--boot_-1.tailed"), _journal_boot("x/journalctl_--no-pager")
    (-1, None)
    """
    m = _JOURNAL_BOOT.match(name.rpartition("/")[2].removesuffix(".tailed"))
    return int(m.group("n")) if m else None


def _manifest(report: _Report, problems: list[str]) -> tuple[dict[str, Any], set[str] | None, list[_Command]]:
    """The manifest, the plugins that ran (None without a manifest) and every command they ran."""
    raw = report.get(MANIFEST)
    if raw is None:
        return {}, None, []
    try:
        manifest = json.loads(raw.decode("utf-8", "replace"))
        plugins = manifest["components"]["report"]["plugins"]
        if not isinstance(plugins, dict):
            raise TypeError("plugins is not an object")
    except (ValueError, KeyError, TypeError) as exc:
        problems.append(f"{MANIFEST} not read ({exc}); outputs found by their names")
        return {}, None, []
    commands = []
    for plugin, section in plugins.items():
        listed = section.get("commands") if isinstance(section, dict) else None
        for cmd in listed if isinstance(listed, list) else []:
            if not isinstance(cmd, dict) or not isinstance(cmd.get("exec"), str):
                continue
            code, start = cmd.get("return_code"), cmd.get("start_time")
            commands.append(
                _Command(
                    str(plugin),
                    " ".join(cmd["exec"].split()),
                    cmd["filepath"] if isinstance(cmd.get("filepath"), str) else None,
                    code if isinstance(code, int) else None,
                    bool(cmd.get("truncated")),
                    float(start) if isinstance(start, (int, float)) else None,
                )
            )
    return manifest, {str(p) for p in plugins}, commands


def _matches(spec: Spec, command: str) -> bool:
    return command in spec.commands or bool(spec.prefix and command.startswith(spec.prefix))


def _read_spec(
    spec: Spec, report: _Report, ran: set[str] | None, commands: list[_Command], layout: NodeLayout
) -> None:
    """The outputs of one kind: from the manifest's commands, else from the files sos names so."""
    if ran is not None:
        found = [c for c in commands if c.plugin == spec.plugin and _matches(spec, c.exec)]
        found.sort(key=lambda c: next((i for i, x in enumerate(spec.commands) if x == c.exec), 99))
    else:
        plugins = (spec.plugin, spec.legacy) if spec.legacy else (spec.plugin,)
        found = [
            _Command(plugin, command, f"sos_commands/{plugin}/{mangle(command)}", None, False, None)
            for command in spec.commands
            for plugin in plugins
        ]
    failed: Absent | None = None
    for cmd in found:
        name = cmd.filepath or ""
        data, note = _output(report, name, cmd.truncated or ran is None, cmd.plugin)
        code = "-" if cmd.return_code is None else str(cmd.return_code)
        if data is not None and (data.strip() or cmd.return_code not in (0, None)):
            text = data.decode("utf-8", "replace")
            origin = f"{layout.source_file}!{name}"  # evidence names the report's own member
            layout.add(Output(spec.kind, text, cmd.exec, exit_code=code, note=note, origin=origin))
            if not spec.every:
                return
            continue
        if ran is None or failed is not None:
            continue
        if cmd.filepath is None:
            failed = Absent(spec.kind, f"sos ran {cmd.exec!r}: exit {code}, no output", code, cmd.exec)
        elif data is None:
            failed = Absent(
                spec.kind, f"{name} is in the manifest but was not read from the report", code, cmd.exec
            )
        else:
            failed = Absent(spec.kind, f"sos ran {cmd.exec!r}: empty output", code, cmd.exec)
    if layout.has(spec.kind):
        return
    if failed is not None:
        layout.absent.append(failed)
        return
    _not_run(layout, spec.kind, spec.plugin, ran, report, f"no {' / '.join(repr(c) for c in spec.commands)}")


def _output(report: _Report, name: str, maybe_tailed: bool, plugin: str) -> tuple[bytes | None, str]:
    """An output and its manifest note.  Over sos's size limit, the output's tail is in
    ``sos_strings/<plugin>/<name>.tailed`` and its own path is a link to it, never read."""
    if not name:
        return None, SOURCE
    if name.startswith("sos_strings/") and name.endswith(".tailed"):
        # sos >= 4.2 records a cut output's manifest filepath as the tail itself
        data = report.get(name)
        return data, f"{SOURCE}: over sos's size limit, its tail was kept ({name})"
    tailed = f"sos_strings/{plugin}/{name.rpartition('/')[2]}.tailed"
    if maybe_tailed and tailed in report.files:  # its own path, when read, is the link to the tail
        return report.get(tailed), f"{SOURCE}: over sos's size limit, its tail was kept ({tailed})"
    return report.get(name), SOURCE


def _not_run(
    layout: NodeLayout, kind: str, plugin: str, ran: set[str] | None, report: _Report, what: str
) -> None:
    """A kind with nothing in the report: its plugin did not run, or ran without giving it."""
    if ran is not None and plugin not in ran:
        why = f"sos plugin {plugin} did not run"
    elif ran is None and plugin not in report.dirs and _LEGACY.get(plugin, plugin) not in report.dirs:
        why = f"sos plugin {plugin} did not run (no sos_commands/{plugin}/)"
    else:
        why = f"{what} from sos plugin {plugin}"
    layout.not_carried([kind], f"{NOT_CARRIED_NOTE}: {why}")


def _fact_text(report: _Report, plugin: str, command: str, commands: list[_Command]) -> str:
    """The first line of a fact's output (found by the manifest when it has the command)."""
    names = [c.filepath for c in commands if c.plugin == plugin and c.filepath and c.exec == command]
    names.append(f"sos_commands/{plugin}/{mangle(command)}")
    for name in names:
        data = report.get(name) if name else None
        if data:
            text = data.decode("utf-8", "replace").strip()
            return text.splitlines()[0].strip() if text else ""
    return ""


def _local_start(manifest: dict[str, Any]) -> datetime | None:
    """The manifest's own ``start_time`` (sos's ``str(datetime.now())``: local time, no zone; one
    with an offset is kept with it).

    >>> _local_start({"start_time": "2026-12-06 19:45:18.903112"})
    datetime.datetime(2026, 12, 6, 19, 45, 18, 903112)
    >>> _local_start({"start_time": "soon"}) is None, _local_start({}) is None
    (True, True)
    """
    text = manifest.get("start_time")
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return when


def _facts(
    path: Path, report: _Report, manifest: dict[str, Any], commands: list[_Command], problems: list[str]
) -> dict[str, str]:
    facts: dict[str, str] = {}
    for key, (plugin, command) in FACT_FILES.items():
        value = _fact_text(report, plugin, command, commands)
        check = _FACT_CHECK.get(key)
        if value and (check is None or check.match(value)):
            facts[key] = value
    legacy_host = facts.pop("hostname_legacy", "")
    if legacy_host:
        facts.setdefault("hostname", legacy_host)
    uname = facts.pop("uname", "").split()
    if len(uname) > 2:
        facts.setdefault("hostname", uname[1])
        facts["kernel"] = uname[2]
    if "hostname" not in facts:
        etc = (report.text("etc/hostname") or "").strip()
        if etc and len(etc.split()) == 1:
            facts["hostname"] = etc
    starts = [c.start for c in commands if c.start is not None and c.start > 0]
    date_utc = facts.pop("date_utc", "")
    date_legacy = facts.pop("date_legacy", "")
    date_utc = date_utc or date_legacy
    when: datetime | None = None
    if starts:
        when = datetime.fromtimestamp(min(starts), tz=timezone.utc)
    elif date_utc:
        try:
            when = datetime.strptime(date_utc, "%a %b %d %H:%M:%S UTC %Y").replace(tzinfo=timezone.utc)
        except ValueError:
            when = None
    if when is not None:
        facts["collected_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    elif (local := _local_start(manifest)) is not None and local.tzinfo is not None:
        facts["collected_at"] = local.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif local is not None:
        # sos 4.0-4.2 without the date plugin: the manifest's start_time, the host's local clock
        facts["collected_at"] = local.strftime("%Y-%m-%dT%H:%M:%S")
        problems.append(
            f"collection time {local:%Y-%m-%d %H:%M:%S} is the manifest's start_time, the host's local "
            "time; its zone is unknown (the report has no date --utc and no command start times), so it "
            "is read as UTC and may be off by the host's offset from UTC"
        )
    version = manifest.get("version")
    if not (isinstance(version, str) and version):
        m = _VERSION_TXT.search(report.text("version.txt") or "")
        version = m.group("version") if m else ""
    if version:
        facts["collector_version"] = f"sos {version}"
    return facts


def _name_host(path: Path) -> str:
    """The host in the tarball's name (``sosreport-<host>[-<case>]-<date>-<random>``; a case id
    stays with the host, as the two cannot be told apart)."""
    m = _NAME.match(path.name) or _LEGACY_NAME.match(path.name)
    return m.group("host") if m else path.name.split(".")[0]
