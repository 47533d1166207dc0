"""A kernel log file of several boots (``/var/log/kern.log``, ``messages``, ``syslog``, or the
nvidia-bug-report's grep of one) cut at each boot, so that an earlier boot's faults are events of that
boot and never read as the running one's.

A syslog file holds every boot since it was last rotated; ``dmesg`` and a journal part hold one.  Where
a boot starts is told, in this order of trust:

- the kernel's first message of every boot, ``Linux version ...`` (a whole kernel log holds it);
- the seconds since boot the kernel stamps on its lines (``kernel: [   18.505744] ...``, as rsyslog
  writes them from ``/proc/kmsg``): they fall back at a reboot, and the wall time less them (when the
  boot began) jumps by more than :data:`BOOT_GAP_S` where a new boot began at a similar uptime;
- in a log holding neither (the bug report's grep of ``/var/log/messages`` on a system whose rsyslog
  leaves the stamp out), the NVIDIA driver's own load line, ``NVRM: loading NVIDIA UNIX ...``, which it
  prints once per boot when it loads at boot (a driver reloaded by hand counts as a boot then: the
  output's note says the boots were counted so).

The last boot of the file is the running one: the file is the live system's, being written while the
report was made.  The others are numbered back from it (-1 the boot before, -2 ...), as
``journalctl -b -1`` numbers them.  A laid-out output of an earlier boot is named
``dmesg-boot-<N>-<file>.txt`` (:func:`output_name`), which is how the dmesg parser knows its boot when
its command (a ``grep`` or ``cat`` of the file) does not say (:func:`parsers.dmesg.boot_of`).

>>> text = "Sep  7 20:33:40 h kernel: [   18.5] NVRM: loading NVIDIA\\nSep  7 20:46:39 h kernel: [   18.7] NVRM: loading NVIDIA\\n"
>>> [(b.first, b.how) for b in split_boots(text)]
[(0, ''), (1, 'uptime')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

#: a new boot where the moment a line's boot began (its wall time less its uptime) moves by more than
#: this: lines of one boot agree within seconds (syslog stamps whole seconds as rsyslog receives them),
#: while two boots are at least a boot's length plus a reboot apart
BOOT_GAP_S = 60.0
#: at most this many earlier boots of one file are laid out (the rest is said in a problem)
MAX_EARLIER = 64

_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                        "oct", "nov", "dec"), 1)}  # fmt: skip
#: a syslog stamp (``Sep  7 20:33:40``, the journal's ``11月 16 11:21:34``) or RFC 3339 (rsyslog's
#: high-precision format), then the host and the tag
_LINE = re.compile(
    r"^(?:(?P<mon>[A-Za-z]{3}|\d{1,2}月)\s+(?P<day>\d{1,2})\s+(?P<clock>\d\d:\d\d:\d\d)"
    r"|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?))"
    r"\s+\S+\s+(?P<tag>[^\s:\[]+)(?:\[\d+\])?:\s?(?P<body>.*)$"
)
_UPTIME = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<rest>.*)$")
_LINUX_VERSION = re.compile(r"^Linux version \d")
_DRIVER_LOAD = "NVRM: loading NVIDIA"
_NVLINK_INIT = "nvidia-nvlink: Nvlink Core is being initialized"


@dataclass(frozen=True)
class Boot:
    """One boot's lines of a log file: the index of its first line, its text, and what told its start
    ('' for the file's first boot; 'Linux version', 'uptime' or 'driver load')."""

    first: int
    text: str
    how: str


@dataclass
class _Line:
    kernel: bool
    when: datetime | None  # the wall time (a syslog stamp gets a running year)
    uptime: float | None
    linux_version: bool
    driver_load: bool


def split_boots(text: str) -> list[Boot]:
    """The boots of a kernel log file, oldest first (a file of one boot is one Boot).

    >>> t = "x kernel\\nNov  1 10:00:00 h kernel: Linux version 5.10\\nNov  1 10:00:05 h kernel: NVRM: a\\n"
    >>> [(b.first, b.how, b.text.count("\\n")) for b in split_boots(t)]
    [(0, '', 1), (1, 'Linux version', 2)]
    """
    lines = text.splitlines(keepends=True)
    info = _read(lines)
    by_version = any(i.linux_version for i in info)
    by_uptime = not by_version and any(i.uptime is not None for i in info)
    starts: list[tuple[int, str]] = [(0, "")]
    moment: float | None = None  # when the current boot began: a stamped line's wall time less its uptime
    last_up: float | None = None
    seen_kernel = False
    for n, line in enumerate(info):
        if not line.kernel:
            continue
        how = ""
        if by_version:
            how = "Linux version" if line.linux_version and n > 0 else ""
        elif line.uptime is not None:
            began = line.when.timestamp() - line.uptime if line.when is not None else None
            fell = last_up is not None and line.uptime < last_up
            moved = began is not None and moment is not None and abs(began - moment) > BOOT_GAP_S
            how = "uptime" if fell or moved else ""
            if how or moment is None:
                moment = began
            last_up = line.uptime
        elif not by_uptime and line.driver_load and seen_kernel:
            how = "driver load"
        seen_kernel = True
        if how:
            first = n
            if how == "driver load" and _NVLINK_INIT in lines[n - 1]:
                first = n - 1  # the line the driver prints just before its banner belongs to that load
            if first > starts[-1][0]:
                starts.append((first, how))
    boots = []
    for k, (first, how) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        body = "".join(lines[first:end])
        if body.strip():
            boots.append(Boot(first, body, how))
    return boots


def _read(lines: list[str]) -> list[_Line]:
    out: list[_Line] = []
    year = 2000  # a syslog stamp has no year: a running one keeps the order across December
    last_month = 0
    for raw in lines:
        text = raw.rstrip("\r\n")
        m = _LINE.match(text)
        when: datetime | None = None
        if m is not None:
            kernel = m.group("tag") == "kernel"
            body = m.group("body")
            if m.group("iso"):
                when = _iso(m.group("iso"))
            else:
                mon = m.group("mon")
                month = int(mon[:-1]) if mon.endswith("月") else _MONTHS.get(mon.lower(), 0)
                if month:
                    if month < last_month:
                        year += 1
                    last_month = month
                    try:
                        hh, mm, ss = (int(x) for x in m.group("clock").split(":"))
                        when = datetime(year, month, int(m.group("day")), hh, mm, ss, tzinfo=timezone.utc)
                    except ValueError:
                        when = None
        elif _UPTIME.match(text):
            kernel, body = True, text  # a dmesg line without a syslog stamp (/var/log/dmesg)
        else:
            kernel, body = False, text
        up = _UPTIME.match(body)
        uptime = float(up.group("up")) if up else None
        rest = up.group("rest") if up else body
        out.append(
            _Line(
                kernel=kernel,
                when=when,
                uptime=uptime,
                linux_version=kernel and bool(_LINUX_VERSION.match(rest)),
                driver_load=kernel and _DRIVER_LOAD in rest,
            )
        )
    return out


def _iso(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def output_name(boot: int, source: str) -> str:
    """The laid-out file of one earlier boot of a log file (``dmesg-boot-1-kern.log.txt``): the dmesg
    parser reads the boot from it.

    >>> output_name(-2, "/var/log/kern.log"), output_name(-1, "var_log/messages")
    ('dmesg-boot-2-kern.log.txt', 'dmesg-boot-1-messages.txt')
    """
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", source.rsplit("/", 1)[-1]).strip("._") or "log"
    return f"dmesg-boot{boot}-{stem}.txt"


@dataclass
class Earlier:
    """A log file cut into its boots: the running boot's lines (and the line it starts at, 1-based in
    the file), and each earlier boot's (boot number, first line, text), newest first."""

    current: str
    current_line: int
    earlier: list[tuple[int, int, str]]
    how: str  # how the boots were told apart ('' when the file holds one boot)
    dropped: int  # earlier boots past MAX_EARLIER, not laid out


def by_boot(text: str) -> Earlier:
    """:func:`split_boots` of a file, numbered back from its last boot (the running one).

    >>> e = by_boot("Nov  1 10:00:00 h kernel: Linux version 5\\nNov  2 10:00:00 h kernel: Linux version 5\\n")
    >>> e.current_line, e.earlier, e.how
    (2, [(-1, 1, 'Nov  1 10:00:00 h kernel: Linux version 5\\n')], 'Linux version')
    """
    boots = split_boots(text)
    if not boots:
        return Earlier("", 1, [], "", 0)
    last = boots[-1]
    older = list(reversed(boots[:-1]))
    kept = older[:MAX_EARLIER]
    hows = sorted({b.how for b in boots if b.how})
    return Earlier(
        current=last.text,
        current_line=last.first + 1,
        earlier=[(-(k + 1), b.first + 1, b.text) for k, b in enumerate(kept)],
        how=", ".join(hows),
        dropped=len(older) - len(kept),
    )


def how_words(how: str) -> str:
    """What a note says of how the boots of a file were told apart."""
    words = {
        "Linux version": "the kernel's 'Linux version' line at each boot",
        "uptime": "the kernel's seconds since boot on each line",
        "driver load": "the NVIDIA driver's load line (one per boot; a reload by hand would count as one)",
    }
    return "; ".join(words[h] for h in how.split(", ") if h in words)


#: the body of a line after its ``kernel:`` tag and the kernel's own ``[ uptime]`` stamp
_KERNEL_BODY = re.compile(r"\bkernel: (?:\[\s*\d+\.\d+\]\s?)?(?P<body>.*)$")
#: one line in two logs is stamped within this many seconds (rsyslog stamps a line as it receives it,
#: the journal as the kernel hands it over: a second apart is common)
SAME_LINE_S = 2


def line_keys(text: str) -> list[tuple[int, int, str, int]]:
    """(month, day, message, second of the day) of each kernel line of a syslog file or of a journal in
    its short format, so that one line found in two logs (``kern.log`` and ``journalctl -b -1``, which
    prints no uptime and may name the month in the system's locale) is known as one (:class:`Seen`).

    >>> line_keys("Nov 15 14:25:29 h kernel: [    3.1] NVRM: x\\n"), line_keys("11月 15 14:25:28 h kernel: NVRM: x\\n")
    ([(11, 15, 'NVRM: x', 51929)], [(11, 15, 'NVRM: x', 51928)])
    """
    keys: list[tuple[int, int, str, int]] = []
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m is None or m.group("tag") != "kernel" or not m.group("mon"):
            continue
        mon = m.group("mon")
        month = int(mon[:-1]) if mon.endswith("月") else _MONTHS.get(mon.lower(), 0)
        body = _KERNEL_BODY.search(raw)
        if month and body is not None:
            hh, mm, ss = (int(x) for x in m.group("clock").split(":"))
            keys.append((month, int(m.group("day")), body.group("body").strip(), hh * 3600 + mm * 60 + ss))
    return keys


class Seen:
    """The kernel lines already read, each with the boot it was read as."""

    def __init__(self) -> None:
        self._lines: dict[tuple[int, int, str], list[tuple[int, int]]] = {}

    def add(self, keys: list[tuple[int, int, str, int]], boot: int) -> None:
        for month, day, message, second in keys:
            self._lines.setdefault((month, day, message), []).append((second, boot))

    def boot_of(self, keys: list[tuple[int, int, str, int]]) -> int | None:
        """The boot that holds most of these lines (stamped within SAME_LINE_S), else None.

        >>> seen = Seen(); seen.add(line_keys("11月 15 13:56:19 h kernel: NVRM: a\\n"), -2)
        >>> seen.boot_of(line_keys("Nov 15 13:56:20 h kernel: [ 4.0] NVRM: a\\n")), seen.boot_of([])
        (-2, None)
        """
        hits: list[int] = []
        for month, day, message, second in keys:
            near = [
                b for s, b in self._lines.get((month, day, message), []) if abs(s - second) <= SAME_LINE_S
            ]
            if near:
                hits.append(near[0])
        if not keys or len(hits) * 2 <= len(keys):
            return None
        return max(set(hits), key=hits.count)
