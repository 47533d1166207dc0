"""Version rules: drift between nodes and CUDA/driver compatibility (section E of the report)."""

RULES: tuple[str, ...] = (
    "drift",
    "cuda_driver_compat",
    "nccl_driver_min",
    "nccl_cuda_min",
    "efa_ofi_pairing",
)
