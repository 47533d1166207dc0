"""Assemble the sample bundles from the real-output fixtures in tests/fixtures.

Each node bundle is built from verbatim captures; where a scenario needs a fault, the edit is spelled
out below (EDITS) and recorded in the scenario's README.md.  Run from the repository root:

    python3 sample_bundles/build.py
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"
OUT = ROOT / "sample_bundles"
STAMP = "2026-12-01T08:00:00Z"
HEADER = "path\tkind\texit_code\tduration_s\tbytes\tsha256\tcommand\tnote\n"

COMMANDS = {
    "nvidia-smi-q": "nvidia-smi -q",
    "dmesg": "TZ=UTC dmesg -T",
}


def _ecc_fault(text: str) -> str:
    """GPU 3 (bus 5D) of the 8-GPU dump: two volatile and aggregate DRAM uncorrectable errors."""
    head, sep, tail = text.partition("GPU 00000000:5D:00.0")
    for scope in ("Volatile", "Aggregate"):
        marker = f"        {scope}\n"
        before, m, after = tail.partition(marker)
        after = after.replace("DRAM Uncorrectable            : 0", "DRAM Uncorrectable            : 2", 1)
        tail = before + m + after
    return head + sep + tail


SCENARIOS: dict[str, dict[str, dict[str, object]]] = {
    "xid-ecc-3node": {
        "p5-node-01": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "ip-10-1-0-11",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", _ecc_fault),
                # The runbook's Xid 48/63/94 burst, moved from bus 52 to this dump's GPU 3 (bus 5D).
                "dmesg": (
                    "dmesg/uce-runbook-xid48-63-94-dbe.txt",
                    lambda t: t.replace("PCI:0000:52:00", "PCI:0000:5d:00"),
                ),
            },
        },
        "p5-node-02": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "ip-10-1-0-12",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", None),
                "dmesg": ("dmesg/ogkm-1150-xid45-after-149-145-syslog.txt", None),
            },
        },
        "p5-node-03": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "ip-10-1-0-13",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/jp-simulator-8xh100-565-complete.txt", None),
                "dmesg": ("dmesg/returnn-1486-reltime-aer-no-xid.txt", None),
            },
        },
        "h100-node-04": {
            "meta": {
                "instance_type": "p5.48xlarge",
                "availability_zone": "us-east-1a",
                "hostname": "della-k17g3",
            },
            "probes": {
                "nvidia-smi-q": ("nvidia-smi-q/della-h100-545-single-no-blank-after-banner.txt", None),
                "dmesg": ("dmesg/gpud-readme-dmesg-ctime-xid13-109.txt", None),
            },
        },
    },
}


def build_node(dest: Path, node: str, spec: dict[str, object]) -> None:
    (dest / "cmd").mkdir(parents=True)
    meta = {"bundle_format": "1", "node": node, "collected_at": STAMP, "collector_version": "sample"}
    meta.update(spec["meta"])  # type: ignore[arg-type]
    (dest / "meta.env").write_text("".join(f"{k}={v}\n" for k, v in meta.items()))
    rows = []
    for kind, (fixture, edit) in spec["probes"].items():  # type: ignore[attr-defined]
        text = (FIX / fixture).read_text()
        if edit is not None:
            text = edit(text)
        data = text.encode()
        path = f"cmd/{kind}.txt"
        (dest / path).write_bytes(data)
        (dest / f"cmd/{kind}.err").write_bytes(b"")
        digest = hashlib.sha256(data).hexdigest()
        rows.append(f"{path}\t{kind}\t0\t0.10\t{len(data)}\t{digest}\t{COMMANDS[kind]}\t-\n")
    (dest / "manifest.tsv").write_text(HEADER + "".join(rows))


def main() -> None:
    for scenario, nodes in SCENARIOS.items():
        target = OUT / scenario / "bundle"
        shutil.rmtree(target, ignore_errors=True)
        for node, spec in nodes.items():
            build_node(target / node, node, spec)
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
