"""Shared SQL for version rules: every version a node reports, from every source that carries one."""

from __future__ import annotations

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
    "libfabric",
    "rdma_core",
    "gdrcopy",
    "fabricmanager",
    "kernel",
    "vbios",
)

#: One row per (node, component, source, version) with an evidence file and line.  ``version`` is
#: NULL when only presence (or absence: detail 'not found') is known.  The nvidia-smi -q dump has no
#: evidence line for its header (Driver Version, CUDA Version): its rows point at the first GPU block.
VERSIONS_SQL = """
    SELECT bundle_id, node, component, nullif(trim(version), '') AS version, source,
           source_file, line FROM software_version
    UNION ALL
    SELECT bundle_id, node, 'nvidia_driver', driver_version, 'nvidia-smi-q', source_file, line
    FROM gpu WHERE driver_version IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'cuda_driver_max', cuda_version, 'nvidia-smi-q', source_file, line
    FROM gpu WHERE cuda_version IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'vbios', vbios, 'nvidia-smi-q', source_file, line FROM gpu WHERE vbios IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'nvidia_driver', driver_version, 'nvidia-smi', source_file, line
    FROM smi_summary WHERE driver_version IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'cuda_driver_max', cuda_version, 'nvidia-smi', source_file, line
    FROM smi_summary WHERE cuda_version IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'nvidia_driver', driver_version, 'nvidia-smi-csv', source_file, line
    FROM gpu_query WHERE driver_version IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'vbios', vbios_version, 'nvidia-smi-csv', source_file, line
    FROM gpu_query WHERE vbios_version IS NOT NULL
    UNION ALL
    SELECT bundle_id, node, 'kernel', kernel, 'meta.env', NULL, NULL FROM node WHERE kernel IS NOT NULL
"""


def version_key(version: str) -> tuple[int, ...]:
    """The leading numbers of a version string: '12.2.140' -> (12, 2, 140), 'V12.4' -> (12, 4).

    >>> version_key("12.2.140"), version_key("13.0"), version_key("n/a")
    ((12, 2, 140), (13, 0), ())
    """
    out: list[int] = []
    for part in version.lstrip("vV").split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(out)
