"""Kernel log events: NVRM Xid, NVSwitch SXid, fallen-off-the-bus, PCIe AER, OOM, hangs.

Commands the collector runs (first that works)::

    TZ=UTC dmesg -T          # human timestamps, in UTC
    dmesg                    # raw seconds since boot
    journalctl -k -o short-iso --no-pager

Sample (hand-written: one event each from the nvsentinel-155, gpud-readme and ogkm-1150 fixtures)::

    [ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0
                   NVRM: (PCI ID: 10de:26b5) installed in this system has
                   NVRM: fallen off the bus and is not responding to commands.
    [Fri Aug 30 11:43:14 2024] NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008
    kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149

Timestamp styles accepted (``ts_raw`` keeps each as printed): ``[ 1843.308145]`` (seconds since boot),
``[Fri Aug 30 11:43:09 2024]`` (``-T``/``--ctime``), ``[  +0.000316]`` (``--reltime``, kept raw),
``2024-01-05T10:11:12,123456+00:00`` (``--time-format iso``, comma fraction), ``-x``/``--decode``
prefixes (``kern  :err   : ``), syslog and ``journalctl -k`` ``-o short``/``short-precise``
(``Aug 30 11:43:09[.123456] host kernel:``, with or without the host, the rsyslog ``[  885.24]`` after
``kernel:`` giving ``uptime_s``), ``-o short-iso`` (``2024-08-30T11:43:09+0000 host kernel:``),
``-o short-full`` (``Fri 2024-08-30 11:43:09 UTC host kernel:``), ``-o short-unix``, ``-o short-monotonic``
(``[  12.3] host kernel:``), Talos ``talosctl dmesg`` (``<node>: kern: warning: [<RFC 3339, ns>Z]: ``),
``/dev/kmsg`` records (``4,1234,5678901,-;message``: microseconds since boot; the `` KEY=value``
dictionary lines are skipped), a bare ``kernel:`` and lines without any stamp (bare ``NVRM:`` lines).
Lines quoted by a markdown ``> `` are unquoted; a log pasted as a block indented throughout is read
with that indentation taken off.  Indented lines without a timestamp continue the message
above, and so do stamped ``NVRM:`` lines that name no GPU of their own while the message above has not
ended its sentence (the device named on the first line belongs to the event).  GPU addresses are read
in every spelling: ``GPU 0000:18:00.0``, ``GPU 18:00.0``, ``GPU at 0000:01:00.0``, ``GPU at
PCI:0000:01:00``, ``Xid (PCI:0000:b7:00 GPU-I:13)`` (MIG).  An Xid or SXid line whose device is no
address (a redacted ``Xid (PCI:...)``, ``Xid (GPU3)``) is still an event of the node, with ``pci`` empty
(``gpu_index`` set when the line gives the driver's GPU number) and a ParseIssue saying the device was not
read; the address is filled in when the same log ties that name to one (``NVRM: GPU at PCI:...:
GPU-<uuid>`` for a UUID, ``... RPC response from GPU4 GSP!`` in an Xid line with an address for
``GPU4``).  One fault is one event: the Xid 79 line and the "GPU has fallen off the
bus" text the driver prints with it, on the same GPU within a few lines, are one row (the Xid's).
Lines that are no event of interest are skipped silently: a kernel log is mostly noise, so each line
meets cheap substring tests first and only the regexes those select.

Schema
------
``kernel_event`` (one row per event):

- ``line`` int — line of the event's first line in the file
- ``ts_raw`` str — the timestamp as printed (null when none)
- ``uptime_s`` float, seconds — seconds since boot when printed that way
- ``ts`` ts — wall-clock time when printed (``-T`` or ISO); host time, UTC when the collector ran it
- ``event_type`` str — xid, sxid, fallen_off_bus, pcie_aer, nvlink_error, efa_error, oom_kill,
  hung_task, soft_lockup, kernel_panic, mce, nmi, nvrm_driver_loaded (message = driver version,
  proprietary or open banner), efa_driver_loaded (message = EFA driver version), efa_probe (an EFA
  device brought up: ``pci``, ``interface`` = its ``efa_N``), link_down / link_up (NIC or bond slave
  link, mlx5/ena/efa/...), bond_failover (a bond made another slave active); OOM kills in the global and
  memory-cgroup wordings are oom_kill.  NVRM lines without an Xid, by what they say: gpu_identity
  (``GPU at PCI:...: GPU-<uuid>`` with its ``GPU Board Serial Number``), gsp_timeout (GSP heartbeat and
  RPC timeouts), gsp_rpc_failed (``rpcSendMessage failed``, GSP RPC error notices), gpu_lost
  (``NV_ERR_GPU_IS_LOST``), gpu_init_failed (``RmInitAdapter failed``, GSP boot, ``Cannot attach gpu``),
  memory_error (memory-subsystem, ECC/DBE, row remapping), bus_timeout (sysmembar, flush and bus
  timeouts), mmu_error (TLB invalidation, MMU faults), nvlink_error; any other NVRM line naming a GPU
  is nvrm_message.  An NVRM line of these kinds is an event even when it names no GPU (``pci`` and
  ``gpu_index`` empty), and one naming the GPU by the driver's number gets its address where the log
  ties the two (see :func:`_read_devices`)
- ``pci`` str — PCI address normalised to ``dddd:bb:dd.f`` (null when the line gives none that can be read)
- ``gpu_index`` int — the driver's GPU number when the line names the GPU by it (``NVRM: GPU6 ...``,
  ``Xid (GPU3)``), else null; the driver's numbering, not necessarily nvidia-smi's index
- ``xid`` int — the Xid (or SXid) code
- ``caused_by_xid`` int — "caused by previous Xid N"
- ``pid`` int, ``process`` str — as printed (null for ``'<unknown>'``)
- ``severity`` str — AER severity (Corrected, Uncorrected (Fatal), ...) or SXid fatality
- ``message`` str — the text after the code, continuation lines joined
- ``raw`` str — the first line as printed
- ``interface`` str — the network interface of a link event (for bonding: the slave)
- ``host`` str — the launcher's tag of the event's line (pdsh/clush host, ``srun -l`` rank, pod), else the
  host the log pipeline printed (Talos' node, the syslog/journal host before ``kernel:``), else null
- ``boot`` int — the boot the log is of, from the command that printed it (:func:`boot_of`): 0 the
  current boot (``dmesg``, ``journalctl -k``, ``journalctl -b``/``-b 0``), -1, -2 ... an earlier one
  (``journalctl -b -1``, ``--boot=-2``); 0 for a bundle's ``cmd/dmesg.txt`` without a command; null when
  unknown (a syslog file, a journal of every boot, a pasted log)
- ``signature`` str — the id of the catalog signature the line matched (``parsers/kernel_signatures.toml``),
  null for an event read outside the catalog
- ``device`` str — the device the line names (block device, file system, Lustre target, NIC) where the
  signature captures one; for ``kernel_error`` (a line at error level no signature claims) the driver or
  device the message starts with

Examples
--------
>>> r = parse(SAMPLE)
>>> [(e["event_type"], e["pci"], e["xid"]) for e in r.rows("kernel_event")]
[('fallen_off_bus', '0000:b3:00.0', 79), ('xid', '0000:cb:00.0', 109), ('xid', '0000:dc:00.0', 45)]
>>> r.rows("kernel_event")[2]["caused_by_xid"], r.rows("kernel_event")[1]["process"]
(149, 'pt_main_thread')
>>> parse(SAMPLE, command="journalctl -b -1 | grep -e NVRM").rows("kernel_event")[0]["boot"]
-1
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import product
from typing import Any, cast

from parsers._base import Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._kernel_catalog import NOISE, SIGNATURES, extract
from parsers._text import LineCleaner, clean_head, pci_address, to_int

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="dmesg",
    title="Kernel log (dmesg / journalctl -k)",
    commands=("TZ=UTC dmesg -T", "dmesg", "journalctl -k -o short-iso --no-pager"),
    tables=("kernel_event",),
    empty_means_none=("kernel_event",),  # a clean kernel log is a checked one
    versions_seen=("util-linux dmesg raw/-T/--reltime", "syslog", "journald short/-iso/-full/-unix", "Talos"),
)

SCHEMA = {
    "kernel_event": (
        Column("line", "int", "first line of the event"),
        Column("ts_raw", "str", "timestamp as printed"),
        Column("uptime_s", "float", "seconds since boot"),
        Column("ts", "ts", "wall-clock time (host clock)"),
        Column("event_type", "str", "xid, sxid, fallen_off_bus, pcie_aer, ..."),
        Column("pci", "str", "PCI address dddd:bb:dd.f"),
        Column("gpu_index", "int", "the driver's GPU number when the line names the GPU by it (GPU6)"),
        Column("xid", "int", "Xid or SXid code"),
        Column("caused_by_xid", "int", "the earlier Xid this one follows from"),
        Column("pid", "int", "process id"),
        Column("process", "str", "process name"),
        Column("severity", "str", "AER severity or SXid fatality"),
        Column("message", "str", "message text"),
        Column("raw", "str", "first line as printed"),
        Column("interface", "str", "network interface of a link event"),
        Column("host", "str", "launcher tag of the line (pdsh host, srun rank, pod), else null"),
        Column("boot", "int", "0 current boot, -1 the one before ...; null when unknown"),
        Column("signature", "str", "the catalog signature the line matched (kernel_signatures.toml)"),
        Column("device", "str", "the device the line names: block device, file system, Lustre target, NIC"),
    )
}

_STAMP = re.compile(
    r"""^(?:(?P<node>[\w.:-]+):\s+(?=[a-z]+:\s*[a-z]+:\s*\[\d{4}-))?   # Talos: "<node>: kern: warning: [..]:"
        (?:[a-z]+\s*:\s*[a-z]+\s*:\s)?(?:                          # dmesg -x "kern  :err   : ", Talos "kern:    info: "
        \[(?P<biso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?)\]:?\s?  # Talos [RFC 3339]:
      | \[\s*(?P<up>\d+\.\d+)\]\s?                                   # [ 1843.308145]
      | \[(?P<rel>\s*[+-]\d+\.\d+)\]\s?                              # [  +0.000316]
      | \[(?P<ctime>\w{3}\s+\w{3}\s+\d+\s+\d\d:\d\d:\d\d\s+\d{4})\]\s?  # [Fri Aug 30 11:43:09 2024]
      | (?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?)
        (?:\s+(?:(?P<isohost>\S+)\s+)?kernel:|\s)\s?                 # journal short-iso, dmesg --time-format iso
      | (?P<syslog>\w{3}\s+\d+\s+\d\d:\d\d:\d\d(?:\.\d+)?)\s+(?:(?P<syshost>\S+)\s+)?kernel:\s?  # syslog, short
      | (?P<full>\w{3}\s\d{4}-\d\d-\d\d\s\d\d:\d\d:\d\d(?:\.\d+)?)(?:\s[A-Z]{2,5})?\s+(?:(?P<fullhost>\S+)\s+)?kernel:\s?
      | (?P<unix>\d{9,10}\.\d{1,9})\s+(?:(?P<unixhost>\S+)\s+)?kernel:\s?      # journalctl -o short-unix
      | (?P<kmsg>\d+),\d+,(?P<usec>\d+),[^;]*;                         # /dev/kmsg: prio,seq,usec,flags;
      | (?:(?P<barehost>[\w.-]+)\s+)?kernel:\s?                       # "kernel:", "host kernel:" (a grep'd journal)
    )""",
    re.VERBOSE,
)
#: ``[  885.242168]`` after a syslog or journal stamp (rsyslog kern.log keeps the dmesg stamp)
_INNER_UP = re.compile(r"\[\s*(\d+\.\d+)\]\s?")
#: an address as the driver prints it inside ``Xid (...)``, with MIG instance suffixes
_XID_ADDR = re.compile(
    r"(?:PCI:)?(?P<addr>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)(?:\s+GPU-C?I:\s*\w+)*\s*"
)
_XID = re.compile(
    r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+)"
    r"(?:, pid=(?P<pid>'[^']*'|[^,]*))?(?:, name=(?P<name>'[^']*'|[^,]*))?,?\s*(?P<msg>.*)"
)
_SXID = re.compile(r"nvswitch\d*: SXid \((?P<pci>[^)]*)\): (?P<xid>\d+),\s*(?P<msg>.*)")
#: the device inside ``Xid (...)`` named by the driver's GPU number: ``GPU3``, ``GPU 3``
_XID_INDEX = re.compile(r"(?:PCI:)?GPU\s?(\d{1,3})\s*")
#: a GPU UUID (``NVRM: GPU at PCI:0000:3b:00: GPU-1a2b3c4d-...`` ties it to an address)
_UUID = re.compile(r"\bGPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
#: ``NVRM: GPU6 _kgspIsHeartbeatTimedOut: ...``: a line naming the GPU by the driver's number
_NVRM_INDEX = re.compile(r"^NVRM: GPU(\d{1,3}) (?:(\w+):)?")
#: ``... RPC response from GPU4 GSP!`` in an Xid 119 line: the driver's number of the GPU of that line
_GSP_OF = re.compile(r"\bfrom GPU(\d{1,3}) GSP\b")
_CAUSED = re.compile(r"caused by previous Xid (\d+)", re.IGNORECASE)
_FALLEN = re.compile(r"fallen off the bus", re.IGNORECASE)
_GPU_PCI = re.compile(
    r"GPU (?:at )?(?:PCI:)?((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)(?![0-9a-fA-F])"
)
#: a GPU named by index or address ("GPU0 _kgspRpcRecvPoll", "GPU 0000:41:00.0:"): a line of its own
_NAMES_GPU = re.compile(r"GPU(?:\d|\s+(?:at\s+)?(?:PCI:)?[0-9a-fA-F]{2,8}:)")
_GSP_TIMEOUT = re.compile(r"GSP.*(?:timed out|timeout)|(?:timed out|timeout).*GSP", re.IGNORECASE)
_EFA_LOADED = re.compile(r"Elastic Fabric Adapter \(EFA\) v(?P<ver>\d+(?:\.\d+)+\w*)")
#: the EFA driver bringing a device up: ``efa 0000:00:07.0: Setup irq:...`` (its admin interrupt, once per
#: device) and ``infiniband efa_0: IB device registered`` (its verbs device)
_EFA_PROBE = re.compile(
    r"^(?:efa (?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F:.]+): Setup irq|infiniband (?P<ibdev>efa_\d+): IB device registered)"
)
_DRIVER = re.compile(r"NVRM: loading NVIDIA .*Kernel Module(?: for \S+)?\s+(?P<ver>\d+\.\d+(?:\.\d+)?)(?!\S)")
#: NIC driver link lines: mlx5 ``ens1f0np0: Link down`` / ``mlx5_5: Port: 1 Link DOWN``,
#: ena/ixgbe-style ``eth0: Link is Down`` / ``NIC Link is Up 100 Gbps``
_NIC_LINK = re.compile(
    r"^(?P<drv>mlx5_core|mlx5_ib|ena|efa|ixgbe|i40e|ice|bnxt_en)\b\S*\s+(?:(?P<dev>[0-9a-fA-F]{4}:[0-9a-fA-F:.]+)\s+)?"
    r"(?P<ifname>[\w.@-]+):\s+(?:Port: \d+\s+)?(?:NIC )?Link (?:is )?(?P<state>up|down|active)\b",
    re.IGNORECASE,
)
#: bonding: ``bond0: link status definitely down for interface eth0`` (old) and
#: ``bond0: (slave eth0): link status definitely down`` (new); the failover line names the new active one
_BOND_LINK = re.compile(
    r"^(?P<bond>[\w.-]+): (?:\(slave (?P<slave>[\w.@-]+)\): )?link status (?:definitely )?"
    r"(?P<state>up|down)(?: for interface (?P<ifname>[\w.@-]+))?"
)
_BOND_ACTIVE = re.compile(
    r"^(?P<bond>[\w.-]+): (?:\(slave (?P<slave>[\w.@-]+)\): )?making interface (?:(?P<ifname>[\w.@-]+) )?"
    r"the new active one"
)
#: a stamp-like prefix that ``_STAMP`` does not read ("[  903.61q]", "Mar 21q 21:42:01 host kernel:")
_LOOSE_STAMP = re.compile(
    r"^(?:(?:[\w.:-]+:\s+)?[a-z]+:\s*[a-z]+:\s*\[(?P<talos>[^\]]{1,40})\]:\s?"  # Talos
    r"|\[(?P<bracket>[^\]]{1,40})\]\s?|(?P<syslog>.{1,80}?\bkernel:)\s?)"
)
#: "GPU 0000q:01:00:", "GPU at 0000q:01:00": a GPU named by something address-shaped
_GPU_NAMED = re.compile(r"\bGPU (?:at )?(?:PCI:)?[0-9A-Fa-f]{2,8}\w*:")
#: after a ``[ uptime]`` stamp, ``journalctl -o short-monotonic``'s host and ``kernel:``
_AFTER_UP = re.compile(r"(?:(?P<host>[\w.-]+)\s+)?kernel:\s?")
#: the nvidia driver's probe lines (``nvidia 0000:01:00.0: enabling device``): the order it numbers GPUs in
_PROBE = re.compile(
    r"nvidia (\S+:[0-9a-fA-F]{2}\.\d): (?:enabling device|vgaarb:|Enabling HDA controller|"
    r"setting latency timer|can't derive routing|irq \d+ for MSI)"
)
_KMSG_DICT = re.compile(r"^ [A-Z_]+=")  # /dev/kmsg dictionary lines (" SUBSYSTEM=pci")
_UNKNOWN = {"'<unknown>'", "<unknown>", ""}
#: lines between a fault's "fallen off the bus" lines that still belong to the same fault
_FALLEN_WINDOW = 50


def detect(text: str) -> int:
    """Confidence that text is a kernel log (launcher tags and prompts taken off first)."""
    if re.search(r"NVRM: Xid|SXid \(PCI|NVRM: loading NVIDIA", text):
        return 80
    lines = [line.lstrip(" \t") for line in clean_head(text).lines[:200] if line.strip()]
    stamped = sum(1 for line in lines if _STAMP.match(line))
    return 30 if stamped >= min(3, len(lines)) > 0 else 0


#: the error words of a line that prints no level: one of them next to a device or driver name makes an
#: unclassified kernel error (the catalog's noise aside)
ERROR_KEYS = ("rror", "RROR", "fail", "Fail", "FAIL", "timed out", "timeout", "Timeout",
              ":err", ":crit", ":alert", ":emerg", " err:", " crit:", " alert:", " emerg:")  # fmt: skip
#: Every substring that ``_event`` (and an NVRM continuation) tests before its regexes: a line holding
#: none of them is no event and cannot continue one, so it is never looked at again.  The keys of the
#: catalog's claim-only signatures are not among them: a line they claim makes no row, and one that is
#: an error by its words or level is a candidate by ``ERROR_KEYS``.
CANDIDATE_KEYS = tuple(dict.fromkeys((
    "NVRM", "SXid", "ink ", "new active", "Elastic Fabric Adapter", "nvidia 0",
    *("".join(c) for c in product("eE", "fF", "aA")),  # a line that starts "efa" in any case
    *(key for sig in SIGNATURES if not sig.claims_only for key in sig.keys),  # the catalog's events
    *ERROR_KEYS,  # what an unclassified error line holds (see _unclassified)
)))  # fmt: skip
#: Above this size the candidate lines are found by one vectorised RE2 pass (pyarrow) instead of one
#: compiled trie of the keys per line in Python: RE2 costs ~0.3 ms a call (it compiles the pattern) and
#: little per line, Python a few microseconds per line, so they meet near 300 lines (~20 KB); a 1 MB log,
#: 14k lines: ~4 ms against ~40 ms.  polars' str.contains is no clear win and not worth a dependency
#: (benchmarks/RESULTS.md).
VECTOR_BELOW = 16 * 1024


def candidate_lines(lines: list[str]) -> list[int]:
    """Indices of the lines that hold one of ``CANDIDATE_KEYS``, in order."""
    if sum(map(len, lines)) >= VECTOR_BELOW:
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            column = pa.array(lines, pa.large_string())
        except (UnicodeError, pa.ArrowException):  # text that is not valid UTF-8: the loop below
            pass
        else:
            found: list[int] = pc.indices_nonzero(
                pc.match_substring_regex(column, _CANDIDATE_RE2)
            ).to_pylist()
            return found
    search = _CANDIDATE.search  # the keys as one trie of literals: 5x the speed of a loop of `in`
    return [i for i, line in enumerate(lines) if search(line)]


#: /dev/kmsg records of priority 0-3 (emerg..err): a line at error level or worse is a candidate (the
#: levels ``dmesg -x`` and Talos print are literal keys of ``ERROR_KEYS``)
LEVEL_RE2 = r"^[0-3],[0-9]+,[0-9]+,"
#: letters with a case fold beyond ASCII in Python's re or RE2 (the dotted and dotless i, the Kelvin sign,
#: the long s): a key holding one is never folded into a case-insensitive group
_WIDE_FOLDS = frozenset("iks")


def _shortest(keys: tuple[str, ...]) -> list[str]:
    """The keys less those that hold another key (a line holding one holds the shorter one)."""
    unique = list(dict.fromkeys(keys))
    return [k for k in unique if not any(other != k and other in k for other in unique)]


def alternation(keys: tuple[str, ...]) -> str:
    """A regex (for RE2) that finds a line if and only if the line holds one of ``keys``, as short as that
    allows: a key that holds another key is left out, and a key of ASCII letters present in every spelling
    of its case (``efa`` .. ``EFA``) is one ``(?i:...)`` group.  RE2's pass over a 1 MB log costs more with
    every literal (benchmarks/RESULTS.md).

    >>> alternation(("rror", "I/O error", "efa", "EFA", "efA", "eFa", "eFA", "Efa", "EfA", "EFa", "NVRM"))
    'rror|(?i:efa)|NVRM'
    """
    kept = _shortest(keys)
    spellings: dict[str, set[str]] = {}
    for k in kept:
        spellings.setdefault(k.lower(), set()).add(k)
    parts: list[str] = []
    for k in kept:
        low = k.lower()
        every = low.isascii() and low.isalpha() and not _WIDE_FOLDS & set(low)
        if every and len(spellings[low]) == 2 ** len(low):
            if low == k:  # the group once, where its lower-case spelling stood
                parts.append(f"(?i:{re.escape(low)})")
        else:
            parts.append(re.escape(k))
    return "|".join(parts)


def trie(keys: list[str]) -> str:
    """The keys as one regex shaped like a trie (for Python's re, which tries the branches of an
    alternation one by one at every position of a line; a trie looks at each letter once): it finds a line
    if and only if the line holds one of ``keys``.

    >>> trie(["timeout", "timer", "NVRM"])
    '(?:NVRM|time(?:out|r))'
    """
    root: dict[str, Any] = {}
    for key in keys:
        node = root
        for ch in key:
            node = node.setdefault(ch, {})
        node[""] = {}  # a key ends here

    def branches(node: dict[str, Any]) -> str:
        out = [re.escape(ch) + branches(sub) for ch, sub in sorted(node.items()) if ch]
        if not out:
            return ""
        body = out[0] if len(out) == 1 else f"(?:{'|'.join(out)})"
        return f"(?:{body})?" if "" in node else body

    return branches(root)


_CANDIDATE_RE2 = "|".join([alternation(CANDIDATE_KEYS), LEVEL_RE2])
_CANDIDATE = re.compile("|".join([trie(_shortest(CANDIDATE_KEYS)), LEVEL_RE2]))


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    scan = _Scan(text)
    for i in candidate_lines(scan.raw):
        if i > scan.consumed:  # else an indented continuation line, already joined to its event
            scan.candidate(i)
    return scan.finish(command, filename)


@dataclass(slots=True)
class _Line:
    """A candidate line read: the message body, its stamp (the match and its groups, or the uptime of an
    ordinary line), the host a tag or pipeline printed, and the line as cleaned."""

    body: str
    line: str
    host: str | None
    up: str | None
    m: re.Match[str] | None = None  # _STAMP's match, None for an ordinary line or no stamp
    g: tuple[Any, ...] | None = None  # its groups (_NO_STAMP for none); None for an ordinary line
    inner: re.Match[str] | None = None
    ordinary: bool = False


class _Scan:
    """One kernel log being read: its candidate lines, the event open for continuation lines, the
    events, the nvidia driver's probe lines, and what one parse remembers (events and errors by body)."""

    def __init__(self, text: str) -> None:
        self.raw = raw = text.splitlines()
        self.result = ParseResult(lines=raw)
        self.clean, self.plain = _cleaner(text)  # travel noise taken off the lines looked at, and only those
        self.memo: dict[str, dict[str, Any] | None] = {}  # body -> its event (a copy is the row), _event_of
        self.errors: dict[
            tuple[str, str | None], dict[str, Any] | None
        ] = {}  # (body, level) -> kernel_error row
        self.events: list[dict[str, Any]] = []
        self.probes: list[
            tuple[int, str]
        ] = []  # (line, address) of the nvidia driver's probe lines, in order
        self.probed: set[str] = set()  # the devices of those lines as printed
        self.current: dict[str, Any] | None = None
        self.consumed = -1  # index of the last line that belongs to ``current`` (or was looked at)
        # the line after an event's last one, cleaned when looking for its continuation lines: often the
        # next candidate (a flapping link prints line after line), then cleaned once
        self.ahead: tuple[int, str, str | None] = (-1, "", None)

    def candidate(self, i: int) -> None:
        if i != self.consumed + 1:
            self.current = None  # a line that is no event came between: nothing continues across it
        self.consumed = i
        read = self._read(i)
        if read is None:
            return  # indented, with no event above it
        if read.body.startswith("nvidia "):
            self._probe(i, read.body)
        current = self.current
        if current is not None and current.get("_open") and _continues(current, read.body, self._stamp(read)):
            current["message"] = f"{current['message']} {_body(read.body)}".strip()
            _classify_continuation(current)
        elif not self._event(i, read):
            return
        self._continuation_lines(i)

    def _read(self, i: int) -> _Line | None:
        """The candidate line's stamp, host and body ("[ seconds] message" of a file without tags read by
        one match); None for an indented line."""
        raw = self.raw
        o = _ORDINARY.fullmatch(line := raw[i].rstrip()) if self.plain else None
        if o is not None:  # clean as it is, stamped by uptime
            up, body = o.groups()
            host = None
            if "kernel:" in body and (after := _AFTER_UP.match(body)):
                body = body[after.end() :]  # journalctl -o short-monotonic: "[  12.3] host kernel: "
                host = after.group("host")
            return _Line(body, line, host, up, ordinary=True)
        if i == self.ahead[0]:
            line, host = self.ahead[1], self.ahead[2]
        else:
            line, host, _, _ = self.clean(raw[i])
        if line[:1].isspace():
            return None
        m = _STAMP.match(line)
        g, body = (_NO_STAMP, line.strip()) if m is None else (m.groups(), line[m.end() :])
        up = g[_UP]
        inner = _INNER_UP.match(body) if g[_SYSLOG] or g[_ISO] else None
        after = None
        if inner:
            body = body[inner.end() :]
        elif up and "kernel:" in body and (after := _AFTER_UP.match(body)):
            body = body[after.end() :]
        if not host:  # else the host a log pipeline printed before the message
            host = after.group("host") if after is not None else _printed_host(g)
        return _Line(body, line, host, up, m, g, inner)

    @staticmethod
    def _stamp(read: _Line) -> tuple[Any, ...]:
        return _stamp_of(read.g) if read.g is not None and read.m is not None else _up_stamp(read.up)

    def _probe(self, i: int, body: str) -> None:
        """The nvidia driver's probe line of a device: each device as printed is looked at once."""
        if (probe := _PROBE.match(body)) and probe.group(1) not in self.probed:
            self.probed.add(probe.group(1))
            address = pci_address(probe.group(1))
            if address and all(address != known for _, known in self.probes):
                self.probes.append((i + 1, address))

    def _event(self, i: int, read: _Line) -> bool:
        """The event of a line (a catalogued one, else an unclassified error), stamped and kept; False when
        the line is none."""
        body, line = read.body, read.line
        current = _event_of(body, self.memo)
        loose = inner = None
        if current is None and not read.ordinary and read.m is None and (loose := _LOOSE_STAMP.match(line)):
            body = line[loose.end() :]  # a stamp we cannot read in front of an event
            if inner := _INNER_UP.match(body):
                body = body[inner.end() :]
            current = _event_of(body, self.memo)
        if current is not None and current["event_type"] == "-":
            self.current = None  # a line the catalog knows that is no event of its own
            return False
        if current is None:
            if "GPU" in body:
                _unreadable_device(self.result, i + 1, self.raw[i], body)
            kmsg = read.g[_G["kmsg"]] if read.g is not None and read.m is not None else None
            current = _unclassified_of(body, _level("" if read.ordinary else line, kmsg), self.errors)
            if current is None:
                self.current = None
                return False
        self._stamp_event(i, current, read, loose, inner)
        self.current = current
        self.events.append(current)
        return True

    def _stamp_event(
        self,
        i: int,
        event: dict[str, Any],
        read: _Line,
        loose: re.Match[str] | None,
        inner: re.Match[str] | None,
    ) -> None:
        if read.ordinary:
            event["ts_raw"], event["uptime_s"], event["ts"] = read.up, float(read.up or 0), None
        elif loose is not None:
            stamp = loose.group("talos") or loose.group("bracket") or loose.group("syslog")
            event["ts_raw"] = stamp.strip()
            event["uptime_s"] = float(inner.group(1)) if inner else None
            event["ts"] = None
            self.result.issue(i + 1, self.raw[i], f"timestamp not understood: {stamp.strip()!r} (event kept)")
        elif read.g is not None and read.m is not None:
            event["ts_raw"], event["uptime_s"], event["ts"] = _stamp_of(read.g)
        else:
            event["ts_raw"] = event["uptime_s"] = event["ts"] = None
        if read.inner:
            event["uptime_s"] = float(read.inner.group(1))
        event["line"] = i + 1
        event["raw"] = read.line if read.ordinary else self.raw[i].rstrip()
        event["host"] = read.host

    def _continuation_lines(self, i: int) -> None:
        """Indented lines without a timestamp continue the message above (dictionary lines of /dev/kmsg
        records are skipped without ending it)."""
        raw, current = self.raw, self.current
        assert current is not None
        j = i + 1
        while j < len(raw):
            if self.plain and raw[j][:1] == "[" and "]<std" not in raw[j]:
                break  # no tag to take off (an mpirun "[1,0]<stdout>:" is the one that starts so): not indented
            more, more_host, _, _ = self.clean(raw[j])
            if not more[:1].isspace():
                self.ahead = (j, more, more_host)
                break
            if more.strip() and not _KMSG_DICT.match(more):
                current["message"] = f"{current['message']} {_body(more.strip())}".strip()
                _classify_continuation(current)
            j += 1
        self.consumed = j - 1

    def finish(self, command: str | None, filename: str | None) -> ParseResult:
        result, events = self.result, self.events
        if not events and not any(_STAMP.match(self.clean(line)[0]) for line in self.raw):
            raise ParseError("no kernel log lines found (no timestamps, no NVRM lines)")
        events = _efa_devices(events)
        _read_devices(result, events, self.probes)
        boot = boot_of(command, filename)
        for ev in _one_event_per_fault(events):
            ev.pop("_open", None)  # internal markers: a message that may continue, its driver function
            ev.pop("_func", None)
            ev.setdefault("interface", None)
            ev["boot"] = boot
            result.add("kernel_event", ev)
        return result


#: Distinct message bodies whose event (or none) one parse remembers: a kernel log says the same
#: things over and over (a flapping link, a device probed again), and ``_event`` is a function of the
#: body alone.  The bound keeps a log of ever-new lines from holding them all twice.
_MEMO_MAX = 1 << 16


def _unclassified_of(
    body: str, level: str | None, memo: dict[tuple[str, str | None], dict[str, Any] | None]
) -> dict[str, Any] | None:
    """``_unclassified`` of a body at a level, remembered in ``memo`` as ``_event_of`` remembers events."""
    try:
        row = memo[body, level]
    except KeyError:
        row = _unclassified(body, level)
        if len(memo) < _MEMO_MAX:
            memo[body, level] = row
    return None if row is None else row.copy()


def _event_of(body: str, memo: dict[str, dict[str, Any] | None]) -> dict[str, Any] | None:
    """``_event`` of a body, remembered in ``memo`` for the rest of the parse; the caller gets a row of
    its own (the remembered one is never handed out)."""
    try:
        row = memo[body]
    except KeyError:
        row = _event(body)
        if len(memo) < _MEMO_MAX:
            memo[body] = row
    return None if row is None else row.copy()


#: A line as raw ``dmesg`` prints it that ``LineCleaner.clean`` gives back as it is (trailing blanks off) when
#: the file has no launcher tags and no block prefix: ``[ seconds] `` and then none of the characters its
#: noise tests look for (a prompt's ``$ #``, an annotation's ``<``, backticks and fences), so that it costs
#: one match instead of those tests.
_ORDINARY = re.compile(r"\[ *(\d+\.\d+)\] ([^`$#➜<←~]*)")


def _cleaner(text: str) -> tuple[Callable[[str], tuple[str, str | None, str | None, bool]], bool]:
    """``LineCleaner.clean`` of the text, with the indentation every line of the capture shares taken off
    too (a log pasted as a block: ``    [Sun Jul 28 09:15:27 2024] NVRM: ...``); deeper lines keep the rest
    of theirs (they continue the message above).  And whether the text is plain: no launcher tags, no
    block prefix, no shared indentation (a line's cleaning only takes noise off, then)."""
    cleaner = LineCleaner(text)
    clean: Callable[[str], tuple[str, str | None, str | None, bool]] = cleaner.clean
    if not cleaner.prefix and cleaner.pattern is None:
        full, ordinary = cleaner.clean, _ORDINARY.fullmatch

        def clean(line: str) -> tuple[str, str | None, str | None, bool]:
            stripped = line.rstrip()
            return (stripped, None, None, False) if ordinary(stripped) else full(line)

    common: str | None = None
    for line in text[:65536].splitlines()[:400]:
        cleaned = clean(line)[0]
        if not cleaned.strip():
            continue
        lead = cleaned[: len(cleaned) - len(cleaned.lstrip(" \t"))]
        common = lead if common is None else os.path.commonprefix([common, lead])
        if not common:
            return clean, not cleaner.prefix and cleaner.pattern is None
    if not common:
        return clean, not cleaner.prefix and cleaner.pattern is None
    indent = common

    def dedented(line: str) -> tuple[str, str | None, str | None, bool]:
        out, host, command, noise = clean(line)
        return (out[len(indent) :] if out.startswith(indent) else out.lstrip(" \t")), host, command, noise

    return dedented, False


def _efa_devices(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One ``efa_probe`` event per EFA device: the ``infiniband efa_N: IB device registered`` line names the
    verbs device of the probe just before it (``efa 0000:00:07.0: Setup irq``), so it fills that one's
    ``interface`` (a registered line without such a probe before it stays an event of its own)."""
    out: list[dict[str, Any]] = []
    open_probe: dict[str, Any] | None = None
    for ev in events:
        if ev["event_type"] == "efa_probe":
            if ev["pci"] is None and open_probe is not None:
                open_probe["interface"] = ev["interface"]
                open_probe = None
                continue
            open_probe = ev if ev["pci"] is not None else None
        out.append(ev)
    return out


def _printed_host(g: tuple[str | None, ...]) -> str | None:
    """The host a log pipeline printed before the message (Talos' node, a syslog or journal host), from
    the groups of the line's ``_STAMP``."""
    node, syshost, isohost, fullhost, unixhost, barehost = (g[at] for at in _HOST_AT)
    return node or syshost or isohost or fullhost or unixhost or barehost or None


_HOST_GROUPS = ("node", "syshost", "isohost", "fullhost", "unixhost", "barehost")
#: where the groups of ``_STAMP`` lie in ``Match.groups()`` (one call gives them all)
_HOST_AT = tuple(_STAMP.groupindex[name] - 1 for name in _HOST_GROUPS)
_UP, _SYSLOG, _ISO = (_STAMP.groupindex[name] - 1 for name in ("up", "syslog", "iso"))
_NO_STAMP: tuple[str | None, ...] = (None,) * _STAMP.groups


#: ``-b -1``, ``--boot=-2``, ``-b 0``, ``-b`` alone (the current boot) in a journalctl command line
_JOURNAL_BOOT = re.compile(r"(?:^|\s)(?:-b|--boot)(?:(?:=|\s+)(?P<n>[+-]?\d+)\b|(?=\s+-(?!\d)|\s*$|\s*\|))")
_DMESG_CMD = re.compile(r"(?:^|[\s/])dmesg(?:\s|$)")


def boot_of(command: str | None, filename: str | None) -> int | None:
    """The boot a kernel log is of, relative to the running one (0 current, -1 the one before), from
    the command that printed it, else from a bundle's file name; None when they do not say.

    >>> boot_of("journalctl -b -1 | grep -e NVRM", None), boot_of("journalctl --boot=-2", None)
    (-1, -2)
    >>> boot_of("TZ=UTC dmesg -T", None), boot_of("journalctl -k -o short-iso --no-pager", None)
    (0, 0)
    >>> boot_of(None, "cmd/dmesg.txt"), boot_of("journalctl --no-pager", None), boot_of("journalctl -b 3", None)
    (0, None, None)
    >>> boot_of("grep -e NVRM /var/log/kern.log", "cmd/dmesg.txt"), boot_of(None, "kern.log")
    (None, None)

    A boot of a log file of several boots, laid out by a reader of another tool's input as
    ``cmd/dmesg-boot-<N>-<file>.txt`` (``analyzer.intake.foreign.boots``), is that boot where the command
    (a ``grep`` or ``cat`` of the file) does not say:

    >>> boot_of("grep -e NVRM /var/log/kern.log", "cmd/dmesg-boot-2-kern.log.txt"), boot_of("-", "cmd/dmesg-boot-1.txt")
    (-2, -1)
    """
    if command:
        if "journalctl" in command:
            m = _JOURNAL_BOOT.search(command)
            if m is None:
                # -k (--dmesg) implies -b: the current boot; without it, every boot the journal holds
                return 0 if re.search(r"(?:^|\s)(?:-k|--dmesg)\b", command) else None
            n = m.group("n")
            if n is None:
                return 0
            # a positive number counts from the journal's first boot: not relative to this one
            return int(n) if n.startswith("-") or int(n) == 0 else None
        if _DMESG_CMD.search(command):
            return 0
        return _boot_of_name(filename)
    if filename and filename.replace("\\", "/").rsplit("/", 1)[-1] == "dmesg.txt":
        return 0
    return _boot_of_name(filename)


#: ``dmesg-boot-1.txt``, ``dmesg-boot-2-kern.log.txt``: an earlier boot's part of a log, as laid out
_BOOT_NAME = re.compile(r"^dmesg-boot(?P<n>-\d+)(?:-[^/]*)?\.txt$")


def _boot_of_name(filename: str | None) -> int | None:
    m = _BOOT_NAME.match(filename.replace("\\", "/").rsplit("/", 1)[-1]) if filename else None
    return int(m.group("n")) if m else None


def _unreadable_device(result: ParseResult, no: int, raw: str, body: str) -> None:
    """An NVRM line (no Xid) that names a GPU the driver's address spellings do not read: no event
    (it cannot be placed on a GPU), but said."""
    if "NVRM:" in body and _GPU_NAMED.search(body) and not _GPU_PCI.search(body):
        result.issue(no, raw, "NVRM line naming a GPU whose address is not understood: no event")


def _read_devices(result: ParseResult, events: list[dict[str, Any]], probes: list[tuple[int, str]]) -> None:
    """Fill in the address of events that name their GPU otherwise, where this log ties the name to one.

    Xid and SXid events whose line named no readable address (``_device``: the text inside the
    parentheses) stay events of the node, with a ParseIssue each.  NVRM lines naming the GPU by the
    driver's number (``NVRM: GPU6 ...``) get its address without an issue where the log ties the number
    to one address itself, with one where only the driver's probe order does.  The ties: a GPU UUID by
    ``NVRM: GPU at PCI:...: GPU-<uuid>``; a driver GPU number by a line naming both (an Xid with an
    address that says ``... from GPU4 GSP!``), by ``GPU 0000:a1:00.0: RmInitAdapter failed!`` right
    after that GPU's own ``GPU6 ...`` lines, else by the order of the ``nvidia 0000:..: enabling device``
    probe lines (GPU0 the first probed)."""
    by_uuid: dict[str, set[tuple[str, int]]] = {}
    by_index: dict[int, set[tuple[str, int]]] = {}
    pending: list[dict[str, Any]] = []  # the NVRM events just before, naming no address
    for ev in events:
        if ev["pci"] is None:
            if ev.get("_open") and "_device" not in ev:
                pending.append(ev)
            else:
                pending.clear()
            continue
        if "GPU-" in ev["message"] and (u := _UUID.search(ev["message"])):
            by_uuid.setdefault(u.group(0).lower(), set()).add((ev["pci"], ev["line"]))
        if ev["gpu_index"] is not None:
            by_index.setdefault(ev["gpu_index"], set()).add((ev["pci"], ev["line"]))
        elif ev["event_type"] == "gpu_init_failed" and "RmInitAdapter failed" in ev["message"]:
            # the OS layer's verdict on the GPU whose RM lines came just before it
            for before in pending:
                if 0 < ev["line"] - before["line"] <= 5:
                    if before["gpu_index"] is None:
                        before["pci"] = ev["pci"]
                    else:
                        by_index.setdefault(before["gpu_index"], set()).add((ev["pci"], ev["line"]))
        pending.clear()
    said: set[int] = set()  # GPU numbers placed by probe order (said once each)
    for ev in events:
        inside = ev.pop("_device", None)
        if inside is None:
            if ev["pci"] is None and ev["gpu_index"] is not None and ev.get("_open"):
                _place_by_number(result, ev, by_index, probes, said)
            continue
        what = "SXid" if ev["event_type"] == "sxid" else "Xid"
        u = _UUID.search(inside)
        if u is not None:
            known = by_uuid.get(u.group(0).lower(), set())
        elif ev["gpu_index"] is not None:
            known = by_index.get(ev["gpu_index"], set())
        else:
            known = set()
        if len({pci for pci, _ in known}) == 1:
            pci, line = min(known, key=lambda k: k[1])
            ev["pci"] = pci
            reason = f"{what} line names its device {inside!r}, not a PCI address: {pci} from line {line}"
        elif ev["gpu_index"] is not None:
            reason = (
                f"{what} line names the GPU {inside!r} by the driver's number, not a PCI address: event kept"
                f" as GPU{ev['gpu_index']}, address unknown"
            )
        else:
            reason = f"{what} line whose device {inside!r} could not be read: event kept, device unknown"
        result.issue(ev["line"], ev["raw"], reason)


def _place_by_number(
    result: ParseResult,
    ev: dict[str, Any],
    by_index: dict[int, set[tuple[str, int]]],
    probes: list[tuple[int, str]],
    said: set[int],
) -> None:
    """The address of an NVRM event naming its GPU by the driver's number: from a tie in the log (no
    issue), else from the order of the probe lines printed before it (said once per GPU: the driver
    numbers GPUs as it probes them, which a log that starts after the probe cannot show)."""
    known = {pci for pci, _ in by_index.get(ev["gpu_index"], set())}
    probed = [pci for line, pci in probes if line < ev["line"]]
    if len(known) == 1:
        ev["pci"] = known.pop()
    elif not known and ev["gpu_index"] < len(probed):
        ev["pci"] = probed[ev["gpu_index"]]
        if ev["gpu_index"] in said:
            return
        said.add(ev["gpu_index"])
        result.issue(
            ev["line"],
            ev["raw"],
            f"GPU{ev['gpu_index']} placed at {ev['pci']} by the order the driver probed the GPUs"
            " (nvidia ...: enabling device lines), not by a line naming both",
        )


def _continues(event: dict[str, Any], body: str, stamp: tuple[str | None, float | None, str | None]) -> bool:
    """A stamped ``NVRM:`` line that goes on with an open multi-line message, printed at the same time
    (within 50 ms): one that names no GPU of its own while the message so far has not ended its sentence
    ("The NVIDIA GPU 0000:b3:00.0" / "... has" / "fallen off the bus ..."), or the next line of the same
    driver function on the same GPU (``GPU6 _kgspBootGspRm: unexpected WPR2 already up, ...`` /
    ``GPU6 _kgspBootGspRm: (the GPU is likely in a bad state ...)``), not a repeat of it."""
    if not body.startswith("NVRM:") or body.startswith("NVRM: Xid"):
        return False
    if _NAMES_GPU.search(body):
        index = _NVRM_INDEX.match(body)
        if (
            index is None
            or event.get("_func") is None
            or (int(index.group(1)), index.group(2)) != (event["gpu_index"], event["_func"])
            or _body(body) in event["message"]
        ):
            return False
    elif event["message"].rstrip().endswith((".", "!", ")")):
        return False
    elif (kind := _nvrm_kind(body)) is not None and not (kind == event["event_type"] == "gpu_identity"):
        return False  # a line that says what it is is an event of its own (the serial goes with its GPU)
    ts_raw, uptime_s, ts = stamp  # of the line (all None when it has none)
    if event["uptime_s"] is not None and uptime_s is not None:
        return bool(abs(uptime_s - event["uptime_s"]) < 0.05)
    if event["ts"] and ts and "." in event["ts"] + ts:
        apart = datetime.fromisoformat(ts) - datetime.fromisoformat(event["ts"])
        return abs(apart.total_seconds()) < 0.05
    return bool(ts_raw == event["ts_raw"])


def _is_fallen(ev: dict[str, Any]) -> bool:
    return bool(ev["event_type"] == "fallen_off_bus" or (ev["event_type"] == "xid" and ev["xid"] == 79))


def _one_event_per_fault(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Xid 79 and the "GPU has fallen off the bus" text the driver prints with it are one fault: the
    second of them on the same GPU, within a few lines and without a driver load in between, is
    dropped (the Xid line is kept when both come; it carries pid and name)."""
    out: list[dict[str, Any]] = []
    last: dict[tuple[str | None, int | None], int] = {}  # GPU -> index in out of its latest fallen event
    for ev in events:
        if ev["event_type"] == "nvrm_driver_loaded":
            last.clear()
        if not _is_fallen(ev):
            out.append(ev)
            continue
        gpu = (ev["pci"], ev["gpu_index"])
        i = last.get(gpu)
        if (
            i is not None
            and ev["line"] - out[i]["line"] <= _FALLEN_WINDOW
            and out[i]["event_type"] != ev["event_type"]
        ):
            if ev["event_type"] == "xid":  # the Xid line wins: replace the text event in place
                out[i] = ev
            continue
        last[gpu] = len(out)
        out.append(ev)
    return out


def _body(line: str) -> str:
    return line[len("NVRM:") :].strip() if line.startswith("NVRM:") else line


def _row(event_type: str, message: str, **fields: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(
        (
            "pci",
            "gpu_index",
            "xid",
            "caused_by_xid",
            "pid",
            "process",
            "severity",
            "interface",
            "signature",
            "device",
        ),
        None,
    )
    row.update(event_type=event_type, message=message.strip(), **fields)
    return row


def _event(body: str) -> dict[str, Any] | None:
    """The event one line starts, or None.  Cheap substring tests pick the few regexes a line can
    match: most lines of a kernel log are noise and meet none of them."""
    if "NVRM" in body:
        return _nvrm_event(body)
    if "SXid" in body:
        if m := _SXID.search(body):
            sev = m.group("msg").split(",")[0].strip()
            row = _row(
                "sxid",
                m.group("msg"),
                pci=pci_address(m.group("pci")),
                xid=int(m.group("xid")),
                severity=sev if sev.lower() in ("fatal", "non-fatal") else None,
            )
            if row["pci"] is None:
                row["_device"] = m.group("pci")  # said and kept: see _read_devices
            return row
        return None
    if "Elastic Fabric Adapter" in body and (m := _EFA_LOADED.search(body)):
        return _row("efa_driver_loaded", m.group("ver"))
    if (body.startswith("efa ") or body.startswith("infiniband efa")) and (m := _EFA_PROBE.match(body)):
        return _row("efa_probe", body, pci=pci_address(m.group("dev")), interface=m.group("ibdev"))
    if (event := _signature_event(body)) is not None:
        return event
    if ("ink " in body or "new active" in body) and (event := _link_event(body)):
        return event
    return None


#: what ``_event`` gives a line a catalog signature claims without an event of its own (a report's detail
#: line, a recovery): it is known, so it is neither an event nor an unclassified error
_CLAIMED: dict[str, Any] = {"event_type": "-"}


#: every key of the catalog's signatures as one trie: a line it finds nothing in (most candidate lines:
#: links, probes, error words) meets no signature, which one search in C says
_SIGNATURE_KEYS = re.compile(trie(_shortest(tuple(k for s in SIGNATURES for k in s.keys))))
#: each key with the signatures (their places in the catalog) that hold it among their keys
_SIGNATURES_OF_KEY = tuple(
    (key, tuple(i for i, sig in enumerate(SIGNATURES) if key in sig.keys))
    for key in sorted({k for s in SIGNATURES for k in s.keys})
)


def _signature_event(body: str) -> dict[str, Any] | None:
    """The event of the first catalog signature (``parsers/kernel_signatures.toml``, in its order) whose
    keys the line holds and whose pattern it matches; ``_CLAIMED`` for a claim-only signature."""
    if _SIGNATURE_KEYS.search(body) is None:
        return None
    # the signatures whose keys the line holds, in catalog order: one pass over the keys, not over the rows
    held = sorted({i for key, rows in _SIGNATURES_OF_KEY if key in body for i in rows})
    for i in held:
        sig = SIGNATURES[i]
        m = sig.pattern.search(body)
        if m is None:
            continue
        if sig.claims_only:
            return _CLAIMED
        x = extract(sig, m)
        pci = pci_address(x["pci"]) if x["pci"] else None
        if x["src"]:  # an AER message naming its source device: the error is that device's
            pci = pci_address(x["src"]) or pci
        elif x["srcid"] and pci:  # old kernels: "error received: id=0010" (bus << 8 | device << 3 | function)
            rid = int(x["srcid"], 16)
            pci = f"{pci[:4]}:{rid >> 8:02x}:{(rid >> 3) & 0x1F:02x}.{rid & 7}"
        return _row(
            sig.event_type,
            body,
            pci=pci,
            pid=to_int(x["pid"]) if x["pid"] else None,
            process=x["process"],
            severity=x["severity"].strip() if x["severity"] else sig.severity_text,
            signature=sig.id,
            device=x["device"],
        )
    return None


#: the level ``dmesg -x`` (``kern  :err   : ``) or Talos (``<node>: kern:   alert: ``) prints before a message
_LEVEL = re.compile(
    r"^(?:[\w.:-]+:\s+)?[a-z]+\s*:\s*(emerg|alert|crit|err|warn|warning|notice|info|debug)\s*:"
)
_ERROR_LEVELS = ("emerg", "alert", "crit", "err")
_KMSG_LEVELS = ("emerg", "alert", "crit", "err", "warning", "notice", "info", "debug")
#: an error word (a line that prints no level)
_ERROR_WORD = re.compile(r"(?i:error|fail|timed out|timeout)")
#: a message that starts with the driver or subsystem and the device it is about: ``nvme nvme0: ``,
#: ``ena 0000:00:05.0 eth0: ``, ``sd 0:0:0:0: [sda] ``, ``EXT4-fs (sda1): ``, ``mlx5_core 0000:..: ``
_DEVICE_PREFIX = re.compile(
    r"^(?P<drv>[A-Za-z][\w.-]*)(?: (?P<dev>\([\w.-]+\)|[\w.:-]+?))?(?: (?P<ifname>[\w.@-]+))?: "
)


def _level(line: str, kmsg_prio: str | None) -> str | None:
    """The level a line prints: a /dev/kmsg record's priority, ``dmesg -x``'s or Talos' ``facility:level``
    prefix; None where the log prints none (``dmesg -T``, syslog, the journal's short formats)."""
    if kmsg_prio is not None:
        return _KMSG_LEVELS[int(kmsg_prio) & 7]
    lm = _LEVEL.match(line) if line[:1] != "[" else None  # a stamp first: no level prefix
    return lm.group(1) if lm else None


def _unclassified(body: str, level: str | None) -> dict[str, Any] | None:
    """A line no signature claims that is at error level or worse (the level the log prints: ``dmesg -x``,
    Talos, /dev/kmsg: :func:`_level`), or, where the log prints no level, an error word in a message that
    names its driver and device first; the catalog's noise rows aside.  Its row is ``kernel_error`` with the
    level (or ``error word``) in ``severity`` and the driver or device in ``device``."""
    if level is not None:
        if level not in _ERROR_LEVELS:
            return None  # the log says the level: an error word at warning or info is no error
    elif not _ERROR_WORD.search(body):
        return None  # most candidate lines: no level, no error word
    else:
        prefix = _DEVICE_PREFIX.match(body)
        if prefix is None or not _ERROR_WORD.search(body, prefix.end()):
            return None
    for n in NOISE:
        for key in n.keys:
            if key in body:
                if n.pattern.search(body):
                    return None
                break
    prefix = _DEVICE_PREFIX.match(body)
    device = None
    if prefix is not None:
        device = (prefix.group("dev") or prefix.group("drv")).strip("()")
    return _row("kernel_error", body, severity=level or "error word", device=device)


def _nvrm_event(body: str) -> dict[str, Any] | None:
    if "Xid" in body and (m := _XID.search(body)):
        inside = m.group("pci")
        addr = _XID_ADDR.fullmatch(inside)
        msg = m.group("msg")
        caused = _CAUSED.search(msg)
        if addr is None:  # the driver's GPU number instead of an address: "Xid (GPU3)"
            index = _XID_INDEX.fullmatch(inside)
        else:  # an Xid 119 line says its GPU's number: "... RPC response from GPU4 GSP!"
            index = _GSP_OF.search(msg) if "GSP" in msg else None
        row = _row(
            "xid",
            msg,
            pci=pci_address(addr.group("addr")) if addr else None,
            gpu_index=int(index.group(1)) if index else None,
            xid=int(m.group("xid")),
            caused_by_xid=int(caused.group(1)) if caused else None,
            pid=_pid(m.group("pid")),
            process=_name(m.group("name")),
        )
        if addr is None:
            row["_device"] = inside  # "Xid (PCI:...)", "Xid (GPU3)": kept and said, see _read_devices
        return row
    if "loading NVIDIA" in body and (m := _DRIVER.search(body)):
        return _row("nvrm_driver_loaded", m.group("ver"))
    if not body.startswith("NVRM:"):
        return None
    gpu = _GPU_PCI.search(body) if "GPU" in body else None
    index = _NVRM_INDEX.match(body)
    kind = "fallen_off_bus" if _FALLEN.search(body) else _nvrm_kind(body)
    if gpu or index or kind:
        row = _row(
            kind or "nvrm_message",
            _body(body),
            pci=pci_address(gpu.group(1)) if gpu else None,
            gpu_index=int(index.group(1)) if index else None,
            xid=79 if kind == "fallen_off_bus" else None,
        )
        row["_open"] = True  # the driver's next lines may go on with it (see _continues)
        row["_func"] = index.group(2) if index else None
        return row
    return None


#: What an NVRM line without an Xid is, by the words the driver prints (first match wins): the
#: ``event_type`` of its row.  A line naming no GPU is an event only when it is one of these.
_NVRM_KINDS = tuple(
    (re.compile(p, re.IGNORECASE), kind)
    for p, kind in (
        (r"\bGPU (?:at )?(?:PCI:)?[0-9a-f:.]+:? GPU-[0-9a-f]{8}-|GPU Board Serial Number", "gpu_identity"),
        (r"heartbeat|GSP.*(?:timed out|timeout)|(?:timed out|timeout).*GSP|_kgspLogRpcTimeout|_kgspRpcRecvPoll",
         "gsp_timeout"),
        (r"rpcSendMessage failed|rpcRecvPoll failed|\bRPC\b.*\bfail|GSP RPC error", "gsp_rpc_failed"),
        (r"NV_ERR_GPU_IS_LOST|GPU lost from the bus|GPU is lost\b", "gpu_lost"),
        (r"nvlink.*(?:error|fatal|fail)", "nvlink_error"),
        (r"\bECC\b|\bDBE\b|\bSBE\b|row remap|page retire|retired pages?|dynamic page|uncorrectable|"
         r"memory (?:subsystem )?(?:error|fault)|MemsysError|\bHBM\b.*(?:error|fail)", "memory_error"),
        (r"sysmembar|PCI-?E? ?Bus timeout|flush (?:timed out|timeout)|\bBAR\d? .*time(?:d )?out|bus.*time(?:d )?out",
         "bus_timeout"),
        (r"RmInitAdapter|rm_init_adapter|Cannot initialize GSP|_kgspBootGspRm|kgspExecuteFwsec|"
         r"failed to (?:initialize|boot|allocate)|cannot attach gpu", "gpu_init_failed"),
        (r"MMU Fault|TLB invalidation|kgmmu\w*:.*fail", "mmu_error"),
    )
)  # fmt: skip


#: Per kind of ``_NVRM_KINDS``, words (lower case) one of which each of its matches holds: a line of ASCII
#: (where ignoring case is lowering it) holding none of them is not of that kind, without a search.
_NVRM_KIND_WORDS = (
    ("gpu-", "gpu board serial number"),
    ("heartbeat", "gsp"),
    ("rpc",),
    ("lost",),
    ("nvlink",),
    ("ecc", "dbe", "sbe", "row remap", "page retire", "retired page", "dynamic page", "uncorrectable", "memory",
     "memsyserror", "hbm"),
    ("sysmembar", "bus", "flush", "bar"),
    ("rminitadapter", "rm_init_adapter", "cannot initialize gsp", "_kgspbootgsprm", "kgspexecutefwsec",
     "failed to ", "cannot attach gpu"),
    ("mmu fault", "tlb invalidation", "kgmmu"),
)  # fmt: skip
_NVRM_KIND_TESTS = tuple(
    (re.compile("|".join(re.escape(w) for w in words)).search, pattern.search, kind)
    for words, (pattern, kind) in zip(_NVRM_KIND_WORDS, _NVRM_KINDS, strict=True)
)


def _nvrm_kind(body: str) -> str | None:
    """The ``event_type`` of an NVRM line without an Xid by what it says (``_NVRM_KINDS``), else None."""
    if not body.isascii():  # IGNORECASE folds a few letters beyond ASCII (the Kelvin sign is a k)
        return next((kind for pattern, kind in _NVRM_KINDS if pattern.search(body)), None)
    low = body.lower()
    return next((kind for words, search, kind in _NVRM_KIND_TESTS if words(low) and search(body)), None)


def _link_event(body: str) -> dict[str, Any] | None:
    """NIC link down/up (mlx5, ena, efa, ...) and bonding link/failover lines; ``interface`` is the
    port whose link changed (for bonding: the slave), ``pci`` the NIC's address when printed."""
    if m := _NIC_LINK.search(body):
        state = "up" if m.group("state").lower() in ("up", "active") else "down"
        return _row(f"link_{state}", body, interface=m.group("ifname"), pci=pci_address(m.group("dev")))
    if "bond" not in body and "slave" not in body:
        return None
    if m := _BOND_LINK.search(body):
        return _row(f"link_{m.group('state')}", body, interface=m.group("slave") or m.group("ifname"))
    if m := _BOND_ACTIVE.search(body):
        return _row("bond_failover", body, interface=m.group("slave") or m.group("ifname"))
    return None


def _classify_continuation(event: dict[str, Any]) -> None:
    """A multi-line NVRM message becomes 'fallen_off_bus' once its text says so."""
    if event.get("_open") and event["event_type"] != "fallen_off_bus" and _FALLEN.search(event["message"]):
        event["event_type"] = "fallen_off_bus"
        event["xid"] = 79


def _up_stamp(up: str | None) -> tuple[str | None, float | None, str | None]:
    """The stamp fields of an ``[ uptime]`` (all None without one)."""
    return (up, float(up), None) if up else (None, None, None)


_G = {name: index - 1 for name, index in _STAMP.groupindex.items()}


def _stamp_of(g: tuple[str | None, ...]) -> tuple[str | None, float | None, str | None]:
    """(``ts_raw``, ``uptime_s``, ``ts``) of a line by the groups of its ``_STAMP``."""
    if up := g[_UP]:
        return up, float(up), None
    if ctime := g[_G["ctime"]]:
        raw = re.sub(r"\s+", " ", ctime)
        try:
            ts = datetime.strptime(raw, "%a %b %d %H:%M:%S %Y").isoformat()
        except ValueError:
            ts = None
        return raw, None, ts
    if iso := g[_ISO] or g[_G["biso"]]:
        return iso, None, _iso_utc(iso)
    if full := g[_G["full"]]:  # journalctl -o short-full: "Fri 2024-08-30 11:43:09 UTC" (host time)
        return full, None, _iso_utc(full[4:].replace(" ", "T"))
    if unix := g[_G["unix"]]:  # journalctl -o short-unix: seconds since the epoch, UTC
        utc = datetime.fromtimestamp(float(unix), tz=timezone.utc).replace(tzinfo=None)
        return unix, None, utc.isoformat()
    if g[_G["kmsg"]]:  # /dev/kmsg: microseconds since boot
        usec = cast(str, g[_G["usec"]])  # matched with kmsg
        return usec, int(usec) / 1e6, None
    rel = g[_G["rel"]] or g[_SYSLOG]
    return (rel.strip() if rel else None), None, None


def _iso_utc(iso: str) -> str | None:
    """ISO time with any offset (``+0000``, ``+00:00``, ``Z``) as naive UTC."""
    text = re.sub(r"([+-]\d\d)(\d\d)$", r"\1:\2", iso.replace("Z", "+00:00").replace(",", "."))
    # Python 3.10 reads 3 or 6 fraction digits only: Talos prints nanoseconds, trimmed zeros too
    text = re.sub(r"\.(\d+)", lambda f: "." + f.group(1)[:6].ljust(6, "0"), text, count=1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = parsed.utcoffset()
    if offset is not None:
        parsed = (parsed - offset).replace(tzinfo=None)
    return parsed.isoformat()


def _pid(value: str | None) -> int | None:
    if value is None or value.strip() in _UNKNOWN:
        return None
    return to_int(value.strip("'"))


def _name(value: str | None) -> str | None:
    if value is None or value.strip() in _UNKNOWN:
        return None
    return value.strip().strip("'")
