"""Thresholds and per-instance-type expectations: TOML files shipped with the package, overridable.

The files are ``analyzer/judge/thresholds/*.toml`` (one per rule area, plus ``sku.toml`` for the instance
types), read as one document.  Every number in them is a table ``{ value = ..., unit = "...", source = "..." }``
(``alt`` records what another source says where they disagree).  A site overrides values with
``hptriage analyze --config site.toml`` holding plain ``key = value`` pairs under the same section
names, e.g.::

    [gpu.temperature]
    warning_c = 83
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULTS = Path(__file__).resolve().parent / "thresholds"


class SettingsError(ValueError):
    """The thresholds file or a site override is malformed."""


@dataclass
class Settings:
    """Resolved thresholds: section -> key -> {value, unit, source, alt}."""

    sections: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    sku: dict[str, dict[str, Any]] = field(default_factory=dict)
    overridden: list[str] = field(default_factory=list)

    def value(self, section: str, key: str) -> Any:
        try:
            return self.sections[section][key]["value"]
        except KeyError as exc:
            raise SettingsError(
                f"threshold {section}.{key} is not defined in analyzer/judge/thresholds/*.toml"
            ) from exc

    def section(self, section: str) -> dict[str, Any]:
        return {k: v["value"] for k, v in self.sections.get(section, {}).items()}

    def described(self, section: str) -> dict[str, dict[str, Any]]:
        return self.sections.get(section, {})

    def instance(self, instance_type: str | None) -> dict[str, Any] | None:
        """Expectations for an instance type, or None when the table has none."""
        if not instance_type:
            return None
        return self.sku.get(instance_type)


def load_settings(override: Path | None = None) -> Settings:
    raw: dict[str, Any] = {}
    for path in sorted(DEFAULTS.glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        for key, value in doc.items():
            if key in raw and isinstance(raw[key], dict) and isinstance(value, dict):
                _merge(raw[key], value, f"{path.name}: [{key}]")
            else:
                raw[key] = value
    settings = Settings(sku=raw.pop("sku", {}))
    for name, body in _flatten(raw):
        settings.sections[name] = {k: _entry(name, k, v) for k, v in body.items()}
    if override is not None:
        try:
            site = tomllib.loads(override.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(f"cannot read {override}: {exc}") from exc
        for sku_name, values in site.pop("sku", {}).items():
            settings.sku.setdefault(sku_name, {}).update(values)
            settings.overridden.append(f"sku.{sku_name}")
        for name, body in _flatten(site):
            if name not in settings.sections:
                raise SettingsError(f"{override}: unknown section [{name}]")
            for key, value in body.items():
                if key not in settings.sections[name]:
                    raise SettingsError(f"{override}: unknown threshold {name}.{key}")
                entry = dict(settings.sections[name][key])
                entry.update(value=value, source=f"site override ({override.name})")
                settings.sections[name][key] = entry
                settings.overridden.append(f"{name}.{key}")
    return settings


def _merge(into: dict[str, Any], new: dict[str, Any], where: str) -> None:
    for key, value in new.items():
        if key in into and isinstance(into[key], dict) and isinstance(value, dict) and "value" not in value:
            _merge(into[key], value, f"{where}.{key}")
        elif key in into:
            raise SettingsError(f"{where}: {key} is defined twice")
        else:
            into[key] = value


def _flatten(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Sections are dotted rule ids: [gpu.temperature] -> ('gpu.temperature', {...})."""
    out: list[tuple[str, dict[str, Any]]] = []
    leaves: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and "value" not in value:
            out.extend(_flatten(value, f"{prefix}{key}."))
        else:
            leaves[key] = value
    if leaves and prefix:
        out.append((prefix.rstrip("."), leaves))
    return out


def _entry(section: str, key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        if "source" not in value:
            raise SettingsError(f"threshold {section}.{key} has no source")
        return dict(value)
    raise SettingsError(f"threshold {section}.{key} must be a table with value and source")
