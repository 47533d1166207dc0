"""File-system and I/O rules (storage section of the report)."""

RULES: tuple[str, ...] = (
    "fsx_utilization",
    "fsx_free_capacity",
    "ebs_queue",
    "iowait_high",
    "device_saturated",
    "rootvol_full",
    "data_full",
    "lustre_ost_imbalance",
    "lustre_full",
    "shm_small",
    "nvme_not_mounted",
    "inode_exhausted",
    "verdict",
)
