"""NVLink state per link: ``nvidia-smi nvlink -s`` and the ``dcgmi nvlink --link-status`` matrix.

Commands whose output it reads (collector.sh runs the first; the format is recognised by content)::

    nvidia-smi nvlink -s          # also --status, -i N
    dcgmi nvlink --link-status

Sample (lines of tests/fixtures/nvidia-smi-nvlink/azhpc-73-v100-inactive-links.txt)::

    GPU 3: Tesla V100-SXM2-32GB (UUID: ...)
             Link 0: 25.781 GB/s
             Link 3: <inactive>

Other ``nvidia-smi nvlink`` outputs are read into ``extra`` (JSON, keys and values as printed) of the
link they name, merged with that link's status row when the file has one: ``-e`` (``Link 0: Replay
Errors: 0``), ``-c`` (``Link 0, P2P is supported: true``), ``-g``/``-gt`` (``Link 0: Rx0: 0 KBytes, Tx0:
0 KBytes``), ``-R``; GPU-level lines (``-info``: ``NVLE: disabled``, ``Firmware Version:`` and the
lines under it) go to one row per GPU with ``link`` and ``state`` null.  Bare command lines
(``nvidia-smi nvlink -s``) and prompts are skipped; travel noise (launcher prefixes, fences, CRLF) is
taken off by ``parsers._text.clean_lines``.

dcgmi prints one line of U/D/X/_ per GPU (``gpuId N:``) and per NVSwitch (``physicalId N:``), one
letter per link up to the maximum the software supports; links the device does not have show ``_``.
NVSwitch rows have ``gpu`` null and their physical id in ``nvswitch_id``.  nvidia-smi's
"Unable to retrieve NVLink information as all links are inActive" under a GPU header becomes one row
with ``link`` null and state ``inactive``.  GPU headers with no link under them (GPUs without
NVLink) give an empty table.  Literal ``...`` lines are skipped.

Schema
------
``nvlink`` (one row per link):

- ``line`` int — line of the link (dcgmi: the line of letters)
- ``gpu`` int — GPU index (nvidia-smi) or DCGM gpuId; null for NVSwitch rows
- ``gpu_name`` str — as printed by nvidia-smi; null for dcgmi
- ``uuid`` str — GPU UUID; null when absent or redacted ("...")
- ``nvswitch_id`` int — dcgmi NVSwitch physicalId; null for GPU rows
- ``link`` int — link number (null: the whole GPU, see above)
- ``speed_gbps`` float — per-link rate in GB/s as printed (25, 25.781, 26.562, 53.125); null when not up
- ``state`` str — active, inactive (nvidia-smi), down, disabled, not_supported (dcgmi U/D/X/_ = active/
  down/disabled/not_supported)
- ``source`` str — nvidia-smi or dcgmi
- ``extra`` str — JSON object of the other values printed for the link (or, with ``link`` null, for
  the GPU), under their printed keys: ``{"Replay Errors": "0", "P2P is supported": "true"}``; ``{}``
- ``host`` str — launcher tag of the line (pdsh host, srun rank), else null

Examples
--------
>>> r = parse(SAMPLE)
>>> [(x["gpu"], x["link"], x["speed_gbps"], x["state"]) for x in r.rows("nvlink")]
[(3, 0, 25.781, 'active'), (3, 3, None, 'inactive')]
>>> r.rows("nvlink")[0]["gpu_name"], r.rows("nvlink")[0]["uuid"]
('Tesla V100-SXM2-32GB', None)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from parsers._base import CollectorError, Column, ParseError, ParseResult, ParserInfo, require_text, sample_of
from parsers._text import clean_head, clean_lines, key_value, snake, to_float

SAMPLE = sample_of(__doc__)

INFO = ParserInfo(
    kind="nvidia-smi-nvlink",
    title="NVLink link status (nvidia-smi nvlink -s / dcgmi nvlink --link-status)",
    commands=("nvidia-smi nvlink -s", "dcgmi nvlink --link-status"),
    tables=("nvlink",),
    versions_seen=("V100 NVLink2", "A100 NVLink3", "H100 NVLink4", "DCGM 3.x link-status"),
)

SCHEMA = {
    "nvlink": (
        Column("line", "int", "line of the link"),
        Column("gpu", "int", "GPU index / DCGM gpuId"),
        Column("gpu_name", "str", "GPU product name"),
        Column("uuid", "str", "GPU UUID"),
        Column("nvswitch_id", "int", "dcgmi NVSwitch physicalId"),
        Column("link", "int", "link number"),
        Column("speed_gbps", "float", "per-link rate, GB/s"),
        Column("state", "str", "active/inactive/down/disabled/not_supported"),
        Column("source", "str", "nvidia-smi or dcgmi"),
        Column("extra", "str", "JSON object of the other values printed for the link or GPU"),
        Column("host", "str", "launcher tag of the line"),
    )
}

_GPU = re.compile(r"^GPU (?P<gpu>\d+): (?P<name>.*?)\s*(?:\(UUID: (?P<uuid>[^)]*)\))?\s*$")
_LINK = re.compile(r"^Link (?P<link>\d+):\s*(?P<value>.*?)\s*$")
_VALUE = re.compile(r"^(?:(?P<rate>\d+(?:\.\d+)?) GB/s|<(?P<state>[^>]+)>)$")
_DCGM_ENTITY = re.compile(r"^(?P<kind>gpuId|physicalId) (?P<id>\d+):$")
_DCGM_STATES = {"U": "active", "D": "down", "X": "disabled", "_": "not_supported"}
_DCGM_LINE = re.compile(r"^[UDX_](?: [UDX_])*$")
_NO_INFO = re.compile(r"Unable to retrieve NVLink information", re.IGNORECASE)
_TOOL_ERROR = re.compile(r"^(?:Error: .*|.*Unable to connect to host engine.*|NVML: .*)$", re.MULTILINE)


_LINK_ANY = re.compile(r"^Link (?P<link>\d+)\s*[:,]\s*(?P<rest>.*?)\s*$")
_COMMAND = re.compile(r"^(?:sudo\s+)?(?:nvidia-smi|dcgmi)\s")


def detect(text: str) -> int:
    """Confidence that text is NVLink status output (prefixes and prompts taken off first)."""
    text = "\n".join(line.strip() for line in clean_head(text).lines)
    if "NvLink Link Status" in text or re.search(r"^gpuId \d+:$", text, re.MULTILINE):
        return 85
    if re.search(r"^Link \d+: (?:\d+(?:\.\d+)? GB/s|<\w+>)$", text, re.MULTILINE):
        return 85
    if re.search(r"^GPU \d+: .*\n+Link \d+[:,] .*(?:Errors|supported|Rx\d|Tx\d)", text, re.MULTILINE):
        return 80
    return 0


def parse(text: str, *, command: str | None = None, filename: str | None = None) -> ParseResult:
    require_text(text)
    cleaned = clean_lines(text)
    reader = _Reader()
    for i, raw in enumerate(cleaned.lines):
        reader.line(i + 1, raw, cleaned.hosts[i] if cleaned.hosts else None)
    result = reader.result
    for row in result.rows("nvlink"):
        row["extra"] = json.dumps(reader.extras.get(id(row), {}))
    if not result.rows("nvlink"):
        if m := _TOOL_ERROR.search(text):
            raise CollectorError(m.group(0).strip()[:300])
        if (reader.gpu or "No GPUs found" in text) and not result.issues:
            result.tables["nvlink"] = []  # GPU headers without links, or dcgmi saw no GPU/NVSwitch
            return result
        seen = next((x.strip() for x in cleaned.lines if x.strip()), "")[:80]
        raise ParseError(f"expected NVLink status lines (GPU N: ... / Link N: ... / gpuId N:), saw {seen!r}")
    return result


@dataclass
class _Reader:
    """The state of one capture: the GPU or dcgmi entity being read, the nvidia-smi rows by (GPU, link)
    file-wide, the keys without a column, the heading of the lines under a key without a value."""

    result: ParseResult = field(default_factory=ParseResult)
    gpu: dict[str, Any] | None = None  # the current nvidia-smi GPU header / dcgmi entity
    links: dict[tuple[int, int | None], dict[str, Any]] = field(default_factory=dict)
    extras: dict[int, dict[str, str]] = field(default_factory=dict)  # id(row) -> its extra keys
    prefix: tuple[int, str] | None = None  # ("Firmware Version:", indent) for the lines under it

    def line(self, no: int, raw: str, host: str | None) -> None:
        line = raw.strip()
        if not line or set(line) <= {"."} or line.startswith(("+-", "|", "Key:", "No NvSwitches", "No GPUs")):
            return
        gpu = self.gpu
        smi = gpu is not None and gpu["source"] == "nvidia-smi"
        if _COMMAND.match(line) or line in ("GPUs:", "NvSwitches:"):
            self.gpu = None
        elif m := _GPU.match(line):
            uuid = m["uuid"] if m["uuid"] and m["uuid"].strip(". ") else None
            self.gpu = {"gpu": int(m["gpu"]), "gpu_name": m["name"], "uuid": uuid, "source": "nvidia-smi"}
            self.prefix = None
        elif m := _DCGM_ENTITY.match(line):
            key = "gpu" if m["kind"] == "gpuId" else "nvswitch_id"
            self.gpu = {key: int(m["id"]), "source": "dcgmi"}
        elif gpu and smi and (m := _LINK_ANY.match(line)):
            self._link_line(no, raw, line, m, gpu, host)
        elif _DCGM_LINE.match(line) and gpu and gpu["source"] == "dcgmi":
            for link, letter in enumerate(line.split()):
                _add(self.result, no, gpu, link, None, _DCGM_STATES[letter], host=host)
        elif _NO_INFO.search(line) and gpu and smi:
            state = "inactive" if "inactive" in line.lower() else "not_supported"
            _add(self.result, no, gpu, None, None, state, host=host)
        elif gpu and smi and (kv := key_value(line)):
            self._gpu_key(no, raw, kv, gpu, host)
        else:
            self.result.issue(no, raw, "not an NVLink status line")

    def _link_line(
        self, no: int, raw: str, line: str, m: re.Match[str], gpu: dict[str, Any], host: str | None
    ) -> None:
        """A ``Link N:`` line of nvidia-smi: its status, else its counters or capabilities (kept in extra)."""
        status = _link(line)
        if status is not None:
            self.links[gpu["gpu"], status[0]] = _add(self.result, no, gpu, *status, host=host)
            return
        pairs = _pairs(m["rest"])
        if not pairs:
            self.result.issue(no, raw, "not an NVLink status, error, capability or counter line")
            return
        row = self.links.get((gpu["gpu"], int(m["link"])))  # the link's status row, when -s came first
        if row is None:
            row = self.links[gpu["gpu"], int(m["link"])] = _add(
                self.result, no, gpu, int(m["link"]), None, None, host=host
            )
        self.extras.setdefault(id(row), {}).update(pairs)

    def _gpu_key(self, no: int, raw: str, kv: tuple[str, str], gpu: dict[str, Any], host: str | None) -> None:
        """A GPU-level key (``Firmware Version:`` and the lines under it): kept in the GPU row's extra."""
        indent = len(raw) - len(raw.lstrip())
        if self.prefix and indent <= self.prefix[0]:
            self.prefix = None
        if not kv[1]:
            self.prefix = (indent, kv[0])
            return
        row = self.links.get((gpu["gpu"], None))
        if row is None:
            row = self.links[gpu["gpu"], None] = _add(self.result, no, gpu, None, None, None, host=host)
        self.extras.setdefault(id(row), {})[f"{self.prefix[1]}: {kv[0]}" if self.prefix else kv[0]] = kv[1]


