"""Host rules: kernel log events, CPU frequency governor, vCPU count, Slurm node state (section B of the report)."""

RULES: tuple[str, ...] = (
    "kernel_panic",
    "oom",
    "hung_task",
    "pcie_aer",
    "kernel_fault",
    "kernel_unclassified",
    "cpu_governor",
    "vcpu_low",
    "deep_health_failed",
    "shm_stale_nccl",
    "slurm_unavailable",
    "k8s_condition",
)
