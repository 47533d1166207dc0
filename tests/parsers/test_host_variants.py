"""cpu-governor, versions, uptime and shm variants: cpupower/cpufreq-info of amd-pstate(-epp), intel_pstate and
VMs without a cpufreq driver, sysfs cpufreq files, modinfo/dpkg/apt/rpm/efa_installed_packages/dmesg versions,
uptime forms (procps, macOS, -p, -s, /proc/uptime, /proc/loadavg), df and ls of /dev/shm, and the travel noise.

Real fixtures: tests/fixtures/<kind>/ (see each PROVENANCE.md).  Texts built here from a real fixture (a prefix
added, CRLF, two captures joined) are labelled "derived"; texts written here from scratch are "synthetic".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import parsers
from parsers import CollectorError, ParseError, cpu_governor, shm, uptime, versions
from tests.conftest import fixture_files, fixture_text
from tests.derive import crlf, pdsh, srun

KINDS = ("cpu-governor", "versions", "uptime", "shm")


def gov(text: str) -> list[dict[str, Any]]:
    result = cpu_governor.parse(text)
    assert result.issues == []
    return result.rows("cpu_governor")


def sw(text: str) -> list[dict[str, Any]]:
    result = versions.parse(text)
    assert result.issues == []
    return result.rows("software_version")


@pytest.mark.parametrize(("kind", "name"), [(k, p.name) for k in KINDS for p in fixture_files(k)])
def test_every_fixture_is_detected_and_parses(kind: str, name: str) -> None:
    text = fixture_text(kind, name)
    assert parsers.detect_kind(text) == kind
    result = parsers.parse(kind, text)
    assert sum(len(rows) for rows in result.table_rows().values()) >= 1


# --- cpu-governor ----------------------------------------------------------------------------------------


def test_cpupower_amd_pstate_epp_keeps_every_printed_value() -> None:
    [row] = gov(fixture_text("cpu-governor", "tlp-764-cpupower-amd-pstate-epp-powersave-400mhz-prompt.txt"))
    assert (row["line"], row["cpu"], row["governor"], row["driver"]) == (2, 12, "powersave", "amd-pstate-epp")
    assert (row["hardware_limits"], row["hw_min_mhz"], row["hw_max_mhz"]) == (
        "400 MHz - 4.46 GHz",
        400.0,
        4460.0,
    )
    assert (row["policy_min_mhz"], row["policy_max_mhz"]) == (
        400.0,
        400.0,
    )  # pinned to 400 MHz: the bug report
    assert (row["cur_freq"], row["cur_freq_mhz"]) == ("399 MHz (asserted by call to kernel)", 399.0)
    assert (row["boost_supported"], row["boost_active"], row["status"]) == (True, True, "ok")
    extra = json.loads(row["extra"])
    assert extra["AMD PSTATE Highest Performance"] == "166. Maximum Frequency: 4.46 GHz."
    assert extra["AMD PSTATE Lowest Performance"] == "15. Lowest Frequency: 400 MHz."
    assert extra["current CPU frequency"] == [
        "Unable to call hardware",
        "399 MHz (asserted by call to kernel)",
    ]


def test_cpupower_amd_pstate_schedutil_boost_inactive() -> None:
    [row] = gov(fixture_text("cpu-governor", "frogging-78-cpupower-amd-pstate-schedutil-boost-inactive.txt"))
    assert (row["governor"], row["driver"], row["transition_latency"]) == (
        "schedutil",
        "amd-pstate",
        "131 us",
    )
    assert row["available_governors"] == "conservative ondemand userspace powersave performance schedutil"
    assert (row["boost_supported"], row["boost_active"], row["cur_freq_mhz"]) == (True, False, 2840.0)


def test_cpufreq_info_three_cpus_with_a_cut_last_line() -> None:
    result = cpu_governor.parse(
        fixture_text("cpu-governor", "dde-pstate-5-cpufreq-info-intel_pstate-3cpus-cut.txt")
    )
    rows = result.rows("cpu_governor")
    assert [(r["line"], r["cpu"], r["governor"], r["cur_freq_mhz"]) for r in rows] == [
        (4, 0, "performance", 2990.0), (15, 1, "performance", 2870.0), (26, 2, None, None),
    ]  # fmt: skip
    assert {r["source"] for r in rows} == {"cpufreq-info"} and rows[0][
        "available_governors"
    ] == "performance, powersave"
    assert (rows[0]["hw_min_mhz"], rows[0]["hw_max_mhz"], rows[0]["transition_latency"]) == (
        1200.0,
        3200.0,
        "4294.55 ms.",
    )
    [issue] = result.issues  # the cut line is loud, not dropped
    assert (issue.line_no, issue.line) == (29, "  CPUs which need to have their frequency coordinated b")


def test_vm_without_cpufreq_driver_is_an_answer() -> None:
    rows = gov(fixture_text("cpu-governor", "arpl-645-cpufreq-info-pve-vm-no-driver-2cpus-prompts.txt"))
    assert [(r["line"], r["cpu"], r["status"], r["governor"]) for r in rows] == [
        (4, 0, "no_driver", None), (7, 1, "no_driver", None),
    ]  # fmt: skip
    [row] = gov(fixture_text("cpu-governor", "vector-6828-cpupower-ec2-no-driver-sudo-prompt-cut.txt"))
    assert (row["line"], row["status"], row["hardware_limits"]) == (2, "no_driver", "Not Available")
    [row] = gov(fixture_text("cpu-governor", "ampere-52-cpupower-no-driver-not-available-wrapped.txt"))
    assert (row["status"], row["policy"], row["available_governors"]) == (
        "no_driver", "Unable to determine current policy", "Not Available",
    )  # fmt: skip
    assert json.loads(row["extra"])["current CPU frequency"][1] == "Unable to call to kernel"


def test_sysfs_path_colon_space_keeps_every_file() -> None:
    rows = gov(fixture_text("cpu-governor", "node-exporter-1710-sysfs-path-colon-space-pcc-cpufreq.txt"))
    assert [(r["line"], r["cpu"], r["governor"], r["driver"]) for r in rows] == [
        (1, 0, "conservative", "pcc-cpufreq"), (14, 10, "conservative", "pcc-cpufreq"),
    ]  # fmt: skip
    r0 = rows[0]
    assert (r0["cur_freq_mhz"], r0["hw_min_mhz"], r0["hw_max_mhz"], r0["policy_max_mhz"]) == (
        1200.0,
        1200.0,
        2400.0,
        2400.0,
    )
    assert r0["available_governors"] == "conservative userspace powersave ondemand performance"
    extra = json.loads(r0["extra"])
    assert extra["scaling_setspeed"] == "<unsupported>" and extra["cpuinfo_cur_freq"] == "2472000"
    assert json.loads(rows[1]["extra"]) == {"cpuinfo_cur_freq": "2016000", "cpuinfo_transition_latency": "0"}


def test_cpupower_derived_srun_prefix_and_crlf() -> None:
    text = fixture_text("cpu-governor", "cpupower-frequency-info-intel_pstate-performance.txt")
    for variant in (srun(text), crlf(text), pdsh(text, "ip-10-1-2-3")):
        [row] = gov(variant)
        assert (row["governor"], row["driver"], row["hw_max_mhz"], row["boost_active"]) == (
            "performance", "intel_pstate", 3900.0, True,
        )  # fmt: skip
    [row] = gov(pdsh(text, "ip-10-1-2-3"))
    assert row["host"] == "ip-10-1-2-3"


def test_grep_epp_and_driver_files_synthetic() -> None:
    text = (  # synthetic: grep . over three cpufreq files of two CPUs
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor:powersave\n"
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver:intel_pstate\n"
        "/sys/devices/system/cpu/cpu0/cpufreq/energy_performance_preference:balance_performance\n"
        "/sys/devices/system/cpu/cpufreq/policy1/scaling_governor:performance\n"
    )
    rows = gov(text)
    assert [(r["cpu"], r["governor"], r["driver"], r["epp"]) for r in rows] == [
        (0, "powersave", "intel_pstate", "balance_performance"), (1, "performance", None, None),
    ]  # fmt: skip
    assert json.loads(rows[1]["extra"]) == {"policy": "policy1"}


def test_bare_cat_of_epp_and_driver_synthetic() -> None:
    epp = "$ cat /sys/devices/system/cpu/cpu*/cpufreq/energy_performance_preference\nperformance\nbalance_power\n"
    rows = gov(epp)  # synthetic: 'performance' is an EPP value here, the command says so
    assert [(r["line"], r["epp"], r["governor"]) for r in rows] == [
        (2, "performance", None),
        (3, "balance_power", None),
    ]
    assert [r["driver"] for r in gov("amd-pstate-epp\namd-pstate-epp\n")] == ["amd-pstate-epp"] * 2


def test_cpu_governor_errors() -> None:
    with pytest.raises(CollectorError, match="No such file"):
        cpu_governor.parse(
            "cat: /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor: No such file or directory\n"
        )
    with pytest.raises(ParseError, match="saw 'hello world'"):
        cpu_governor.parse("hello world\n")


# --- versions --------------------------------------------------------------------------------------------


def test_modinfo_efa_keeps_srcversion_vermagic_and_aliases() -> None:
    [row] = sw(fixture_text("versions", "bottlerocket-kit-313-modinfo-efa-2.17.3g-in-tree-prompt.txt"))
    assert (row["line"], row["component"], row["version"], row["source"]) == (
        7,
        "efa_module",
        "2.17.3g",
        "modinfo",
    )
    assert row["path"] == "/lib/modules/6.12.53/kernel/drivers/amazon/net/efa/efa.ko"
    extra = json.loads(row["extra"])
    assert extra["srcversion"] == "78EE70912A60CFABFF7A78E"
    assert extra["vermagic"] == "6.12.53 SMP preempt mod_unload modversions"
    assert extra["depends"] == "ib_uverbs,ib_core" and extra["softdep"] == "pre: ib_uverbs"
    assert len(extra["alias"]) == 4 and extra["alias"][0] == "pci:v00001D0Fd0000EFA3sv*sd*bc*sc*i*"


def test_modinfo_without_version_line_synthetic() -> None:
    text = "filename:       /lib/modules/6.8.0-1017-aws/kernel/drivers/infiniband/hw/efa/efa.ko.zst\nlicense:        Dual BSD/GPL\n"
    [row] = sw(text)  # synthetic: an in-tree efa has no MODULE_VERSION
    assert (row["component"], row["version"], row["line"], row["detail"]) == ("efa_module", None, 1, None)


def test_dpkg_header_and_modinfo_of_gdrdrv_disagree() -> None:
    rows = sw(fixture_text("versions", "gdrcopy-82-dpkg-l-header-and-modinfo-gdrdrv-mismatch.txt"))
    assert [(r["line"], r["component"], r["version"], r["source"]) for r in rows] == [
        (7, "gdrcopy", "2.0", "package"), (11, "gdrcopy", "1.1", "modinfo"),
    ]  # fmt: skip
    assert rows[0]["detail"] == "gdrdrv-dkms:amd64"
    assert json.loads(rows[0]["extra"]) == {
        "status": "ii",
        "arch": "amd64",
        "description": "gdrdrv driver in DKMS format.",
    }
    assert json.loads(rows[1]["extra"])["vermagic"] == "4.15.0-58-generic SMP mod_unload"


def test_dpkg_grep_nccl_keeps_every_package() -> None:
    [row] = sw(fixture_text("versions", "llm-c-742-dpkg-l-grep-libnccl-libnccl2-cuda12.2.txt"))
    assert (row["component"], row["version"], row["detail"]) == ("nccl", "2.22.3-1+cuda12.2", "libnccl2")
    rows = sw(fixture_text("versions", "llm-c-742-dpkg-l-grep-nccl-false-matches.txt"))
    assert [(r["component"], r["version"]) for r in rows] == [
        ("libvncclient1", "0.9.13+dfsg-3build2"),
        ("nccl_local_repo_ubuntu2204_2_22_3_cuda12_2", "1.0-1"),
    ]  # fmt: skip  (neither is NCCL itself: no 'nccl' row)


def test_efa_installed_packages_deb_names_and_prompt() -> None:
    rows = sw(fixture_text("versions", "aws-libfabric-3-efa-installed-packages-1.5.1-deb-names.txt"))
    got = {r["detail"]: (r["component"], r["version"]) for r in rows}
    assert rows[0]["version"] == "1.5.1" and len(rows) == 22
    assert got["efa"] == ("efa_module", "1.3.0-1.amzn1") and got["libfabric1"] == (
        "libfabric",
        "1.8.0amzn1.0",
    )
    assert got["rdma-core"] == ("rdma_core", "25.0-1") and got["openmpi"] == ("openmpi", "3.1.4-2")
    rows = sw(fixture_text("versions", "pcluster-cookbook-1882-efa-installed-packages-1.22.0-el8-prompt.txt"))
    assert (rows[0]["line"], rows[0]["component"], rows[0]["version"]) == (2, "efa_installer", "1.22.0")
    by = {r["component"]: r["version"] for r in rows}
    assert (by["libfabric"], by["openmpi"], by["rdma_core"], by["efa_config"]) == (
        "1.17.0",
        "4.1.5",
        "43.0",
        "1.13",
    )
    assert {r["source"] for r in rows} == {"efa_installed_packages"}


def test_dmesg_driver_lines_derived() -> None:
    text = fixture_text("dmesg", "amzn-308-dmesg-efa-driver-v2.6.0g.txt")  # derived: `dmesg | grep -i efa`
    [row] = sw(text)
    assert (row["line"], row["component"], row["version"], row["source"]) == (
        1,
        "efa_module",
        "2.6.0g",
        "dmesg",
    )


def test_apt_list_and_rpm_qa_synthetic() -> None:
    apt = (  # synthetic, in apt's format
        "WARNING: apt does not have a stable CLI interface. Use with caution in scripts.\n\n"
        "Listing... Done\n"
        "libnccl2/unknown,now 2.18.3-1+cuda12.2 amd64 [installed]\n"
        "nvidia-driver-535/jammy-updates,now 535.104.05-0ubuntu1 amd64 [installed,automatic]\n"
    )
    rows = sw(apt)
    assert [(r["line"], r["component"], r["version"]) for r in rows] == [
        (4, "nccl", "2.18.3-1+cuda12.2"), (5, "nvidia_driver", "535.104.05-0ubuntu1"),
    ]  # fmt: skip
    assert json.loads(rows[1]["extra"]) == {
        "suite": "jammy-updates,now",
        "arch": "amd64",
        "state": "installed,automatic",
    }
    rpm = "kmod-nvidia-latest-dkms-535.54.03-1.el8.x86_64\ncuda-toolkit-12-2-12.2.2-1.x86_64\nefa-2.5.0-1.amzn2.x86_64\n"
    assert [(r["component"], r["version"]) for r in sw("$ rpm -qa\n" + rpm)] == [
        ("nvidia_driver", "535.54.03"), ("cuda", "12.2.2"), ("efa_module", "2.5.0"),
    ]  # fmt: skip


def test_versions_launcher_host_kept_derived() -> None:
    text = pdsh(
        fixture_text("versions", "bottlerocket-kit-313-modinfo-efa-2.17.3g-in-tree-prompt.txt"), "node-7"
    )
    [row] = sw(text)
    assert (row["host"], row["version"], row["line"]) == ("node-7", "2.17.3g", 7)


# --- uptime ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "line", "uptime_s", "up_text", "users", "loads"),
    [
        ("jc-centos-7.7-uptime-up-16h-no-days.txt", 1, 16 * 3600 + 180, "16:03", 2, (0.0, 0.01, 0.05)),
        ("jc-ubuntu-18.04-uptime-2-days-hh-mm.txt", 1, 2 * 86400 + 19 * 3600 + 1920, "2 days, 19:32", 2, (0.0, 0.0, 0.0)),
        ("jc-osx-10.14.6-uptime-load-averages-no-commas.txt", 1, 20 * 86400 + 19 * 3600 + 2700, "20 days, 19:45", 8,
         (1.63, 0.65, 0.44)),
        ("c4cs-199-uptime-macos-hrs-fenced.txt", 3, 86400 + 6 * 3600, "1 day, 6 hrs", 2, (1.38, 1.43, 1.42)),
        ("cloudstudying-20-uptime-4-min-markdown-quote.txt", 2, 240, "4 min", 1, (0.04, 0.21, 0.12)),
        ("tech-log-50-uptime-fullwidth-punctuation.txt", 2, 1500, "25 min", 2, (1.23, 1.32, 1.21)),
        ("sysfetch-46-uptime-41-days-backticks.txt", 1, 41 * 86400 + 2 * 3600 + 2760, "41 days,  2:46", 1,
         (1.52, 2.11, 1.96)),
    ],
)  # fmt: skip
def test_uptime_forms(name: str, line: int, uptime_s: float, up_text: str, users: int, loads: tuple) -> None:
    result = uptime.parse(fixture_text("uptime", name))
    assert result.issues == []
    [row] = result.rows("host_uptime")
    assert (row["line"], row["uptime_s"], row["up_text"], row["users"], row["source"]) == (
        line, uptime_s, up_text, users, "uptime",
    )  # fmt: skip
    assert (row["load1"], row["load5"], row["load15"]) == pytest.approx(loads)


def test_uptime_pretty_proc_and_loadavg() -> None:
    [row] = uptime.parse(fixture_text("uptime", "c4cs-199-uptime-p-capital-up-fenced.txt")).rows(
        "host_uptime"
    )
    assert (row["line"], row["uptime_s"], row["load1"]) == (3, 3 * 3600 + 26 * 60, None)
    [row] = uptime.parse(fixture_text("uptime", "jc-linux-proc-uptime.txt")).rows("host_uptime")
    assert (row["uptime_s"], row["idle_s"], row["source"]) == (46901.13, 46856.66, "proc_uptime")
    [row] = uptime.parse(fixture_text("uptime", "jc-linux-proc-loadavg.txt")).rows("host_uptime")
    assert (row["load15"], row["runnable"], row["entities"], row["last_pid"]) == (0.03, 2, 111, 2039)


def test_uptime_since_and_multi_host_synthetic() -> None:
    [row] = uptime.parse("$ uptime -s\n2024-05-01 08:12:33\n").rows("host_uptime")
    assert (row["line"], row["since"], row["uptime_s"], row["source"]) == (
        2,
        "2024-05-01 08:12:33",
        None,
        "uptime_since",
    )
    text = (
        "node-1:  10:25:20 up 16:03,  2 users,  load average: 0.00, 0.01, 0.05\nnode-2: 46901.13 46856.66\n"
    )
    rows = uptime.parse(text).rows("host_uptime")
    assert [(r["host"], r["uptime_s"]) for r in rows] == [("node-1", 57780.0), ("node-2", 46901.13)]


def test_uptime_skipped_data_line_is_loud() -> None:
    result = uptime.parse(fixture_text("uptime", "jc-linux-proc-uptime.txt") + "up ??\n")
    assert [(i.line_no, i.line) for i in result.issues] == [(2, "up ??")]
    with pytest.raises(ParseError, match="saw 'garbage here'"):
        uptime.parse("garbage here\n")


# --- shm -------------------------------------------------------------------------------------------------


def test_busybox_df_hT_in_a_container_with_prompt() -> None:
    result = shm.parse(fixture_text("shm", "postgres-416-docker-df-hT-busybox-64.0M-prompt.txt"))
    assert result.issues == []
    [row] = result.rows("shm")
    assert (row["line"], row["device"], row["fstype"], row["size_bytes"], row["use_pct"]) == (
        3,
        "shm",
        "tmpfs",
        67108864,
        0.0,
    )
    assert (row["size_printed"], row["avail_printed"], row["mountpoint"]) == ("64.0M", "64.0M", "/dev/shm")
    assert row["entries"] is None


def test_bare_listing_of_stale_nccl_segments() -> None:
    text = fixture_text("shm", "llm-d-352-ls-la-dev-shm-stale-nccl-zero-size-excerpt.txt")
    for variant in (text, "$ ls -la /dev/shm\n" + text, crlf(text)):  # derived: with a prompt, with CRLF
        result = shm.parse(variant)
        assert result.issues == []
        [row] = result.rows("shm")
        assert (row["entries"], row["nccl_files"], row["nccl_bytes"], row["size_bytes"]) == (24, 24, 0, None)
        assert json.loads(row["entry_names"])[:2] == ["nccl-onFp46", "nccl-xWvc0t"]
    assert shm.parse("$ ls -la /dev/shm\n" + text).rows("shm")[0]["listing_line"] == 2


def test_collector_format_derived_srun_and_bad_listing_line() -> None:
    text = srun(fixture_text("shm", "handwritten-collector-p5-stale-nccl.txt"))
    [row] = shm.parse(text).rows("shm")
    assert (row["nccl_files"], row["entries"], row["listing_line"], row["host"]) == (2, 3, 4, "0")
    spoiled = (
        fixture_text("shm", "postgres-416-docker-df-hT-busybox-64.0M-prompt.txt")
        + "--- ls -la /dev/shm\n#?!\n"
    )
    result = shm.parse(spoiled)
    assert [(i.line_no, i.line) for i in result.issues] == [(5, "#?!")]
