"""NCCL rules: nccl-tests results and NCCL log lines (transport, errors, correctness, bandwidth)."""

RULES: tuple[str, ...] = (
    "tcp_fallback",
    "log_errors",
    "collective_hung",
    "test_wrong",
    "busbw_below_expected",
    "pair_outlier",
    "pair_slow",
    "busbw_straggler",
    "version_mismatch",
)
