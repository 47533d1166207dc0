"""Each rule's remediation action, as data: ``analyzer/plan/actions.toml`` read and checked.

One table per rule id gives the action a finding of the rule calls for at its worst severity, below it
at warning and info, the action when the same fault is back after a reboot (``then``), whether the
finding itself says the hardware is gone, the params that tell one fault from another, why this action
and not a lighter one, and the public source.  docs/rules.md shows every rule's entry
(``python -m analyzer.docgen.rules``); tests/test_plan_actions.py holds every registered rule to one.

>>> entry = catalog()["gpu.xid.fallen_off_bus"]
>>> entry.action, entry.then, entry.at("warning")
('reboot', 'replace', 'monitor')
>>> catalog()["gpu.remap.failed"].hardware
True
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.model.plan import ACTIONS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PATH = Path(__file__).resolve().parent / "actions.toml"
#: The catalog's file as the docs and the test's message name it.
WHERE = "analyzer/plan/actions.toml"
#: actions a finding below its rule's worst severity keeps (they take no node down)
_LIGHT = ("monitor", "fix-config", "investigate")
_KEYS = {"action", "warning", "info", "then", "hardware", "same_fault", "refined", "why", "source"}


class CatalogError(ValueError):
    """actions.toml is malformed: an unknown action word or key, a table without its why or source."""


@dataclass(frozen=True)
class RuleAction:
    """What a rule's findings ask the plan for."""

    rule: str
    action: str
    why: str
    source: str
    warning: str = "investigate"
    info: str = "none"
    then: str | None = None
    hardware: bool = False
    same_fault: tuple[str, ...] = ()
    refined: str = ""
    #: False for a rule the catalog does not hold (a rule pack's, a rule added without its table)
    catalogued: bool = True

    def at(self, severity: str, worst: str = "critical") -> str:
        """The action of a finding at ``severity`` of a rule whose worst severity is ``worst``."""
        if severity == worst:
            return self.action
        return {"critical": self.action, "warning": self.warning, "info": self.info}.get(severity, "none")


def uncatalogued(rule: str) -> RuleAction:
    """The entry of a rule actions.toml does not hold: investigate, never a disruptive action."""
    return RuleAction(
        rule,
        "investigate",
        f"no action is catalogued for {rule} ({WHERE} has no table for it): investigate before acting",
        "none: not catalogued",
        warning="investigate",
        info="none",
        catalogued=False,
    )


@functools.cache
def catalog() -> dict[str, RuleAction]:
    """Every catalogued rule's entry, by rule id."""
    doc = tomllib.loads(PATH.read_text(encoding="utf-8"))
    return {rule: _entry(rule, body) for rule, body in doc.get("rules", {}).items()}


def entry_for(rule: str) -> RuleAction:
    return catalog().get(rule) or uncatalogued(rule)


def _entry(rule: str, body: dict[str, Any]) -> RuleAction:
    unknown = set(body) - _KEYS
    if unknown:
        raise CatalogError(f"{WHERE} [rules.{rule!r}]: unknown key(s) {sorted(unknown)}")
    for key in ("action", "why", "source"):
        if not body.get(key):
            raise CatalogError(f"{WHERE} [rules.{rule!r}]: {key} is missing")
    for key in ("action", "warning", "info", "then"):
        if key in body and body[key] not in ACTIONS:
            raise CatalogError(
                f"{WHERE} [rules.{rule!r}]: {key} = {body[key]!r} is not one of {', '.join(ACTIONS)}"
            )
    return RuleAction(
        rule=rule,
        action=body["action"],
        why=body["why"],
        source=body["source"],
        # below its worst severity a finding asks for the same fix when that fix takes nothing down
        warning=body.get("warning", body["action"] if body["action"] in _LIGHT else "investigate"),
        info=body.get("info", "none"),
        then=body.get("then"),
        hardware=bool(body.get("hardware", False)),
        same_fault=tuple(body.get("same_fault", ())),
        refined=body.get("refined", ""),
    )
