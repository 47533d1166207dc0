"""GPU rules (section C of the report)."""

RULES: tuple[str, ...] = (
    "xid",
    "ecc_uncorrectable",
)
