"""Straggler rules: a node whose GPUs or host lag the other nodes of its instance type."""

RULES: tuple[str, ...] = (
    "gpu_sm_clock",
    "gpu_power",
    "gpu_temp",
    "gpu_ecc_corrected",
    "gpu_xid_count",
    "host_iowait",
)
