"""The kernel-log signature catalog on real logs: each family ranks its node and routes it; nothing is unsaid.

Each family of ``parsers/kernel_signatures.toml`` has a real fixture (tests/fixtures/dmesg/PROVENANCE.md,
"Kernel-signature families" and "the rest"); a cluster of four nodes where one node has the family's lines and
the other three the real EC2 boot log (no fault) must rank that node among the verdict's worst, with the
family's route.  An AER error is one finding, on the device that failed, by host.pcie.aer alone.  Healthy real
logs (every clean kernel log of the fixtures, the nvidia-bug-report kernel logs, the benchmark's generated boot
noise) must give no warning, and their unclassified error lines are counted; the level a log prints decides
what is an unclassified error.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from analyzer.intake.foreign import nvidia_bug_report as nbr
from analyzer.intake.safe_read import Limits
from analyzer.judge.findings import Finding, Severity
from analyzer.model.verdict import compute
from parsers import dmesg
from parsers._kernel_catalog import BY_ID, FAMILIES, NOISE, SIGNATURES
from tests.conftest import FIXTURES
from tests.rules.helpers import Result, fixture
from tests.rules.test_gpu import run

ROOT = Path(__file__).resolve().parents[2]
CLEAN = "lkml-87blbg7tlo-boot-ec2-r5d-apic-verbose-blank-line.txt"

#: family -> (the rule that judges it, a real fixture with its lines)
FAMILY_FIXTURES = {
    "block_io": ("host.kernel.fault", "ubuntu-rockchip-155-kernlog-nvme-down-buffer-io-error.txt"),
    "nvme": ("host.kernel.fault", "propolis-1156-dmesg-nvme-timeout-reset-io-error.txt"),
    "filesystem": ("host.kernel.fault", "lede-6147-dmesg-sdb-journal-abort-read-only.txt"),
    "filesystem-xfs": ("host.kernel.fault", "talos-8733-kern-alert-xfs-log-error-shutdown.txt"),
    "filesystem-ebs": ("host.kernel.fault", "coreos-1396-journal-ec2-xfs-xvdb-shutting-down.txt"),
    "filesystem-ro": ("host.kernel.fault", "backintime-2568-dmesg-ext4-aborted-journal-read-only.txt"),
    "lustre": ("host.kernel.fault", "jade-14-dmesg-T-lustre-ptlrpc-lnet-timed-out-tx-obd-ping-107.txt"),
    "nfs": ("host.kernel.fault", "linux-surface-1494-dmesg-nfs-not-responding-ok.txt"),
    "memory": ("host.kernel.fault", "osm-300-syslog-mce-edac-mc0-ce.txt"),
    "mce": ("host.kernel.panic", "osm-300-syslog-mce-edac-mc0-ce.txt"),
    "lockup": ("host.kernel.panic", "starfive-fedora-34-dmesg-soft-lockup-cc1plus.txt"),
    "lockup-hard": ("host.kernel.panic", "ampere-182-dmesg-nmi-watchdog-hard-lockup.txt"),
    "panic": ("host.kernel.panic", "vgpu-unlock-7-dmesg-null-deref-oops.txt"),
    "hung_task": ("host.hung_task", "sonic-4822-dmesg-hung-task-tainted.txt"),
    "oom": ("host.oom", "reportportal-203-dmesg-memcg-oom-killed.txt"),
    "pcie_aer": ("host.pcie.aer", "returnn-1500-reltime-aer-root-port-fatal-gpu-cant-recover.txt"),
    "pcie_aer-endpoint": ("host.pcie.aer", "bisdn-limitations-dmesg-aer-endpoint-source-recovered.txt"),
    "pcie_aer-journal": ("host.pcie.aer", "ms-02-ultra-10-journal-aer-uncorrectable-two-endpoints.txt"),
    "efa": ("host.kernel.fault", "aws-ofi-nccl-22-dmesg-efa-alloc-pd-failed.txt"),
    "gpu_stack": ("host.kernel.fault", "gpud-readme-dmesg-ctime-xid13-109.txt"),
    "nmi": ("host.kernel.panic", "safeboot-loader-19-dmesg-nmi-unknown-reason-29.txt"),
    "nic": ("host.kernel.fault", "netdev-20200414-dmesg-mlx5-netdev-watchdog-tx-timeout.txt"),
    "nic-ena": ("host.kernel.fault", "lkml-20230608-ena-netdev-watchdog-transmit-queue.txt"),
    "nic-6.8": ("host.kernel.fault", "openwrt-nic-drivers-11-dmesg-netdev-watchdog-cpu-ms.txt"),
    "cpu": ("host.kernel.fault", "throttled-186-dmesg-mce-cpu-temperature-throttled.txt"),
    "os": ("host.kernel.fault", "gpud-224-dmesg-T-vfs-file-max-limit.txt"),
}


def family_of(case: str) -> str:
    return case.split("-")[0]


def test_every_signature_example_parses_to_its_signature() -> None:
    for sig in SIGNATURES:
        if sig.example is None:
            continue
        assert any(k in sig.example for k in sig.keys), sig.id  # the prefilter lets its own line through
        rows = dmesg.parse(sig.example).rows("kernel_event")
        assert [r["signature"] for r in rows] == [sig.id], (sig.id, rows)
        assert rows[0]["event_type"] == sig.event_type


def _bodies(text: str) -> list[str]:
    """The messages of a log's lines, their stamps and quoting taken off (as the parser reads them)."""
    out = []
    for line in text.splitlines():
        line = line.removeprefix("> ").strip()
        m = dmesg._STAMP.match(line)
        body = line[m.end() :] if m else line
        inner = dmesg._INNER_UP.match(body)
        out.append(body[inner.end() :] if inner else body)
    return out


