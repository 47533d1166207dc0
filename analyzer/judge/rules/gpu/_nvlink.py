"""Shared reading of the ``nvlink`` table: links grouped per GPU (or NVSwitch) with the node's SKU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from analyzer.judge.engine import Context

DOWN = ("inactive", "down")


@dataclass
class LinkSet:
    bundle_id: str
    node: str
    gpu: int | None
    nvswitch: int | None
    name: str | None
    instance_type: str | None
    source_file: str
    links: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.gpu is None and self.nvswitch is not None:
            return f"{self.node} NVSwitch {self.nvswitch}"
        return f"{self.node} GPU {self.gpu}"

    def sku(self, ctx: Context) -> dict[str, Any]:
        """The instance type's expectations, if they are for this GPU model (a V100 is not judged as H100)."""
        sku = ctx.settings.instance(self.instance_type) or {}
        model = sku.get("gpu_model")
        if model and self.name and str(model).lower() not in self.name.lower():
            return {}
        return sku

    def lines(self, links: list[dict[str, Any]], most: int = 3) -> list[int]:
        out: list[int] = []
        for link in links:
            if link["line"] not in out:
                out.append(link["line"])
        return out[:most]


def link_sets(ctx: Context) -> list[LinkSet]:
    """Links per GPU / NVSwitch, read once per analysis and shared by the NVLink rules (only the
    columns they judge: a fleet has ~150 links a node)."""
    return ctx.memo("gpu.nvlink.link_sets", lambda: _link_sets(ctx))


def _link_sets(ctx: Context) -> list[LinkSet]:
    rows = ctx.rows(
        """
        SELECT l.bundle_id, l.node, l.gpu, l.nvswitch_id, l.gpu_name, l.source_file, l.link, l.state,
               l.speed_gbps, l.line, n.instance_type
        FROM nvlink l LEFT JOIN node n ON n.bundle_id = l.bundle_id
        ORDER BY l.bundle_id, l.node, l.gpu, l.nvswitch_id, l.link
        """
    )
    sets: dict[tuple[Any, ...], LinkSet] = {}
    for r in rows:
        key = (r["bundle_id"], r["node"], r["gpu"], r["nvswitch_id"])
        s = sets.get(key)
        if s is None:
            s = sets[key] = LinkSet(
                r["bundle_id"],
                r["node"],
                r["gpu"],
                r["nvswitch_id"],
                r["gpu_name"],
                r["instance_type"],
                r["source_file"],
            )
        s.links.append(r)
    return list(sets.values())
