"""``hptriage skill``: the agent skill (SKILL.md and the collector), as a folder and as a zip.

The skill follows the Agent Skills format: a folder named as the skill, holding ``SKILL.md`` (YAML front
matter with ``name`` and ``description``, then the workflow) and ``scripts/collector.sh``.  The zip holds
that folder, so it unpacks into a project's ``.agents/skills/`` (or ``.claude/skills/``) as
``hptriage/``.  Both are made from the package data (``analyzer/assistants/skill/``): the SKILL.md
template gets this version and the symptom table from the rule catalog (titles carry the thresholds in
force); the collector is the copy shipped in the package, the same bytes as the repository's
``collector.sh`` (tests/test_assistants_skill.py checks it).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer import __version__

if TYPE_CHECKING:
    from analyzer.judge.settings import Settings

NAME = "hptriage"
#: The files of the skill, relative to its folder, and their modes.
FILES = {"SKILL.md": 0o644, "scripts/collector.sh": 0o755}
#: Agent Skills front matter: the fields it defines and their limits.
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME, MAX_DESCRIPTION, MAX_COMPATIBILITY = 64, 1024, 500
#: What a user says -> the rules that judge it (their titles and routes come from the catalog).
SYMPTOMS: dict[str, tuple[str, ...]] = {
    "Training slower on some nodes, uneven NCCL, a straggler node": (
        "nccl.pair.slow",
        "nccl.busbw.straggler",
        "nccl.busbw.below_expected",
        "nccl.transport.tcp_fallback",
        "straggler.gpu.sm_clock",
        "gpu.clocks.throttled",
    ),
    "Checkpointing stalls, slow data loading, FSx throughput": (
        "fs.fsx.utilization_sustained",
        "fs.verdict",
        "fs.iowait.high",
        "fs.lustre.ost_imbalance",
        "fs.shm.small",
    ),
    "Xid, ECC, a sick GPU node": (
        "gpu.xid",
        "gpu.xid.fallen_off_bus",
        "gpu.ecc.uncorrectable",
        "gpu.remap.pending",
        "gpu.count.low",
        "gpu.nvlink.inactive",
    ),
    "Nodes across Availability Zones or network blocks (cross-AZ)": (
        "placement.multi_az",
        "placement.multi_pg",
        "placement.spread",
    ),
    "Versions differ between nodes": ("version.drift", "version.efa_ofi.pairing"),
}


class SkillError(Exception):
    """A skill that cannot be written (OUT is a file, the template names an unknown rule)."""


@dataclass(frozen=True)
class WrittenSkill:
    folder: Path
    zip_path: Path | None


def skill_files(settings: Settings | None = None) -> dict[str, bytes]:
    """The skill's files (path in its folder -> content)."""
    return {"SKILL.md": skill_text(settings).encode("utf-8"), "scripts/collector.sh": collector_bytes()}


def skill_text(settings: Settings | None = None) -> str:
    """SKILL.md: the template with this version and the symptom table filled in."""
    from analyzer.judge.rule_catalog import rule_catalog
    from analyzer.judge.settings import load_settings

    template = _data("SKILL.md").decode("utf-8")
    catalog = {r["rule"]: r for r in rule_catalog(settings or load_settings())}
    text = template.replace("{{version}}", __version__).replace("{{symptoms}}", _symptoms(catalog))
    problems = check_front_matter(front_matter(text), NAME)
    if problems:
        raise SkillError(f"SKILL.md front matter: {'; '.join(problems)}")
    return text


def collector_bytes() -> bytes:
    """The collector shipped in the package (the same bytes as the repository's collector.sh)."""
    return _data("scripts/collector.sh")


def write_skill(out: Path, zip_too: bool = True, settings: Settings | None = None) -> WrittenSkill:
    """Write ``out/hptriage/`` (SKILL.md, scripts/collector.sh) and, with ``zip_too``, ``out/hptriage.zip``
    holding that folder.  Files of an earlier skill are replaced; anything else there is left alone."""
    files = skill_files(settings)
    folder = out / NAME
    if folder.exists() and not folder.is_dir():
        raise SkillError(f"{folder} exists and is not a directory")
    for rel, data in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(FILES[rel])
    zip_path = out / f"{NAME}.zip" if zip_too else None
    if zip_path is not None:
        with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for rel, data in files.items():
                info = zipfile.ZipInfo(f"{NAME}/{rel}", date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | FILES[rel]) << 16  # a regular file and its mode
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
    return WrittenSkill(folder, zip_path)


def front_matter(text: str) -> dict[str, Any]:
    """The YAML front matter of a SKILL.md, in the form skills use: ``key: value`` lines, and one
    level of ``key:`` followed by indented ``key: value`` lines (metadata); quotes around a value go.

    >>> front_matter('---\\nname: a-b\\nmetadata:\\n  version: "1"\\n---\\nbody')
    {'name': 'a-b', 'metadata': {'version': '1'}}
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---" or "---" not in (line.strip() for line in lines[1:]):
        raise SkillError("no front matter: SKILL.md must begin with a '---' line and close it with another")
    end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    meta: dict[str, Any] = {}
    current: dict[str, str] | None = None
    for line in lines[1:end]:
        if not line.strip():
            continue
        key, sep, value = line.strip().partition(":")
        if not sep:
            raise SkillError(f"front matter line is not 'key: value': {line!r}")
        value = _unquote(value.strip())
        if line.startswith((" ", "\t")):
            if current is None:
                raise SkillError(f"indented front matter line outside a map: {line!r}")
            current[key] = value
        elif value:
            meta[key], current = value, None
        else:
            meta[key] = current = {}
    return meta


def check_front_matter(meta: dict[str, Any], folder_name: str) -> list[str]:
    """What breaks the Agent Skills rules for the front matter (empty: nothing)."""
    problems = [f"unknown field {key!r}" for key in meta if key not in FIELDS]
    name = meta.get("name", "")
    if not isinstance(name, str) or not NAME_PATTERN.match(name) or len(name) > MAX_NAME:
        problems.append(f"name {name!r} is not 1-{MAX_NAME} lowercase letters, digits and single hyphens")
    elif name != folder_name:
        problems.append(f"name {name!r} is not the folder's name {folder_name!r}")
    description = meta.get("description", "")
    if not isinstance(description, str) or not description.strip():
        problems.append("description is missing")
    elif len(description) > MAX_DESCRIPTION:
        problems.append(f"description is {len(description)} characters (at most {MAX_DESCRIPTION})")
    compatibility = meta.get("compatibility", "")
    if isinstance(compatibility, str) and len(compatibility) > MAX_COMPATIBILITY:
        problems.append(f"compatibility is {len(compatibility)} characters (at most {MAX_COMPATIBILITY})")
    if "metadata" in meta and not isinstance(meta["metadata"], dict):
        problems.append("metadata is not a map")
    return problems


def _symptoms(catalog: dict[str, dict[str, Any]]) -> str:
    lines = []
    for symptom, rules in SYMPTOMS.items():
        unknown = [r for r in rules if r not in catalog]
        if unknown:
            raise SkillError(
                f"the skill's symptom table names rules not in the catalog: {', '.join(unknown)}"
            )
        lines.append(f"- **{symptom}**")
        lines += [f"  - `{r}`: {catalog[r]['title']} → `{catalog[r]['route']['owner']}`" for r in rules]
    return "\n".join(lines)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _data(rel: str) -> bytes:
    return resources.files("analyzer.assistants").joinpath("skill", *rel.split("/")).read_bytes()