def test_every_match_holds_one_of_its_signature_keys() -> None:
    # the keys are the prefilter (the candidate pass, then the signature loop): a line a pattern matches
    # without one of its keys would never be read as that signature
    lines = [
        b for p in sorted((FIXTURES / "dmesg").glob("*.txt")) for b in _bodies(p.read_text(encoding="utf-8"))
    ]
    lines += [b for sig in SIGNATURES if sig.example for b in _bodies(sig.example)]
    for sig in SIGNATURES:
        for body in lines:
            if sig.pattern.search(body):
                assert any(k in body for k in sig.keys), (sig.id, body)


def test_every_family_has_a_rule_and_a_real_fixture() -> None:
    assert {family_of(c) for c in FAMILY_FIXTURES} == set(FAMILIES)
    assert not [name for _, name in FAMILY_FIXTURES.values() if name.startswith("derived-")]
    for case, (rule, name) in FAMILY_FIXTURES.items():
        assert FAMILIES[family_of(case)].rule == rule
        rows = dmesg.parse(fixture("dmesg", name)).rows("kernel_event")
        assert any(r["signature"] and BY_ID[r["signature"]].family == family_of(case) for r in rows), case


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    out = {}
    for case, (_, name) in FAMILY_FIXTURES.items():
        nodes = {f"clean-{i}": {"cmd/dmesg.txt": ("dmesg", fixture("dmesg", CLEAN))} for i in range(3)}
        nodes["sick"] = {"cmd/dmesg.txt": ("dmesg", fixture("dmesg", name))}
        out[case] = run(tmp_path_factory.mktemp(case), nodes, meta={"instance_type": "p5.48xlarge"})
    return out


@pytest.mark.parametrize("case", list(FAMILY_FIXTURES))
def test_each_family_ranks_its_node_with_its_route(clusters: dict[str, Result], case: str) -> None:
    rule, name = FAMILY_FIXTURES[case]
    r = clusters[case]
    found = [f for f in r.of(rule) if f.node == "sick"]
    assert found, (case, [(f.rule, f.node) for f in r.findings])
    assert not [f for f in r.findings if f.node != "sick" and f.severity != Severity.INFO]
    family = FAMILIES[family_of(case)]
    if rule == "host.kernel.fault":
        [f] = [f for f in found if f.params["family"] == family.id]
        assert (f.route.owner, f.route.target) == (family.owner, family.target)
        assert f.evidence and all(e.file.endswith("dmesg.txt") and e.line for e in f.evidence)
    nodes = [{"node": n} for n in ("clean-0", "clean-1", "clean-2", "sick")]
    verdict = compute(r.findings, list(r.outcomes.values()), nodes)
    assert [w.node for w in verdict.worst_nodes] == ["sick"], case


