"""Version rules: drift between nodes and CUDA/driver compatibility (section E of the report)."""

RULES: tuple[str, ...] = (
    "drift",
    "cuda_driver_compat",
)