def _pairs(rest: str) -> dict[str, str]:
    """'Replay Errors: 0' -> {'Replay Errors': '0'}; 'Rx0: 0 KBytes, Tx0: 0 KBytes' -> two keys."""
    parts = rest.split(", ") if re.search(r":.*, \w[\w ]*:", rest) else [rest]
    pairs = [key_value(p) for p in parts]
    return {kv[0]: kv[1] for kv in pairs if kv} if all(pairs) else {}


def _link(line: str) -> tuple[int, float | None, str] | None:
    """'Link 3: 25 GB/s' -> (3, 25.0, 'active'); 'Link 5: <inactive>' -> (5, None, 'inactive')."""
    m = _LINK.match(line)
    value = _VALUE.match(m["value"]) if m else None
    if m is None or value is None:
        return None
    if value["rate"]:
        return int(m["link"]), to_float(value["rate"]), "active"
    return int(m["link"]), None, snake(value["state"])


def _add(
    result: ParseResult,
    no: int,
    gpu: dict[str, Any],
    link: int | None,
    speed: float | None,
    state: str | None,
    host: str | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {"line": no, "gpu": None, "gpu_name": None, "uuid": None, "nvswitch_id": None}
    row.update({k: v for k, v in gpu.items() if k != "source"})
    row.update({"link": link, "speed_gbps": speed, "state": state, "source": gpu["source"]})
    row.update({"extra": "{}", "host": host})
    result.add("nvlink", row)
    return row