def test_lustre_goes_to_the_storage_owner_disks_to_node_hardware(clusters: dict[str, Result]) -> None:
    [lustre] = [f for f in clusters["lustre"].of("host.kernel.fault") if f.node == "sick"]
    assert lustre.route.owner == "filesystem-capacity" and lustre.severity == Severity.WARNING
    assert lustre.params["signatures"] == ["lnet_timed_out_tx", "lustre_rpc_network_error", "lustre_error"]
    assert "172.31.126.87@o2ib" in lustre.params["devices"]
    [disk] = [f for f in clusters["filesystem"].of("host.kernel.fault") if f.params["family"] == "filesystem"]
    assert disk.route.owner == "node-hardware" and disk.severity == Severity.CRITICAL
    assert {"journal_abort", "ext4_error", "remount_read_only"} <= set(disk.params["signatures"])


def _sick(r: Result) -> list[Finding]:
    return [f for f in r.findings if f.node == "sick" and f.severity != Severity.INFO]


def test_aer_is_one_finding_on_the_gpu_that_failed_not_its_root_port(clusters: dict[str, Result]) -> None:
    # the root port 00:03.0 received the fatal error (its own completion timeout); the GPU below it and its
    # audio function could not recover: one device failed, the port is where it was reported
    [f] = _sick(clusters["pcie_aer"])
    assert f.rule == "host.pcie.aer" and f.severity == Severity.CRITICAL
    assert f.params["pci"] == "0000:03:00.0" and f.params["functions"] == ["0000:03:00.0", "0000:03:00.1"]
    assert f.params["reported_by"] == ["0000:00:03.0"] and f.params["not_recovered"] is True
    assert f.params["uncorrected"] == 2  # the report cut at the log's start, and the one received at line 4
    assert "reported by port 0000:00:03.0" in f.message and "could not recover" in f.message
    assert [e.line for e in f.evidence] == [1, 4]  # the cut report's can't-recover line, the port's report
    assert not [g for g in clusters["pcie_aer"].findings if g.params.get("pci") == "0000:00:03.0"]


def test_aer_on_the_endpoint_the_port_names(clusters: dict[str, Result]) -> None:
    # the port names the endpoint as the source; the endpoint prints its own Bus Error line: one report
    [f] = _sick(clusters["pcie_aer-endpoint"])
    assert (f.params["pci"], f.params["reported_by"], f.params["uncorrected"]) == (
        "0000:01:00.0",
        ["0000:00:01.0"],
        1,
    )
    assert f.params["not_recovered"] is False and [e.line for e in f.evidence] == [1]


def test_aer_in_the_newer_wording_on_each_endpoint_that_could_not_recover(
    clusters: dict[str, Result],
) -> None:
    # kernel 6.6+: "Uncorrectable (Non-Fatal) error message received from"; two devices below the port failed
    found = {f.params["pci"]: f for f in _sick(clusters["pcie_aer-journal"])}
    assert set(found) == {"0000:84:00.0", "0000:97:00.0"}
    assert all(f.params["reported_by"] == ["0000:80:1b.4"] for f in found.values())
    assert found["0000:84:00.0"].params["uncorrected"] == 1
    assert found["0000:97:00.0"].params["uncorrected"] == 2  # and the report cut at the log's start
    assert [e.line for e in found["0000:84:00.0"].evidence] == [4, 9]  # the port's report, the device's line


@pytest.mark.parametrize("case", [c for c in FAMILY_FIXTURES if family_of(c) == "pcie_aer"])
def test_one_aer_error_is_one_finding_of_one_rule(clusters: dict[str, Result], case: str) -> None:
    # the AER family is host.pcie.aer's alone: host.kernel.fault and host.kernel.unclassified say nothing
    r = clusters[case]
    assert {f.rule for f in r.findings if f.node == "sick"} == {"host.pcie.aer"}


