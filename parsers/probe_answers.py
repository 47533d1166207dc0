"""Failure answers of the probes: what a tool prints instead of its output when the node is sick.

A probe that answers "couldn't communicate with the NVIDIA driver" or hangs until its timeout has said
the most important thing about its node.  This module is the catalogue of those answers, per probe
family, and the one reader that finds them in a probe's stdout, its stderr and its exit code; the
rows it returns are stored in the ``probe_answer`` table and judged by rules like any other fact.

A missing tool (exit 127) and a permission problem are not answers about the node: they stay
coverage facts (``bundle.coverage``) and are not returned here.

Sample (stdout of ``nvidia-smi -q`` on a node whose driver is gone, exit 9)::

    NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.

Examples:

>>> [a.answer for a in read_answers("nvidia-smi-q", SAMPLE, "", 9)]
['driver-unreachable']
>>> a = read_answers("nvidia-smi", "Unable to determine the device handle for GPU0000:20:00.0: Unknown Error\\n", "", 255)[0]
>>> a.answer, a.pci, a.stream, a.line
('device-handle-error', '0000:20:00.0', 'stdout', 1)
>>> [(a.answer, a.stream) for a in read_answers("fi-info", "", "fi_getinfo: -61 (No data available)\\n", 61)]
[('no-provider', 'stderr')]
>>> [(a.answer, a.stream, a.line) for a in read_answers("nvidia-smi-q", "", "", 124)]
[('timeout', 'manifest', None)]
>>> read_answers("nvidia-smi-q", "", "bash: nvidia-smi: command not found\\n", 127)
[]
>>> [(a.answer, a.text) for a in read_answers("nvidia-smi-q", "", "", 15)]  # the exit code alone
[('gpu-lost', 'exit 15: NVML_ERROR_GPU_IS_LOST: a GPU fell off the bus or became inaccessible')]

Each catalogue entry says where its wording comes from (a public report of the real output); the
test fixtures under ``tests/fixtures/probe-answers/`` keep those outputs byte-exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SAMPLE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
    "latest NVIDIA driver is installed and running.\n"
)

#: probe kind -> family: the rules judge answers by family (every nvidia-smi probe is one GPU view).
FAMILIES: dict[str, str] = {
    "nvidia-smi-q": "nvidia-smi",
    "nvidia-smi-csv": "nvidia-smi",
    "nvidia-smi": "nvidia-smi",
    "nvidia-smi-topo": "nvidia-smi",
    "nvidia-smi-nvlink": "nvidia-smi",
    "fi-info": "fi-info",
    "efa-ports": "efa",
    "dcgmi-diag": "dcgm",
    "fabricmanager": "fabricmanager",
}

#: Exit codes that are facts about the collection, not the node: the tool is missing, or it was skipped.
NOT_ANSWERS = (127,)


@dataclass(frozen=True)
class Answer:
    """One failure answer a real tool gives: the family it belongs to, how to recognise it, what it says."""

    answer: str
    family: str
    pattern: re.Pattern[str]
    meaning: str
    source: str


def _re(text: str) -> re.Pattern[str]:
    return re.compile(text, re.IGNORECASE)


#: The catalogue, most specific first (the first entry that matches a line wins for that line).
CATALOGUE: tuple[Answer, ...] = (
    Answer(
        "nvml-mismatch",
        "nvidia-smi",
        _re(r"Failed to initialize NVML: Driver/library version mismatch"),
        "the loaded kernel module and the user-space NVML library are of different driver versions "
        "(a driver update without a reboot or module reload): no GPU can be queried or used",
        "NVIDIA/open-gpu-kernel-modules forks and user reports (tinygrad/open-gpu-kernel-modules#47, "
        "intel/llvm#17614: 'Failed to initialize NVML: Driver/library version mismatch' + "
        "'NVML library version: 550.144')",
    ),
    Answer(
        "permission",
        "nvidia-smi",
        _re(r"Failed to initialize NVML: Insufficient Permissions"),
        "the collector ran without access to the GPU devices: a collection problem, not the node's",
        "NVML's NVML_ERROR_NO_PERMISSION string",
    ),
    Answer(
        "nvml-init-failed",
        "nvidia-smi",
        _re(r"Failed to initialize NVML: (?P<why>.+)"),
        "NVML could not start: the driver is not usable from this host",
        "NVML's nvmlInit error strings as nvidia-smi prints them ('Failed to initialize NVML: Unknown Error')",
    ),
    Answer(
        "driver-unreachable",
        "nvidia-smi",
        _re(r"NVIDIA-SMI has failed because it couldn.t communicate with the NVIDIA driver"),
        "nvidia-smi cannot reach the kernel driver: the module is not loaded, failed to initialise the "
        "GPUs, or was built for another kernel",
        "NVIDIA/nvidia-docker#988, ci-for-research/self-hosted-runners#40 (nvidia-smi's own message)",
    ),
    Answer(
        "driver-not-loaded",
        "nvidia-smi",
        _re(
            r"^Detected driver type: GPU Driver not installed\?|^\*\*\* /proc/driver/nvidia/(?:\./)?version does not exist"
        ),
        "no NVIDIA kernel module is loaded (lsmod lists none; /proc/driver/nvidia/version is not there): "
        "nvidia-smi cannot run and no GPU of the node can be used",
        "NVIDIA's nvidia-bug-report.sh, in place of nvidia-smi's output: detect_driver_type prints 'GPU "
        "Driver not installed?' when lsmod lists neither nvidia nor mods ($Change: 37062940 $), and "
        "report_file '*** <file> does not exist' for the driver's version file (every script version)",
    ),
    Answer(
        "no-devices",
        "nvidia-smi",
        _re(r"^\s*No devices were found"),
        "the driver is loaded but no GPU initialised: every GPU of the node is unusable",
        "nvidia-smi's message when NVML counts zero devices (exit 6)",
    ),
    Answer(
        "gpu-lost",
        "nvidia-smi",
        _re(
            r"(?:Unable to determine the device handle for GPU ?(?P<pci>[0-9A-Fa-f]+:[0-9A-Fa-f:.]+): )?GPU is lost"
        ),
        "the GPU stopped answering on the bus (as Xid 79): it needs a reboot, then replacement if it recurs",
        "JosephKJ/OWOD#81: 'Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. "
        "Reboot the system to recover this GPU'",
    ),
    Answer(
        "device-handle-error",
        "nvidia-smi",
        _re(
            r"Unable to (?:determine|detect) the device handle for GPU ?(?P<pci>[0-9A-Fa-f]+:[0-9A-Fa-f:.]+): (?P<why>.+)"
        ),
        "NVML cannot open one GPU (it fell off the bus or its PCIe link failed); the others may answer",
        "NVIDIA/open-gpu-kernel-modules#387, NVIDIA/nvidia-docker#1553, cihlab/fics-cluster-guide#53",
    ),
    Answer(
        "no-provider",
        "fi-info",
        _re(r"fi_getinfo(?:\(\))?:?.*?(?:-61\b|No data available)"),
        "libfabric found no provider matching the request (-FI_ENODATA): no EFA provider on this node",
        "ofiwg/libfabric#2159 (fi_getinfo returns -FI_ENODATA when no provider matches), #9807",
    ),
    Answer(
        "no-ib-devices",
        "efa",
        _re(r"No IB devices found"),
        "no RDMA device is registered: the efa driver is not loaded or the EFA devices are gone",
        "libibverbs' ibv_devinfo message (nminoru/pib#2 shows it verbatim)",
    ),
    Answer(
        "hostengine-unreachable",
        "dcgm",
        _re(r"Unable to connect to host engine|unable to establish a connection to the specified host"),
        "dcgmi could not reach nv-hostengine: the DCGM diagnostics did not run",
        "NVIDIA/DCGM#43: 'Error: Unable to connect to host engine. Host engine connection "
        "invalid/disconnected.'",
    ),
    Answer(
        "unit-not-found",
        "fabricmanager",
        _re(r"Unit nvidia-fabricmanager(?:\.service)? (?:could not be found|not found)"),
        "the nvidia-fabricmanager service is not installed: on an NVSwitch system CUDA cannot start",
        "systemd's answer for an unknown unit (systemctl status, exit 4); NVIDIA's Fabric Manager user "
        "guide: NVSwitch systems need the service running",
    ),
)

#: nvidia-smi's exit code is NVML's return value (the nvidia-smi man page, RETURN VALUE; NVML's
#: nvmlReturn_t): where the output carries no catalogued line (it was cut, or went elsewhere) the code
#: alone says what happened.
NVIDIA_SMI_EXIT: dict[int, tuple[str, str]] = {
    4: ("permission", "NVML_ERROR_NO_PERMISSION"),
    6: ("no-devices", "NVML_ERROR_NOT_FOUND: no GPU found"),
    8: (
        "insufficient-power",
        "NVML_ERROR_INSUFFICIENT_POWER: a GPU's external power cables are not attached",
    ),
    9: ("driver-unreachable", "NVML_ERROR_DRIVER_NOT_LOADED: the NVIDIA driver is not loaded"),
    12: ("nvml-init-failed", "NVML_ERROR_LIBRARY_NOT_FOUND: the NVML library could not be loaded"),
    14: ("inforom-corrupted", "NVML_ERROR_CORRUPTED_INFOROM: a GPU's infoROM is corrupted"),
    15: ("gpu-lost", "NVML_ERROR_GPU_IS_LOST: a GPU fell off the bus or became inaccessible"),
    16: ("reset-required", "NVML_ERROR_RESET_REQUIRED: a GPU needs a reset before it can be used"),
    18: ("nvml-mismatch", "NVML_ERROR_LIB_RM_VERSION_MISMATCH: driver and library versions differ"),
}

#: Answers that are about the collection, not the node (kept for the record, never judged as faults).
COLLECTION_ANSWERS = frozenset({"permission"})

#: Words one of which every catalogued answer's line holds (in any case): a line without one is not
#: searched.  Looked for as plain substrings of the case-folded text, which is ~100x faster than a
#: case-blind regex over an 80 KB nvidia-smi -q dump that holds none of them.  str.casefold folds the long
#: s and the Kelvin sign as re.IGNORECASE does; the dotted and dotless capital I, which re also takes for
#: an i, are turned into one first.
_PREFILTER_WORDS = (
    "nvml",
    "nvidia-smi has failed",
    "no devices were found",
    "device handle",
    "gpu is lost",
    "fi_getinfo",
    "driver not installed",
    "version does not exist",
    "no ib devices",
    "host engine",
    "specified host",
    "could not be found",
    "not found",
)


def _prefilter(text: str) -> bool:
    """Whether ``text`` holds one of the prefilter words, in any case.

    >>> _prefilter("Failed to initialize NVML: Driver/library version mismatch"), _prefilter("GPU 0: ok")
    (True, False)
    """
    folded = text.casefold()
    if "\u0131" in folded or "\u0307" in folded:  # dotless i; the dot casefold leaves after an I with one
        folded = folded.replace("i\u0307", "i").replace("\u0131", "i")
    return any(word in folded for word in _PREFILTER_WORDS)


@dataclass(frozen=True)
class ProbeAnswer:
    """One answer found: which, where (stdout, stderr or the manifest's exit code) and the line."""

    answer: str
    family: str
    stream: str  # stdout | stderr | manifest
    line: int | None  # 1-based line in the stream (None for an exit code)
    text: str
    pci: str | None = None


def family_of(kind: str | None) -> str | None:
    """The answer family of a probe kind (None: no catalogued answers)."""
    return FAMILIES.get(kind or "")


def read_answers(kind: str | None, stdout: str, stderr: str, exit_code: int | None) -> list[ProbeAnswer]:
    """Every failure answer a probe of ``kind`` gave: catalogued lines of stdout/stderr, a timeout.

    A timeout (exit 124) is an answer of any family; a missing tool (127) is none.  An answer is
    recorded once per stream and answer (the first line that says it), with the GPU address where the
    line names one (one row per GPU for per-GPU answers).
    """
    if exit_code in NOT_ANSWERS:
        return []
    family = family_of(kind)
    found: list[ProbeAnswer] = []
    if family is not None:
        for stream, text in (("stdout", stdout), ("stderr", stderr)):
            if text and _prefilter(text):
                found.extend(_scan(family, stream, text))
    if exit_code == 124:
        found.append(ProbeAnswer("timeout", family or kind or "", "manifest", None, "timed out (exit 124)"))
    elif family == "nvidia-smi" and not found and exit_code in NVIDIA_SMI_EXIT:
        answer, meaning = NVIDIA_SMI_EXIT[exit_code]
        found.append(ProbeAnswer(answer, family, "manifest", None, f"exit {exit_code}: {meaning}"))
    return found


def _scan(family: str, stream: str, text: str) -> list[ProbeAnswer]:
    out: list[ProbeAnswer] = []
    seen: set[tuple[str, str | None]] = set()
    entries = [a for a in CATALOGUE if a.family == family]
    for no, line in enumerate(text.splitlines(), start=1):
        if not _prefilter(line):
            continue
        for entry in entries:
            m = entry.pattern.search(line)
            if m is None:
                continue
            pci = _pci(m.groupdict().get("pci"))
            if (entry.answer, pci) not in seen:
                seen.add((entry.answer, pci))
                out.append(ProbeAnswer(entry.answer, family, stream, no, line.strip()[:500], pci))
            break
    return out


def _pci(raw: str | None) -> str | None:
    """A bus id as nvidia-smi prints it, normalised to dddd:bb:dd.f (``00000000:3B:00.0`` -> ``0000:3b:00.0``).

    >>> _pci("00000000:3B:00.0"), _pci("0000:0B:00.0"), _pci("000:BA:80.0"), _pci(None)
    ('0000:3b:00.0', '0000:0b:00.0', '0000:ba:80.0', None)
    """
    if not raw:
        return None
    m = re.fullmatch(
        r"([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.([0-7]))?", raw.strip().rstrip(".:")
    )
    if m is None:
        return raw.strip()
    domain, bus, dev, fn = m.groups()
    return f"{int(domain, 16):04x}:{bus.lower()}:{dev.lower()}.{fn or '0'}"
