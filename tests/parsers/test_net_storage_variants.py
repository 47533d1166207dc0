"""efa-ports, fi-info, lfs-df and cloudwatch variants: non-EFA RDMA devices, ibv_devinfo -v, grep'd sysfs,
fi_getinfo -61 as an answer, old 'filesystem summary:', hex OST indices, get-metric-data CLI v2, lists and
concatenations of responses, Python reprs, and the travel noise (launcher prefixes, prompts, CRLF, annotations).

Real fixtures: tests/fixtures/<kind>/ (see each PROVENANCE.md).  Texts built here from a real fixture (a prefix
added, CRLF, two documents joined) are labelled "derived"; texts written here from scratch are "synthetic".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import parsers
from parsers import CollectorError, ParseError, cloudwatch, efa_ports, fi_info, lfs_df
from tests.conftest import fixture_text
from tests.derive import crlf, srun

RXE = "softroce-rxe-dev-46-ibv_devinfo-rxe0.txt"
MLX4 = "heioy-ibv_devinfo-mlx4-2hca-port-down.txt"
MLX4_V = "heioy-ibv_devinfo-v-mlx4-port2-polling.txt"
IBSTAT = "amzn-drivers-114-dmesg-ibstat-efa0-indent-lost.txt"
PYTOKIO = "pytokio-lfs-df-1k-hex-ost-2fs-old-summary.txt"
CW_IOPS = "awscli-example-get-metric-data-v2-math-iops.txt"
CW_BILLING = "awscli-example-get-metric-data-v2-billing.txt"


def ports(text: str) -> list[dict[str, Any]]:
    result = efa_ports.parse(text)
    assert result.issues == []
    return result.rows("efa_port")


# --- efa-ports: RDMA devices that are not EFA ----------------------------------------------------------


def test_soft_roce_rxe0_is_rdma_but_not_efa() -> None:
    [row] = ports(fixture_text("efa-ports", RXE))  # real: SoftRoCE/rxe-dev#46, the prompt line kept
    assert (row["device"], row["port"], row["state"], row["source"]) == ("rxe0", 1, "ACTIVE", "ibv_devinfo")
    assert (row["provider"], row["is_efa"], row["fw_ver"], row["line"]) == ("rxe", False, "0.0.0", 11)
    extra = json.loads(row["extra"])
    assert extra["state"] == "PORT_ACTIVE (4)" and extra["active_mtu"] == "1024 (3)"
    assert extra["vendor_id"] == "0x0000" and extra["transport"] == "InfiniBand (0)"


def test_mlx4_two_hcas_with_down_ports() -> None:
    rows = ports(fixture_text("efa-ports", MLX4))  # real: '#ibv_devinfo' echo, TAB-indented
    assert [(r["device"], r["port"], r["state"], r["line"]) for r in rows] == [
        ("mlx4_1", 1, "ACTIVE", 13), ("mlx4_1", 2, "DOWN", 22), ("mlx4_0", 1, "ACTIVE", 42), ("mlx4_0", 2, "DOWN", 51),
    ]  # fmt: skip
    assert {(r["provider"], r["is_efa"], r["fw_ver"], r["link_layer"]) for r in rows} == {
        ("mlx4", False, "2.42.5000", "InfiniBand")
    }
    assert (
        json.loads(rows[1]["extra"])["port_lid"] == "0" and json.loads(rows[0]["extra"])["port_lid"] == "22"
    )
    assert json.loads(rows[3]["extra"])["node_guid"] == "e41d:2d03:00e0:c740"


def test_ibv_devinfo_verbose_keeps_every_device_and_port_key() -> None:
    [row] = ports(fixture_text("efa-ports", MLX4_V))  # real: ibv_devinfo -d mlx4_1 -i 2 -v
    assert (row["state"], row["phys_state"], row["rate_gbps"], row["line"]) == ("DOWN", "POLLING", 10.0, 104)
    extra = json.loads(row["extra"])
    assert extra["max_qp"] == "393144" and extra["atomic_cap"] == "ATOMIC_HCA (1)"
    assert extra["device_cap_flags"].startswith("0x057e9c76 | BAD_PKEY_CNTR | BAD_QKEY_CNTR")
    assert extra["device_cap_flags"].endswith("| XRC") and extra["Unknown flags"] == "0x056e8000"
    assert extra["log max atomic inline"] == "3" and extra["ooo_rc_caps"] == "0x0"
    assert extra["active_width"] == "4X (2)" and extra["active_speed"] == "2.5 Gbps (1)"
    assert extra["GID[  0]"] == "fe80:0000:0000:0000:7cfe:9003:00a5:95c2"
    assert extra["qp_rate_limit_max"] == "0kbps" and extra["max_vl_num"] == "8 (4)"


@pytest.mark.parametrize("name", [RXE, MLX4, MLX4_V])
def test_non_efa_captures_detected_as_efa_ports(name: str) -> None:
    assert parsers.detect_kind(fixture_text("efa-ports", name)) == "efa-ports"


def test_grep_dot_sysfs_lines_and_command_echo() -> None:
    # synthetic: what `grep . /sys/class/infiniband/*/ports/*/{state,link_layer}` prints (no space after ':')
    text = (
        "$ grep . /sys/class/infiniband/*/ports/*/{state,link_layer}\n"
        "/sys/class/infiniband/rdmap79s0/ports/1/state:4: ACTIVE\n"
        "/sys/class/infiniband/rdmap79s0/ports/1/link_layer:Unknown\n"
        "/sys/class/infiniband/mlx5_0/ports/1/state:1: DOWN\n"
        "/sys/class/infiniband/mlx5_0/ports/1/link_layer:Ethernet\n"
        "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/0:IB/RoCE v1\n"
    )
    efa, mlx = ports(text)
    assert (efa["device"], efa["state"], efa["link_layer"], efa["is_efa"], efa["provider"]) == (
        "rdmap79s0", "ACTIVE", "Unknown", True, "efa",
    )  # fmt: skip
    assert (mlx["device"], mlx["state"], mlx["link_layer"], mlx["is_efa"], mlx["provider"]) == (
        "mlx5_0", "DOWN", "Ethernet", False, "mlx5",
    )  # fmt: skip
    assert json.loads(mlx["extra"]) == {
        "state": "1: DOWN",
        "link_layer": "Ethernet",
        "gid_attrs/types/0": "IB/RoCE v1",
    }


def test_ibstat_through_mpirun_prefix_and_crlf_same_values() -> None:
    plain = ports(fixture_text("efa-ports", IBSTAT))
    text = "".join(
        f"[1,0]<stdout>:{line}\n" for line in fixture_text("efa-ports", IBSTAT).splitlines()
    )  # derived
    for variant in (text, crlf(fixture_text("efa-ports", IBSTAT))):
        got = ports(variant)
        assert [(r["device"], r["state"], r["rate_gbps"], r["line"], r["extra"]) for r in got] == [
            (r["device"], r["state"], r["rate_gbps"], r["line"], r["extra"]) for r in plain
        ]


def test_srun_prefixed_ibv_devinfo_keeps_rank_as_host() -> None:
    rows = ports(srun(fixture_text("efa-ports", MLX4)))  # derived
    assert [(r["device"], r["port"], r["state"], r["host"]) for r in rows][:2] == [
        ("mlx4_1", 1, "ACTIVE", "0"), ("mlx4_1", 2, "DOWN", "0"),
    ]  # fmt: skip


def test_data_looking_line_is_an_issue_and_garbage_says_what_was_expected() -> None:
    text = fixture_text("efa-ports", RXE) + "            port_lid 7 ??\n"  # derived: a mangled line appended
    result = efa_ports.parse(text)
    assert [(i.line_no, i.reason) for i in result.issues] == [(18, "not a sysfs, ibstat or ibv_devinfo line")]
    with pytest.raises(ParseError, match=r"expected sysfs port lines .* first line seen: 'hello'"):
        efa_ports.parse("hello\nworld\n")


# --- fi-info ---------------------------------------------------------------------------------------------


def test_fi_getinfo_61_is_a_parsed_answer_with_no_provider() -> None:
    # synthetic (no real capture of this line was found): what `fi_info -p efa` prints with no EFA device
    result = fi_info.parse("$ fi_info -p efa\nfi_getinfo: -61 (No data available)\n")
    assert result.rows("fi_provider") == [] and result.issues == []
    assert result.rows("fi_info_status") == [
        {"line": 2, "status": "no_provider", "entries": 0, "efa_listed": False, "requested_provider": "efa",
         "message": "fi_getinfo: -61 (No data available)"},
    ]  # fmt: skip
    [status] = fi_info.parse("0: fi_getinfo: -61\n1: fi_getinfo: -61\n").rows(
        "fi_info_status"
    )  # srun-prefixed
    assert (status["status"], status["line"], status["message"]) == ("no_provider", 1, "fi_getinfo: -61")


def test_other_fi_getinfo_errors_stay_tool_errors() -> None:
    with pytest.raises(CollectorError, match="-22"):
        fi_info.parse("fi_getinfo: -22 (Invalid argument)\n")


def test_providers_listed_status_and_kubectl_prefix() -> None:
    text = fixture_text("fi-info", "eks-pod-kr-201.0-efa-direct.txt")
    plain = fi_info.parse(text)
    [status] = plain.rows("fi_info_status")
    assert (status["status"], status["entries"], status["efa_listed"]) == (
        "providers",
        len(plain.rows("fi_provider")),
        True,
    )
    prefixed = "".join(f"[pod/trainer-0/main] {line}\n" for line in text.splitlines())  # derived
    got = fi_info.parse(prefixed)
    assert got.issues == []
    assert [(r["fabric"], r["domain"], r["type"], r["line"]) for r in got.rows("fi_provider")] == [
        (r["fabric"], r["domain"], r["type"], r["line"]) for r in plain.rows("fi_provider")
    ]
    assert {r["host"] for r in got.rows("fi_provider")} == {"pod/trainer-0/main"}
    assert parsers.detect_kind(prefixed) == "fi-info"


def test_unseen_provider_keys_kept_in_extra() -> None:
    # derived: a key the plain layout may add (libfabric prints 'caps' with -c) inserted into a real entry
    text = fixture_text("fi-info", "hpc6a-121.0-rdm-dgram.txt").replace(
        "    protocol: FI_PROTO_EFA\n", "    protocol: FI_PROTO_EFA\n    nic: efa-gen2\n", 1
    )
    first, second = fi_info.parse(text).rows("fi_provider")
    assert json.loads(first["extra"]) == {"nic": "efa-gen2"} and second["extra"] is None
    assert (first["protocol"], second["type"]) == ("FI_PROTO_EFA", "FI_EP_DGRAM")


def test_fi_info_garbage_message_says_what_was_expected() -> None:
    with pytest.raises(
        ParseError, match=r"expected fi_info provider entries .* first line seen: 'some text'"
    ):
        fi_info.parse("some text\nwithout any provider\n")


# --- lfs-df ----------------------------------------------------------------------------------------------


def test_old_filesystem_summary_hex_osts_two_filesystems() -> None:
    result = lfs_df.parse(fixture_text("lfs-df", PYTOKIO))  # real: NERSC pytokio test input (excerpt)
    assert result.issues == []
    rows = result.rows("lustre_target")
    assert len(rows) == 64
    summaries = [r for r in rows if r["target_type"] == "summary"]
    assert [(r["fsname"], r["mountpoint"], r["size_bytes"], r["line"]) for r in summaries] == [
        ("snx11035", "/scratch2", 2178423632448 * 1024, 28), ("snx11036", "/scratch3", 3267635448672 * 1024, 69),
    ]  # fmt: skip
    ost_a = next(r for r in rows if r["uuid"] == "snx11035-OST000a_UUID")
    assert (ost_a["target_index"], ost_a["used_bytes"], ost_a["use_pct"]) == (10, 68046786932 * 1024, 76.0)
    assert (ost_a["size_printed"], ost_a["use_printed"], ost_a["size_header"]) == (
        "90767651352",
        "76%",
        "1K-blocks",
    )
    assert (
        max(r["target_index"] for r in rows if r["fsname"] == "snx11036" and r["target_type"] == "OST") == 35
    )


def test_no_summary_grepped_excerpt_with_prompt_annotation_and_prefix() -> None:
    lines = [ln for ln in fixture_text("lfs-df", PYTOKIO).splitlines() if "OST000" in ln][:3]
    text = (
        "$ lfs df | grep OST000\n" + lines[0] + "\n" + lines[1] + "   <----- hot\n" + lines[2] + "\n"
    )  # derived
    for variant in (text, srun(text), crlf(text)):
        assert parsers.detect_kind(variant) == "lfs-df"
        result = lfs_df.parse(variant)
        assert result.issues == []
        rows = result.rows("lustre_target")
        assert [(r["uuid"], r["target_index"], r["size_bytes"]) for r in rows] == [
            ("snx11035-OST0000_UUID", 0, 90767651352 * 1024),
            ("snx11035-OST0001_UUID", 1, 90767651352 * 1024),
            ("snx11035-OST0002_UUID", 2, 90767651352 * 1024),
        ]  # fmt: skip  -- the prompt says plain 'lfs df': 1K-blocks
        assert rows[1]["used_printed"] == "64867282280" and rows[1]["use_pct"] == 72.0
    # without the prompt nothing says whether plain numbers are 1K-blocks or inodes: kept as printed, said once
    result = lfs_df.parse("\n".join(lines) + "\n")
    assert [(i.line_no, i.reason[:30]) for i in result.issues] == [(1, "no lfs df header or command: u")]
    assert [(r["size_bytes"], r["size_printed"], r["use_pct"]) for r in result.rows("lustre_target")][0] == (
        None, "90767651352", 73.0,
    )  # fmt: skip


def test_dash_h_capital_reads_powers_of_1000_from_the_prompt() -> None:
    body = fixture_text("lfs-df", "fsx-workshop-mnt-fsx-3ost.txt")
    si = {r["uuid"]: r for r in lfs_df.parse("$ lfs df -H\n" + body).rows("lustre_target")}  # derived
    binary = {r["uuid"]: r for r in lfs_df.parse(body).rows("lustre_target")}
    assert (
        si["fsx-OST0000_UUID"]["size_bytes"] == 1_100_000_000_000
        and si["fsx-OST0000_UUID"]["human_base"] == 1000
    )
    assert binary["fsx-OST0000_UUID"]["size_bytes"] == int(1.1 * 1024**4)
    assert binary["fsx-OST0000_UUID"]["human_base"] == 1024
    assert si["fsx-OST0000_UUID"]["size_printed"] == binary["fsx-OST0000_UUID"]["size_printed"] == "1.1T"


def test_lfs_df_garbage_and_header_only() -> None:
    with pytest.raises(ParseError, match="first line seen: 'hello'"):
        lfs_df.parse("hello\n")
    with pytest.raises(ParseError, match="header without any MDT/OST"):
        lfs_df.parse("UUID                   1K-blocks        Used   Available Use% Mounted on\n")


# --- cloudwatch -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "ts", "query_id", "label"),
    [
        (CW_IOPS, 96.85, "2024-09-29T22:10:00", "m3", "Avg Total IOPS"),
        (CW_BILLING, 542.38, "2024-09-26T12:00:00", "m1", "EstimatedCharges"),
    ],
)
def test_get_metric_data_cli_v2_examples(name: str, value: float, ts: str, query_id: str, label: str) -> None:
    text = fixture_text(
        "cloudwatch", name
    )  # real: aws-cli get-metric-data examples (4-space rst indent kept)
    assert parsers.detect_kind(text) == "cloudwatch"
    result = cloudwatch.parse(text)
    assert result.issues == []
    [row] = result.rows("cw_metric")
    assert (row["value"], row["ts"], row["query_id"], row["label"], row["status_code"], row["line"]) == (
        value, ts, query_id, label, "Complete", 7,
    )  # fmt: skip


def test_list_of_responses_and_concatenated_documents() -> None:
    one, two = (json.loads(fixture_text("cloudwatch", n)) for n in (CW_IOPS, CW_BILLING))
    as_list = json.dumps([one, two], indent=4)  # derived
    joined = fixture_text("cloudwatch", CW_IOPS) + fixture_text("cloudwatch", CW_BILLING)  # derived
    for text in (as_list, joined, srun(joined), crlf(joined)):
        rows = cloudwatch.parse(text).rows("cw_metric")
        assert sorted((r["query_id"], r["value"]) for r in rows) == [("m1", 542.38), ("m3", 96.85)]


def test_epoch_timestamps_partial_status_and_messages_kept() -> None:
    # synthetic: the API's epoch-seconds form, a PartialData result and a Messages entry
    doc = {
        "MetricDataResults": [
            {"Id": "r", "Label": "DataReadBytes", "Timestamps": [1714557660, 1714557600], "Values": [2.0, 1.0],
             "StatusCode": "PartialData", "NewKey": "kept"},
        ],
        "Messages": [{"Code": "MaxMetricsExceeded", "Value": "too many"}],
    }  # fmt: skip
    rows = cloudwatch.parse(json.dumps(doc)).rows("cw_metric")
    assert [(r["ts"], r["value"], r["status_code"]) for r in rows] == [
        ("2024-05-01T10:00:00", 1.0, "PartialData"), ("2024-05-01T10:01:00", 2.0, "PartialData"),
    ]  # fmt: skip
    assert json.loads(rows[0]["extra"]) == {"NewKey": "kept", "Messages": doc["Messages"]}


def test_python_repr_of_boto3_is_read_as_json() -> None:
    # synthetic: print(boto3_client.get_metric_statistics(...))
    text = (
        "{'Label': 'DataReadBytes', 'Datapoints': [{'Timestamp': datetime.datetime(2024, 5, 1, 10, 0,"
        " tzinfo=tzutc()), 'Sum': 1.0, 'Unit': 'Bytes'}], 'ResponseMetadata': {'RetryAttempts': 0, 'X': None}}\n"
    )
    assert parsers.detect_kind(text) == "cloudwatch"
    (row,) = cloudwatch.parse(text).rows("cw_metric")
    assert (row["ts"], row["value"], row["statistic"], row["unit"], row["label"]) == (
        "2024-05-01T10:00:00",
        1.0,
        "Sum",
        "Bytes",
        "DataReadBytes",
    )
    assert json.loads(row["extra"]) == {"ResponseMetadata": {"RetryAttempts": 0, "X": None}}
