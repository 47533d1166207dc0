"""GPU rules (section C of the report)."""

RULES: tuple[str, ...] = (
    "xid_fallen_off_bus",
    "xid",
    "sxid",
    "ecc_uncorrectable",
    "ecc_corrected_rate",
    "remap_failed",
    "remap_pending",
    "retired_pages",
    "count_low",
    "nvlink_inactive",
    "nvlink_count",
    "nvlink_slow",
    "fabric_state",
    "dcgm_failed",
    "temperature_high",
    "clocks_throttled",
    "pcie_width_degraded",
    "pcie_gen_below_peers",
    "persistence_off",
)
