"""Placement rules: availability zones, placement groups, network spread, instance mix."""

RULES: tuple[str, ...] = (
    "multi_az",
    "multi_pg",
    "no_pg",
    "spread",
    "mixed_types",
)
