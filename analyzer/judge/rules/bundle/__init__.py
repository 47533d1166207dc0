"""Bundle rules: what was collected and parsed, so that no silence reads as health."""

RULES: tuple[str, ...] = ("coverage", "checksum")
