"""Small text helpers shared by the parsers: prefixes, numbers, units, key/value blocks."""

from __future__ import annotations

import re

#: Prefixes that pastes and launchers add in front of every line of a capture:
#: markdown quotes ("> "), mpirun tags ("[1,0]<stdout>:"), shell prompts are not stripped.
_LINE_PREFIX = re.compile(r"^(?:> ?|\[\d+,\d+\]<std(?:out|err)>:)")

_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "M": 1024**2,
    "G": 1024**3,
    "T": 1024**4,
    "P": 1024**5,
    "E": 1024**6,
}

_SIZE = re.compile(r"^\s*([0-9]+(?:[.,][0-9]+)?)\s*([KMGTPE]?)(?:i?B)?\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"^[-+]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][-+]?\d+)?$")

#: Values NVIDIA tools print where a number is not available.
NOT_AVAILABLE = frozenset(
    {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "unknown", "-"}
)


def strip_prefix(line: str) -> str:
    """Remove a paste or launcher prefix from one line.

    >>> strip_prefix("[1,0]<stdout>:#  Rank  0 Group  0")
    '#  Rank  0 Group  0'
    >>> strip_prefix("> [Fri Aug 30 11:43:09 2024] NVRM: Xid")
    '[Fri Aug 30 11:43:09 2024] NVRM: Xid'
    """
    if not line or line[0] not in ">[":
        return line  # the common case, without a regex
    return _LINE_PREFIX.sub("", line, count=1)


def to_float(value: str | None) -> float | None:
    """Parse a number written with a dot or a locale comma; None when not a number.

    >>> to_float("223974,00"), to_float(" 5e-07 "), to_float("N/A"), to_float("1,234.5")
    (223974.0, 5e-07, None, 1234.5)
    """
    if value is None:
        return None
    v = value.strip()
    if v.lower() in NOT_AVAILABLE:
        return None
    if "," in v and "." in v:  # thousands separator: 1,234.5
        v = v.replace(",", "")
    elif "," in v:
        v = v.replace(",", ".")
    if not _NUMBER.match(v):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def to_int(value: str | None) -> int | None:
    """Parse an integer (decimal or 0x hex); None when not a number.

    >>> to_int("42"), to_int("0x1f"), to_int("[N/A]"), to_int("3.0")
    (42, 31, None, 3)
    """
    if value is None:
        return None
    v = value.strip()
    if v.lower().startswith("0x"):
        try:
            return int(v, 16)
        except ValueError:
            return None
    f = to_float(v)
    if f is None or f != int(f):
        return None
    return int(f)


def leading_number(value: str | None) -> float | None:
    """The number at the start of a value that carries a unit.

    >>> leading_number("592.74 W"), leading_number("81559 MiB"), leading_number("Disabled")
    (592.74, 81559.0, None)
    """
    if value is None:
        return None
    m = re.match(r"\s*([-+]?\d+(?:[.,]\d+)?)", value)
    return to_float(m.group(1)) if m else None


def human_to_bytes(value: str | None) -> int | None:
    """Turn a human size ('1.2T', '970.8M', '4.0K', '512') into bytes, powers of 1024.

    >>> human_to_bytes("1.1T"), human_to_bytes("970.8M"), human_to_bytes("0"), human_to_bytes("-")
    (1209462790553, 1017957580, 0, None)
    """
    if value is None:
        return None
    m = _SIZE.match(value)
    if not m:
        return None
    number = to_float(m.group(1))
    if number is None:
        return None
    return int(number * _SIZE_UNITS[m.group(2).upper()])


def percent(value: str | None) -> float | None:
    """Parse '85%' or '85 %' into 85.0.

    >>> percent("85%"), percent(" 7 %"), percent("-")
    (85.0, 7.0, None)
    """
    if value is None:
        return None
    return to_float(value.strip().rstrip("%").strip())


def key_value(line: str, sep: str = ":") -> tuple[str, str] | None:
    """Split 'Key   : value' into ('Key', 'value'), keeping an empty value.

    >>> key_value("    Bus Id                            : 00000000:19:00.0")
    ('Bus Id', '00000000:19:00.0')
    >>> key_value("    MIG Mode") is None
    True
    """
    if sep not in line:
        return None
    key, _, value = line.partition(sep)
    key = key.strip()
    if not key:
        return None
    return key, value.strip()


def snake(name: str) -> str:
    """Make a column name from a label.

    >>> snake("Volatile DRAM Uncorrectable"), snake("pcie.link.gen.current"), snake("%util")
    ('volatile_dram_uncorrectable', 'pcie_link_gen_current', 'util_pct')
    """
    n = name.strip().replace("%", "_pct_" if not name.strip().startswith("%") else "pct_")
    if name.strip().startswith("%"):
        n = name.strip()[1:] + "_pct"
    n = re.sub(r"[^0-9A-Za-z]+", "_", n).strip("_").lower()
    return re.sub(r"_+", "_", n)


_PCI = re.compile(
    r"(?:(?P<domain>[0-9A-Fa-f]{4,8}):)?(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2})(?:\.(?P<fn>[0-7]))?"
)


def pci_address(value: str | None) -> str | None:
    """Normalise a PCI address to 'dddd:bb:dd.f', lower case, 4-digit domain.

    nvidia-smi prints '00000000:19:00.0', dmesg Xid lines 'PCI:0000:cb:00'.

    >>> pci_address("00000000:19:00.0"), pci_address("0000:cb:00"), pci_address("3E3F8E05:00:00.0")
    ('0000:19:00.0', '0000:cb:00.0', '3e3f8e05:00:00.0')
    """
    if not value:
        return None
    m = _PCI.search(value)
    if not m:
        return None
    domain = int(m.group("domain") or "0", 16)
    return f"{domain:04x}:{m.group('bus').lower()}:{m.group('dev').lower()}.{m.group('fn') or '0'}"