def test_efa_command_failure_names_the_device(clusters: dict[str, Result]) -> None:
    [f] = [f for f in clusters["efa"].of("host.kernel.fault") if f.node == "sick"]
    assert f.severity == Severity.WARNING and f.params["devices"] == ["efa_0"]
    assert f.params["signatures"] == ["efa_cmd_failed", "efa_error"]
    assert f.route.target == "hyperpod-node-debugger § A"


def test_efa_admin_queue_timeout_is_critical(tmp_path: Path) -> None:
    # DERIVED fixture (no real admin-queue timeout log was found: PROVENANCE.md): NVSentinel's test lines
    nodes = {
        "efa": {
            "cmd/dmesg.txt": (
                "dmesg",
                fixture("dmesg", "derived-nvsentinel-efa-rdmap-admin-timeout-reset.txt"),
            )
        }
    }
    [f] = run(tmp_path, nodes).of("host.kernel.fault")
    assert f.severity == Severity.CRITICAL and "rdmap16s27" in f.params["devices"]
    assert {"efa_admin_cmd_timeout", "efa_reset_failed"} <= set(f.params["signatures"])


def test_nic_watchdog_names_the_nic_in_both_kernel_wordings(clusters: dict[str, Result]) -> None:
    [mlx5] = [f for f in clusters["nic"].of("host.kernel.fault") if f.node == "sick"]
    assert (
        mlx5.severity == Severity.WARNING and mlx5.params["count"] == 2
    )  # the watchdog, "TX timeout detected"
    assert mlx5.params["devices"] == ["0000:13:00.1", "eth1"] and mlx5.params["signatures"] == [
        "netdev_watchdog"
    ]
    [new] = [f for f in clusters["nic-6.8"].of("host.kernel.fault") if f.node == "sick"]
    assert new.params["devices"] == ["0000:22:01.0", "0000:22:04.0", "eth1", "eth4"]
    [ena] = [f for f in clusters["nic-ena"].of("host.kernel.fault") if f.node == "sick"]
    assert ena.params["devices"] == ["enp0s2"] and [e.line for e in ena.evidence] == [4]
    # the trace around the watchdog and mlx5's queue dump are no error of their own
    assert not clusters["nic"].of("host.kernel.unclassified")


def test_cpu_throttling_names_the_cpus_and_its_recovery_is_no_event(clusters: dict[str, Result]) -> None:
    [f] = [f for f in clusters["cpu"].of("host.kernel.fault") if f.node == "sick"]
    assert f.severity == Severity.WARNING and f.params["count"] == 10
    assert f.params["devices"] == [f"CPU{i}" for i in range(8)]


def test_nmi_and_file_max_rank_their_nodes(clusters: dict[str, Result]) -> None:
    [nmi] = [f for f in clusters["nmi"].of("host.kernel.panic") if f.node == "sick"]
    assert nmi.params["event"] == "nmi" and nmi.params["count"] == 1 and nmi.severity == Severity.CRITICAL
    [fmax] = [f for f in clusters["os"].of("host.kernel.fault") if f.node == "sick"]
    assert fmax.params["signatures"] == ["vfs_file_max"] and fmax.route.owner == "node-hardware"


# --- healthy real logs -------------------------------------------------------------------------------

