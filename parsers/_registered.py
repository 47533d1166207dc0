"""Every module of the registry, typed as the :class:`parsers.ParserModule` it must be.

Nothing imports this module: it is there for mypy, which checks each parser module against the contract
(INFO, SCHEMA, SAMPLE, ``parse(text, *, command=None, filename=None)``, ``detect``) as it checks this
tuple.  tests/test_types.py holds the tuple to ``parsers.KINDS``.
"""

from __future__ import annotations

from parsers import (
    ParserModule,
    cloudwatch,
    cpu_governor,
    dcgm_mndiag,
    dcgmi_diag,
    df,
    dmesg,
    efa_ports,
    fabricmanager,
    fi_info,
    flight_recorder,
    iostat,
    job_log,
    lfs_df,
    lspci,
    mounts,
    nccl_ras,
    nccl_tests,
    nvidia_smi,
    nvidia_smi_csv,
    nvidia_smi_nvlink,
    nvidia_smi_q,
    nvidia_smi_topo,
    placement,
    shm,
    sinfo,
    uptime,
    versions,
)

#: in the order of KINDS
MODULES: tuple[ParserModule, ...] = (
    nvidia_smi_q,
    nvidia_smi_csv,
    nvidia_smi,
    nvidia_smi_topo,
    nvidia_smi_nvlink,
    dmesg,
    fi_info,
    efa_ports,
    versions,
    fabricmanager,
    dcgmi_diag,
    lspci,
    cpu_governor,
    uptime,
    shm,
    mounts,
    df,
    lfs_df,
    iostat,
    nccl_tests,
    job_log,
    flight_recorder,
    nccl_ras,
    cloudwatch,
    placement,
    dcgm_mndiag,
    sinfo,
)
