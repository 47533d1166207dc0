"""Network rules: EFA devices and ports, libfabric providers, the aws-ofi-nccl plugin, adapters' PCIe links."""

RULES: tuple[str, ...] = (
    "efa_port_down",
    "efa_count_low",
    "fi_info_no_efa",
    "ofi_plugin_missing",
    "efa_module_missing",
    "efa_port_errors",
    "pcie_link_degraded",
)
