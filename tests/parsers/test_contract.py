"""The error contract of parsers/_base.py, for every kind of the registry.

- empty or whitespace-only input raises NoData;
- a tool's own error message raises CollectorError;
- text in no format the parser knows raises ParseError;
- a good text with a bad line parses the rest and reports the line as a ParseIssue (dmesg and
  nvidia-smi -q skip lines they do not know, by design, so for them the bad line is only dropped).

CONTRACTS holds the per-kind inputs: tool error messages and garbage (each with a pattern its exception
message must match, "" for any), and a spoiled good text with the issues and rows it must give.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

import parsers
from parsers import CollectorError, NoData, ParseError
from tests.conftest import fixture_text
from tests.parsers.test_cloudwatch import FSX_LONG_CSV
from tests.parsers.test_dcgmi_diag import DCGM_3X_SPLIT
from tests.parsers.test_efa_ports import SYSFS
from tests.parsers.test_iostat import COLLECTOR_RUN
from tests.parsers.test_placement import IMDS
from tests.parsers.test_versions import COLLECTOR as VERSIONS_COLLECTOR

#: every kind: these are NoData
EMPTY = ("", "  ", "\n", " \n", "   \n", "\n \n", " \n\n", "\n  \n")
#: every kind: a shell that cannot find the tool
NOT_FOUND = "bash: sometool: command not found\n"


@dataclass(frozen=True)
class Spoiled:
    """A good text with bad lines: the issues it must give (attributes of each ParseIssue, in order),
    the rows per table that still parse, cells of them, and (table, column, value) no row may have."""

    text: str
    issues: tuple[dict[str, object], ...]
    rows: dict[str, int]
    cells: dict[tuple[str, int, str], object] = field(default_factory=dict)
    absent: tuple[tuple[str, str, object], ...] = ()


@dataclass(frozen=True)
class Contract:
    tool_errors: dict[str, str]  # text -> pattern its CollectorError must match ("" = any)
    garbage: dict[str, str]  # text -> pattern its ParseError must match ("" = any)
    spoiled: Spoiled


def _replaced(kind: str, name: str, old: str, new: str) -> str:
    text = fixture_text(kind, name)
    assert old in text, f"{kind}/{name}: {old!r} not found"
    return text.replace(old, new)


def _lines_replaced(kind: str, name: str, new: dict[int, str]) -> str:
    lines = fixture_text(kind, name).splitlines()
    for index, line in new.items():
        lines[index] = line
    return "\n".join(lines)


def _at(*line_nos: int) -> tuple[dict[str, object], ...]:
    return tuple({"line_no": n} for n in line_nos)


NVIDIA_SMI_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)

CONTRACTS: dict[str, Contract] = {
    "nvidia-smi-q": Contract(
        tool_errors={NVIDIA_SMI_FAILED: ""},
        garbage={"some\nrandom\ntext\n": ""},
        spoiled=Spoiled(  # keys it does not know are skipped: the bad line only drops out
            _replaced(
                "nvidia-smi-q",
                "della-h100-545-single-no-blank-after-banner.txt",
                "GPU 00000000:19:00.0\n",
                "GPU 00000000:19:00.0\n    #### mangled ????\n",
            ),
            issues=(),
            rows={"gpu": 1},
            cells={("gpu", 0, "pci"): "0000:19:00.0"},
        ),
    ),
    "nvidia-smi-csv": Contract(
        tool_errors={
            'Field "clocks_throttle_reasons.active" is not a valid field to query.\n\n': "not a valid field"
        },
        garbage={
            "0, NVIDIA H100 80GB HBM3, 595.71.05, P0, 5, 29\n": "noheader",
            "\x00\x01\x02 binary junk\nmore junk without structure\n": "",
        },
        spoiled=Spoiled(
            _lines_replaced(
                "nvidia-smi-csv",
                "slurm-v100-timestamp-l5.txt",
                {
                    4: "0, 2020/11/12 13:48:",  # truncated row
                    6: "0, 2020/11/12 13:48:31.424, ERR! %, 88 %, 32480 MiB, 30994 MiB, 1486 MiB",
                },
            ),
            issues=_at(5, 7),
            rows={"gpu_query": 8},
            cells={("gpu_query", 4, "util_gpu_pct"): None},
        ),
    ),
    "nvidia-smi": Contract(
        tool_errors={NVIDIA_SMI_FAILED + "\n": "NVIDIA-SMI has failed"},
        garbage={"lorem ipsum\n\x00\xff| a | b |\n": ""},
        spoiled=Spoiled(
            _lines_replaced(
                "nvidia-smi",
                "della-h100-545-narrow-busid.txt",
                {9: "| N/A   33C |      2MiB / 81559MiB |      0%      Default |"},
            ),
            issues=_at(10),
            rows={"smi_gpu": 1},
            cells={
                ("smi_gpu", 0, "temp_c"): None,
                ("smi_gpu", 0, "memory_used_mib"): 2,
                ("smi_gpu", 0, "pci"): "0000:19:00.0",
            },
        ),
    ),
    "nvidia-smi-topo": Contract(
        tool_errors={"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n": ""},
        garbage={"\x00\x13garbage\nGPU zero\tsomething\n": ""},
        spoiled=Spoiled(
            _lines_replaced("nvidia-smi-topo", "dgxa100-12mlx5.txt", {3: "GPU2\tNV12\tNV12\t X \tNV12"}),
            issues=_at(4),
            rows={"topo_device": 19},
            absent=(("topo_device", "device", "GPU2"),),
        ),
    ),
    "nvidia-smi-nvlink": Contract(
        tool_errors={
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n": "host engine"
        },
        garbage={"\x00\x01 junk\nnothing here\n": ""},
        spoiled=Spoiled(
            _lines_replaced("nvidia-smi-nvlink", "h100-status-i0-18links.txt", {5: "         Link 4: 26.5"}),
            issues=_at(6),
            rows={"nvlink": 17},
        ),
    ),
    "dmesg": Contract(
        tool_errors={"bash: dmesg: command not found\n": ""},
        garbage={"hello world\nthis is not a kernel log\n": ""},
        spoiled=Spoiled(  # a kernel log is mostly noise: lines that are no event are skipped, not issues
            parsers.module_for("dmesg").SAMPLE.replace(
                "kernel: NVRM", "[ 1843.4] #### ??? mangled\nkernel: NVRM"
            ),
            issues=(),
            rows={"kernel_event": 3},
        ),
    ),
    "fi-info": Contract(
        tool_errors={
            "fi_getinfo: -22 (Invalid argument)\n": "-22",
            "bash: fi_info: command not found\n": "",
        },
        garbage={"some text\nwithout any provider\n": ""},
        spoiled=Spoiled(
            _replaced(
                "fi-info", "hpc6a-121.0-rdm-dgram.txt", "    type: FI_EP_DGRAM", "    type FI_EP_DGRAM"
            ),
            issues=({"line_no": 11, "reason": "not a 'key: value' line"},),
            rows={"fi_provider": 2},
            cells={("fi_provider", 1, "type"): None},
        ),
    ),
    "efa-ports": Contract(
        tool_errors={"No IB devices found\n": "", "bash: ibstat: command not found\n": ""},
        garbage={"nothing\nto see here\n": ""},
        spoiled=Spoiled(
            SYSFS.replace("rate: 100 Gb/sec (4X EDR)", "rate: fast"),
            issues=({"line_no": 3, "reason": "unreadable rate"},),
            rows={"efa_port": 2},
            cells={("efa_port", 0, "rate_gbps"): None},
        ),
    ),
    "versions": Contract(
        tool_errors={"bash: modinfo: command not found\n": ""},
        garbage={"# just a comment\nmodinfo efa\n": ""},
        spoiled=Spoiled(
            VERSIONS_COLLECTOR.replace("kernel=6.8.0-1017-aws", "kernel 6.8.0-1017-aws ?!"),
            issues=({"line_no": 9, "reason": "unrecognised line"},),
            rows={"software_version": 17},  # one fewer than the 18 of the unspoiled text
        ),
    ),
    "fabricmanager": Contract(
        tool_errors={
            "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
            "Failed to connect to bus: Host is down\n": ""
        },
        garbage={"random\ntext\n": ""},
        spoiled=Spoiled(
            _replaced(
                "fabricmanager",
                "sber-590-running-clean-pager-cut.txt",
                "Main PID: 5219 (nv-fabricmanage)",
                "Main PID: ??? (nv-fabricmanage)",
            ),
            issues=({"line_no": 6, "reason": "unreadable Main PID"},),
            rows={"service_state": 1},
            cells={("service_state", 0, "active_state"): "active"},
        ),
    ),
    "dcgmi-diag": Contract(
        tool_errors={
            "dcgmi: command not found": "",
            "Error: unable to establish a connection to the specified host: localhost\n"
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n": "",
            '{"DCGM GPU Diagnostic": {"runtime_error": "Unable to find a GPU to run on"}}': "",
        },
        garbage={
            "hello world\nthis is not dcgm\n": "",
            '{"foo": 1}': "",
            "+----+\n| a | b |\n": "",
            fixture_text("dcgmi-diag", "gb10-423-r1-json-software-fail-testfixture.txt")[
                :200
            ]: "",  # JSON cut before its first result (a cut after one is read key by key)
        },
        spoiled=Spoiled(DCGM_3X_SPLIT, issues=_at(6), rows={"dcgm_test": 5}),
    ),
    "cpu-governor": Contract(
        tool_errors={"bash: cpupower: command not found\n": ""},
        garbage={"12345 67890\n": ""},
        spoiled=Spoiled(
            "cpu0 performance\n#### junk ####\ncpu1 performance\n", issues=_at(2), rows={"cpu_governor": 2}
        ),
    ),
    "uptime": Contract(
        tool_errors={"cat: /proc/uptime: No such file or directory\n": ""},
        garbage={"not an uptime\n": ""},
        spoiled=Spoiled("350735.47 234388.90\n???\n", issues=_at(2), rows={"host_uptime": 1}),
    ),
    "shm": Contract(
        tool_errors={
            "df: /dev/shm: No such file or directory\n--- ls -la /dev/shm\n"
            "ls: cannot access '/dev/shm': No such file or directory\n": ""
        },
        garbage={"random words\nmore random words\n": ""},
        spoiled=Spoiled(
            _replaced(
                "shm",
                "handwritten-collector-p5-stale-nccl.txt",
                "-rw-r--r--  1 root   root          32 Nov 28 17:05 sem.slurm_job_lock",
                "?????",
            ),
            issues=({"line_no": 9, "line": "?????"},),
            rows={"shm": 1},
            cells={("shm", 0, "entries"): 2, ("shm", 0, "nccl_files"): 2},
        ),
    ),
    "mounts": Contract(
        tool_errors={"cat: /proc/mounts: No such file or directory\n": ""},
        garbage={"%%% not a mount table %%%\nat all\n": ""},
        spoiled=Spoiled(
            _replaced(
                "mounts",
                "handwritten-hyperpod-slurm-proc-mounts.txt",
                "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
                "proc /proc",
            ),
            issues=_at(3),
            rows={"mount": 9},
        ),
    ),
    "df": Contract(
        tool_errors={
            "df: cannot read table of mounted file systems: No such file or directory\n": "",
            "bash: df: command not found\n": "",
        },
        garbage={"lorem ipsum\ndolor sit amet\n": ""},
        spoiled=Spoiled(
            _replaced(
                "df",
                "hyperpod-workshop-controller-opt-sagemaker-fsx.txt",
                "tmpfs                      765M  1.2M  763M   1% /run\n",
                "tmpfs  765M  garbage here\n",
            ),
            issues=_at(5),
            rows={"filesystem_usage": 15},
        ),
    ),
    "lfs-df": Contract(
        tool_errors={"bash: lfs: command not found\n": ""},
        garbage={"no lustre here\njust words\n": ""},
        spoiled=Spoiled(
            _replaced(
                "lfs-df",
                "fsx-workshop-mnt-fsx-3ost.txt",
                "fsx-OST0001_UUID            1.1T",
                "fsx-OST0001_UUID  ???",
            ),
            issues=_at(4),
            rows={"lustre_target": 4},
        ),
    ),
    "iostat": Contract(
        tool_errors={"bash: iostat: command not found\n": ""},
        garbage={"hello world\nthis is not iostat\n": "", "\x00\x01\x02 binary junk \xff\n": ""},
        spoiled=Spoiled(COLLECTOR_RUN, issues=_at(16), rows={"iostat_cpu": 2}),
    ),
    "nccl-tests": Contract(
        tool_errors={
            "bash: /opt/nccl-tests/build/all_reduce_perf: No such file or directory\n": "",
            "/opt/nccl-tests/build/all_reduce_perf: error while loading shared libraries: libnccl.so.2: "
            "cannot open shared object file\nline two\nline three\nline four\n": "",
        },
        garbage={"hello world\nthis is not an nccl-tests log\n": ""},
        spoiled=Spoiled(
            _lines_replaced(
                "nccl-tests",
                "a3mega-h100-2node-allreduce.txt",
                {30: fixture_text("nccl-tests", "a3mega-h100-2node-allreduce.txt").splitlines()[30][:60]},
            ),
            issues=_at(31),
            rows={"nccl_result": 31},  # the cut row keeps its complete cells (size, count, type...)
        ),
    ),
    "cloudwatch": Contract(
        tool_errors={
            "An error occurred (AccessDenied) when calling the GetMetricStatistics operation: not authorized": "",
            'Unable to locate credentials. You can configure credentials by running "aws configure".': "",
            "aws: command not found": "",
        },
        garbage={"just some words": "", '{"Something": "else"}': "", '{"Datapoints": [ }': ""},
        spoiled=Spoiled(FSX_LONG_CSV, issues=_at(5), rows={"cw_metric": 3}),
    ),
    "placement": Contract(
        tool_errors={"bash: kubectl: command not found\n": ""},
        garbage={"#### ????\n!!!\n": "", "{not json": "", "[1, 2, 3]": ""},
        spoiled=Spoiled(
            IMDS, issues=({"line_no": 11, "line": "this line is mangled"},), rows={"placement_fact": 8}
        ),
    ),
    "dcgm-mndiag": Contract(
        tool_errors={
            "bash: dcgmi: command not found\n": "",
            "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n": (
                "Unable to connect"
            ),
        },
        garbage={
            "#### ????\n!!!\n": "",
            "{not json": "",
            '{"DCGM Diagnostic" : "DCGM Multi-Node Diagnostic",\n"hosts" : [\n': "does not load",
        },
        spoiled=Spoiled(
            # dcgmi prints "Unknown" for a result it cannot name (dcgmi/MnDiag.cpp to_string)
            _lines_replaced(
                "dcgm-mndiag",
                "dcgmi-mndiag-unit-test-response-3hosts-2gpus-fail.txt",
                {97: '\t\t\t\t\t\t\t\t"status" : "Unknown",'},
            ),
            issues=_at(98),
            rows={"dcgm_mndiag_result": 5, "dcgm_mndiag_host": 3},
            cells={
                ("dcgm_mndiag_result", 1, "status"): None,
                ("dcgm_mndiag_result", 1, "message"): ("CUDA memory allocation failed"),
            },
        ),
    ),
    "lspci": Contract(
        tool_errors={"bash: lspci: command not found\n": ""},
        garbage={"hello world\nnot a bus listing\n": "no lspci device line"},
        spoiled=Spoiled(
            _replaced(
                "lspci",
                "derived-fm-guide-hgx-b200-vv-links-gpu-x8-cx7-gen4.txt",
                "43:00.0 3D controller",
                "43:0?.0 3D controller",
            ),
            issues=({"line_no": 17, "reason": "not an lspci device line"},),
            rows={"pci_device": 11},
            cells={("pci_device", 4, "link_width"): 16, ("pci_device", 4, "link_speed_gts"): 2.5},
        ),
    ),
    "sinfo": Contract(
        tool_errors={
            "bash: sinfo: command not found\n": "",
            "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n": "Unable to contact",
        },
        garbage={"hello world\nthis is no sinfo\n": "no sinfo header line"},
        spoiled=Spoiled(
            _replaced(
                "sinfo",
                "unige-hpc-3909-sinfo-R-gres-gpu.txt",
                "issue-6543           root      2025-03-24T09:32:28 cpu319",
                "issue-6543",
            ),
            issues=({"line_no": 4, "reason": "not a row of sinfo -R"},),
            rows={"slurm_node_state": 48},
            cells={
                ("slurm_node_state", 1, "slurm_node"): "cpu246",
                ("slurm_node_state", 1, "reason"): "issue-5958",
            },
        ),
    ),
    "job-log": Contract(
        tool_errors={
            "bash: torchrun: command not found\n": "",
            "cat: /fsx/jobs/slurm-48213.err: No such file or directory\n": "No such file or directory",
        },
        garbage={
            "hello world\nthis is not a job log\n": "expected a training job's log",
            "\x00\x01\x02 binary junk \xff\n": "",
        },
        spoiled=Spoiled(
            # rank 0's watchdog line cut before "ran for": its work is kept, how long it ran is not
            _lines_replaced(
                "job-log",
                "basicsr-737-pg-guid-default-pg.txt",
                {3: fixture_text("job-log", "basicsr-737-pg-guid-default-pg.txt").splitlines()[3][:-45]},
            ),
            issues=(
                {"line_no": 4, "reason": "watchdog_timeout line cut: ran_for_ms unknown"},
                {
                    "line_no": 7,
                    "reason": "pg_status line cut: seq_num, last_enqueued, last_completed unknown",
                },
            ),
            rows={"job_log_event": 6},
            cells={("job_log_event", 2, "seq_num"): 808, ("job_log_event", 2, "ran_for_ms"): None},
        ),
    ),
    "flight-recorder": Contract(
        tool_errors={"cat: /tmp/nccl_trace_rank_3: No such file or directory\n": "No such file or directory"},
        garbage={
            "hello world\nthis is not a dump\n": "not a flight-recorder dump",
            '{"version": "2.5", "weights": [1, 2]}\n': "not a flight-recorder dump",
        },
        spoiled=Spoiled(
            # the tutorial's dump with its entry's sequence id spoiled: the entry is kept, its id unknown
            _replaced(
                "flight-recorder",
                "derived-tutorial-v2.5-json-form.txt",
                '"collective_seq_id":1,',
                '"collective_seq_id":"one",',
            ),
            issues=(
                {"line_no": 0, "reason": "no file name: the dump's rank is unknown"},
                {"line_no": 0, "reason": "entry 1: collective_seq_id not understood"},
            ),
            rows={"fr_dump": 1, "fr_entry": 1},
            cells={("fr_entry", 0, "collective_seq_id"): None, ("fr_entry", 0, "op"): "all_reduce"},
        ),
    ),
    "nccl-ras": Contract(
        tool_errors={"bash: ncclras: command not found\n": ""},
        garbage={"hello world\nthis is not a RAS report\n": "expected NCCL RAS output"},
        spoiled=Spoiled(
            # a rank line of the MISMATCH block mangled: the other rank and the counts still read
            _replaced(
                "nccl-ras",
                "nccl-1911-mismatch-allgather-counts.txt",
                "  Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124",
                "  Rank 12 -- GPU 4 managed by proc",
            ),
            issues=({"line_no": 28, "reason": "not a line of the NCCL RAS report"},),
            rows={"ras_report": 1, "ras_comm": 1, "ras_count": 2, "ras_peer": 1},
            cells={("ras_peer", 0, "rank"): 13},
        ),
    ),
}

KINDS = list(parsers.KINDS)


def _cases(attr: str) -> list[tuple[str, str, str]]:
    return [(kind, text, match) for kind in KINDS for text, match in getattr(CONTRACTS[kind], attr).items()]


def _id(case: tuple[str, str, str]) -> str:
    kind, text, _ = case
    return f"{kind}:{text.strip()[:24]!r}"


def test_every_kind_has_a_contract() -> None:
    assert set(CONTRACTS) == set(KINDS), "add the new kind to CONTRACTS"
    assert all(c.tool_errors and c.garbage for c in CONTRACTS.values())


@pytest.mark.parametrize("kind", KINDS)
def test_empty_is_no_data(kind: str) -> None:
    for text in EMPTY:
        with pytest.raises(NoData):
            parsers.parse(kind, text)


@pytest.mark.parametrize("kind", KINDS)
def test_command_not_found_is_a_collector_error(kind: str) -> None:
    with pytest.raises(CollectorError, match="command not found"):
        parsers.parse(kind, NOT_FOUND)


@pytest.mark.parametrize("case", _cases("tool_errors"), ids=_id)
def test_tool_error_is_a_collector_error(case: tuple[str, str, str]) -> None:
    kind, text, match = case
    with pytest.raises(CollectorError, match=re.escape(match) if match else None):
        parsers.parse(kind, text)


@pytest.mark.parametrize("case", _cases("garbage"), ids=_id)
def test_garbage_is_a_parse_error(case: tuple[str, str, str]) -> None:
    kind, text, match = case
    with pytest.raises(ParseError, match=re.escape(match) if match else None):
        parsers.parse(kind, text)


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_line_is_an_issue_and_the_rest_parses(kind: str) -> None:
    spoiled = CONTRACTS[kind].spoiled
    result = parsers.parse(kind, spoiled.text)
    assert len(result.issues) == len(spoiled.issues), result.issues
    pairs = zip(result.issues, spoiled.issues, strict=True)
    assert [{key: getattr(issue, key) for key in want} for issue, want in pairs] == list(spoiled.issues)
    for table, count in spoiled.rows.items():
        assert len(result.rows(table)) == count, table
    for (table, index, column), value in spoiled.cells.items():
        assert result.rows(table)[index][column] == value, (table, index, column)
    for table, column, value in spoiled.absent:
        assert all(row[column] != value for row in result.rows(table)), (table, column, value)