_spec = importlib.util.spec_from_file_location("bench_generate_kernel", ROOT / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(generate)  # type: ignore[union-attr]

#: the clean real kernel logs of the fixtures (no fault in them) and their unclassified error lines
CLEAN_DMESG = {
    CLEAN: 0,
    "coreos-2374-dmesg-bond-link-status-up.txt": 0,
    "gpud-1209-journal-mlx5-port-link-active.txt": 0,
    "amzn-308-dmesg-efa-driver-v2.6.0g.txt": 0,
    "amzn-114-dmesg-efa-setup-irq-ib-registered.txt": 0,
    "cachyos-1019-journal-open-banner-610.txt": 0,
}


def _bug_report_logs() -> dict[str, str]:
    logs = {}
    for p in sorted((FIXTURES / "nvidia-bug-report").glob("*.log")):
        text, _ = nbr.decode(p, Limits())
        blocks = nbr.split_blocks(text)
        found = nbr.pick(blocks)
        outs, _ = nbr.kernel_outputs(blocks, "dmesg" in found)
        parts = ([found["dmesg"][1]] if "dmesg" in found else []) + [o.text for o in outs]
        for i, part in enumerate(parts):
            logs[f"{p.name}#{i}"] = part
    return logs


def _healthy_logs() -> dict[str, str]:
    logs = {name: fixture("dmesg", name) for name in CLEAN_DMESG}
    logs.update(_bug_report_logs())
    for seed in range(3):
        logs[f"generate.build_dmesg(seed {seed})"] = generate.build_dmesg(random.Random(seed))[0]
    return logs


def test_healthy_real_logs_give_no_warning_and_few_unclassified_lines() -> None:
    unclassified = {}
    for name, text in _healthy_logs().items():
        rows = dmesg.parse(text).rows("kernel_event")
        faults = [r for r in rows if r["signature"] and BY_ID[r["signature"]].severity != "info"]
        assert not faults, (name, faults)
        unclassified[name] = sum(1 for r in rows if r["event_type"] == "kernel_error")
    assert {k: v for k, v in unclassified.items() if v} == {}, unclassified
    assert len(unclassified) >= 15  # every log was read: 6 fixtures, 8 bug-report parts, 3 generated


def test_noise_rows_are_what_keeps_them_quiet() -> None:
    # without the catalog's noise rows, the same healthy logs would say these lines
    lines = {
        "acpi_mmconfig": "[    0.401201] acpi PNP0A03:00: fail to add MMCONFIG information, can't access extended"
        " PCI configuration space under this bridge.",
        "driver_settings": "megaraid_sas 0000:82:00.0: FW provided TM TaskAbort/Reset timeout\t: 0 secs/0 secs",
        "ras_collector": "HEST: Enabling Firmware First mode for corrected errors.",
    }
    by_id = {n.id: n for n in NOISE}
    for nid, line in lines.items():
        body = line.split("] ", 1)[-1]
        assert by_id[nid].pattern.search(body), nid
    assert dmesg.parse("\n".join(lines.values())).rows("kernel_event") == []


def test_the_level_the_log_prints_decides_what_is_an_error() -> None:
    # derived: the real unclassified line of nvsentinel-155 (an error word, no level: "error word"), printed
    # as dmesg -x and /dev/kmsg print levels; the collector's dmesg -T and journalctl -o short-iso print none
    line = fixture("dmesg", "nvsentinel-155-fallen-off-bus-multiline.txt").splitlines()[3]
    message = line.split("] ", 1)[1]
    text = "\n".join(
        [
            line,
            f"kern  :warn  : {line}",  # an error word at warning level is no error
            f"kern  :err   : {line}",
            f"4,17,1843439662,-;{message}",
            f"3,18,1843439663,-;{message}",
            f"kern  :err   : {line}",  # the same message at the same level again (remembered)
        ]
    )
    rows = [r for r in dmesg.parse(text).rows("kernel_event") if r["event_type"] == "kernel_error"]
    assert [(r["line"], r["severity"]) for r in rows] == [
        (1, "error word"),
        (3, "err"),
        (5, "err"),
        (6, "err"),
    ]


def test_unclassified_errors_are_one_info_finding_per_node(tmp_path: Path) -> None:
    nodes = {
        "probe-failed": {
            "cmd/dmesg.txt": ("dmesg", fixture("dmesg", "nvsentinel-155-fallen-off-bus-multiline.txt"))
        },
        "emerg": {"cmd/dmesg.txt": ("dmesg", fixture("dmesg", "gpud-870-dmesg-decode-iso-comma-xid79.txt"))},
        "clean": {"cmd/dmesg.txt": ("dmesg", fixture("dmesg", CLEAN))},
    }
    r = run(tmp_path, nodes)
    found = {f.node: f for f in r.of("host.kernel.unclassified")}
    assert set(found) == {"probe-failed", "emerg"}
    assert all(f.severity == Severity.INFO for f in found.values())
    assert found["probe-failed"].params["count"] == 1
    assert "probe routine failed" in found["probe-failed"].params["shown"][0]
    assert found["probe-failed"].evidence[0].line == 4
    assert found["emerg"].params["levels"] == ["emerg"]  # the level dmesg --decode printed
