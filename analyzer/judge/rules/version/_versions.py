"""Shared SQL for version rules: every version a node reports, from every source that carries one."""

from __future__ import annotations

import re

#: Components compared across nodes (software_version names; vbios from the GPU tables).
COMPONENTS = (
    "nvidia_driver",
    "cuda_driver_max",
    "cuda",
    "cuda_runtime",
    "nccl",
    "ofi_nccl",
    "efa_installer",
    "efa_module",
    "efa_provider",
    "libfabric",
    "rdma_core",
    "gdrcopy",
    "fabricmanager",
    "kernel",
    "vbios",
    "efa_fw",
)

#: Versions read from the GPU and EFA tables: (component, table, column, source, extra condition,
#: evidence line).  The line is the one that carries the value: the ``Driver Version`` / ``CUDA
#: Version`` header and the ``VBIOS Version`` line of an nvidia-smi -q dump (the GPU block header when
#: the parser recorded no such line), the banner of the nvidia-smi table (it prints
#: both), the CSV row.  efa_port's ``fw_ver`` has no line of its own: the port's first line is cited;
#: so has the libfabric efa provider's ``version:`` of an ``fi_info`` entry (fi_provider keeps the
#: entry's ``provider: efa`` line), and only the core ``efa`` provider is read (not ``ofi_rxd;efa``).
_TABLE_SOURCES = (
    ("nvidia_driver", "gpu", "driver_version", "nvidia-smi-q", "", "coalesce(driver_version_line, line)"),
    ("cuda_driver_max", "gpu", "cuda_version", "nvidia-smi-q", "", "coalesce(cuda_version_line, line)"),
    ("vbios", "gpu", "vbios", "nvidia-smi-q", "", "coalesce(vbios_version_line, line)"),
    ("nvidia_driver", "smi_summary", "driver_version", "nvidia-smi", "", "line"),
    ("cuda_driver_max", "smi_summary", "cuda_version", "nvidia-smi", "", "line"),
    ("nvidia_driver", "gpu_query", "driver_version", "nvidia-smi-csv", "", "line"),
    ("vbios", "gpu_query", "vbios_version", "nvidia-smi-csv", "", "line"),
    ("efa_fw", "efa_port", "fw_ver", "efa-ports", " AND fw_ver NOT IN ('', '0.0.0.0')", "line"),
    ("efa_provider", "fi_provider", "version", "fi-info", " AND provider = 'efa'", "line"),
)

#: One row per (node, component, source, version) with an evidence file and line.  ``version`` is
#: NULL when only presence (or absence: detail 'not found') is known.
VERSIONS_SQL = "\n    UNION ALL\n".join(
    [
        """
    SELECT bundle_id, node, component, nullif(trim(version), '') AS version, source,
           source_file, line FROM software_version""",
        *(
            f"    SELECT bundle_id, node, '{component}', {column}, '{source}', source_file, {line}\n"
            f"    FROM {table} WHERE {column} IS NOT NULL{extra}"
            for component, table, column, source, extra, line in _TABLE_SOURCES
        ),
        "    SELECT bundle_id, node, 'kernel', kernel, 'meta.env', NULL, NULL FROM node WHERE kernel IS NOT NULL\n",
    ]
)


def version_key(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: '12.2.140' -> (12, 2, 140), 'V12.4' -> (12, 4).

    >>> version_key("12.2.140"), version_key("13.0"), version_key("n/a")
    ((12, 2, 140), (13, 0), ())
    """
    return parse_version(version) or ()


_RELEASE = re.compile(r"^\s*(?:\d+:)?[vV]?(\d+(?:\.\d+)*)")


def parse_version(text: object) -> tuple[int, ...] | None:
    """The numeric release at the start of a version string, or None when it has none.

    A deb epoch (``1:``), a leading ``v`` and any suffix (``-aws``, ``g``, ``amzn1.2``, ``+cuda12.2``)
    are dropped.

    >>> parse_version("2.18.3"), parse_version("1.7.3-aws"), parse_version("v1.7.0")
    ((2, 18, 3), (1, 7, 3), (1, 7, 0))
    >>> parse_version("2.17.3g"), parse_version("525.85.12"), parse_version("1.8.1amzn1.2")
    ((2, 17, 3), (525, 85, 12), (1, 8, 1))
    >>> parse_version("unknown"), parse_version(None), parse_version("")
    (None, None, None)
    """
    if text is None:
        return None
    m = _RELEASE.match(str(text))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def compare(version: tuple[int, ...], bound: tuple[int, ...]) -> int | None:
    """-1, 0 or 1 as ``version`` is below, at or above ``bound`` at the bound's precision.

    None when the version is less precise than the bound (``2`` against ``2.18``): not comparable.

    >>> compare((2, 18, 3), (2, 18)), compare((2, 17, 3), (2, 18)), compare((1, 7, 2, 1), (1, 7, 2))
    (0, -1, 0)
    >>> compare((2,), (2, 18)) is None
    True
    """
    if len(version) < len(bound):
        return None
    head = version[: len(bound)]
    return (head > bound) - (head < bound)


def in_range(version: tuple[int, ...], low: str | None, high: str | None) -> bool | None:
    """Whether ``version`` lies in [low, high] (each bound at its own precision; None/'' = open).

    >>> in_range((1, 27, 0), "1.26", "1.28"), in_range((1, 29, 1), "1.26", "1.28"), in_range((1, 7), "1.6.0", "")
    (True, False, None)
    """
    for bound, bad in ((low, -1), (high, 1)):
        key = parse_version(bound) if bound else None
        if key is None:
            continue
        got = compare(version, key)
        if got is None:
            return None
        if got == bad:
            return False
    return True
