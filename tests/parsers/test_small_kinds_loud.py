"""Loud and lossless: nvidia-smi-csv, uptime, shm, versions and placement never drop a data line in silence.

Every text here is "derived": a real fixture of tests/fixtures/<kind>/ (see its PROVENANCE.md) with one
word garbled (a letter glued to a number, a value swapped for a non-number) or two real fixtures joined.
The one exception is said where it is used (the shm collector sample, hand-written in the fixture set).
"""

from __future__ import annotations

import json

import pytest

from parsers import ParseError, nvidia_smi_csv, placement, shm, uptime, versions
from tests.conftest import fixture_text


def garble(text: str, line_no: int, old: str, new: str) -> str:
    """The text with ``old`` replaced by ``new`` on line ``line_no`` (1-based) only."""
    lines = text.splitlines()
    assert old in lines[line_no - 1], (old, lines[line_no - 1])
    lines[line_no - 1] = lines[line_no - 1].replace(old, new, 1)
    return "\n".join(lines) + "\n"


def issue_lines(result) -> list[int]:  # noqa: ANN001
    return [i.line_no for i in result.issues]


# --- nvidia-smi-csv ---------------------------------------------------------------------------------------

H100 = fixture_text("nvidia-smi-csv", "hpc-h100-595-11cols.txt")
V100 = fixture_text("nvidia-smi-csv", "slurm-v100-timestamp-l5.txt")


def test_nvidia_smi_csv_index_with_a_letter_is_reported_and_kept() -> None:
    """derived: H100 row 2, index ``0`` -> ``0q``: not 0, not a silent null."""
    result = nvidia_smi_csv.parse(garble(H100, 2, "0,", "0q,"))
    assert [(i.line_no, i.reason) for i in result.issues] == [(2, "index: unreadable value '0q'")]
    row = result.rows("gpu_query")[0]
    assert row["index"] is None and json.loads(row["extra"]) == {"index": "0q"}
    assert row["name"] == "NVIDIA H100 80GB HBM3" and row["memory_total_mib"] == 81559  # the rest still read


def test_nvidia_smi_csv_word_glued_to_a_number_is_not_a_unit() -> None:
    """derived: V100 line 3, ``90 %`` -> ``90q`` and ``1486 MiB`` -> ``1486 MiBq``; the real units still read."""
    result = nvidia_smi_csv.parse(garble(garble(V100, 3, "90 %", "90q"), 3, "1486 MiB", "1486 MiBq"))
    assert issue_lines(result) == [3, 3]
    assert {i.reason.split(":")[0] for i in result.issues} == {"utilization.memory", "memory.free"}
    rows = result.rows("gpu_query")
    assert rows[1]["util_memory_pct"] is None and rows[1]["memory_free_mib"] is None
    assert json.loads(rows[1]["extra"]) == {"utilization_memory_pct": "90q", "memory_free_mib": "1486 MiBq"}
    assert (rows[0]["util_gpu_pct"], rows[0]["util_memory_pct"], rows[0]["memory_free_mib"]) == (
        99.0,
        52.0,
        1486,
    )


def test_nvidia_smi_csv_not_available_markers_stay_quiet() -> None:
    """derived: H100 row 2, pstate and memory.used as ``[N/A]`` / ``[Not Supported]``: null, no issue."""
    raw = garble(garble(H100, 2, "P0", "[N/A]"), 2, ", 0 MiB", ", [Not Supported]")
    result = nvidia_smi_csv.parse(raw)
    assert result.issues == []
    row = result.rows("gpu_query")[0]
    assert row["pstate"] is None and row["memory_used_mib"] is None and row["memory_free_mib"] == 81081


def test_nvidia_smi_csv_unknown_field_keeps_an_odd_value_as_printed() -> None:
    """derived: V100 with its timestamp column renamed to a field the parser does not map (clocks.mem)."""
    raw = V100.replace("index, timestamp,", "index, clocks.mem [MHz],", 1)
    raw = garble(raw, 2, "2020/11/12 13:48:11.412", "877 MHzq")
    raw = garble(raw, 3, "2020/11/12 13:48:16.415", "877 MHz")
    rows = nvidia_smi_csv.parse(raw).rows("gpu_query")
    assert json.loads(rows[0]["extra"]) == {"clocks_mem_mhz": "877 MHzq"}
    assert json.loads(rows[1]["extra"]) == {"clocks_mem_mhz": 877}


# --- uptime -----------------------------------------------------------------------------------------------

JC_CENTOS = fixture_text("uptime", "jc-centos-7.7-uptime-up-16h-no-days.txt")
JC_OSX = fixture_text("uptime", "jc-osx-10.14.6-uptime-load-averages-no-commas.txt")


def test_uptime_time_of_day_that_is_not_a_clock_is_kept_and_reported() -> None:
    """derived: jc centos 7.7 ``10:25:20 up 16:03`` -> ``10q:25:20``; the rest of the line still reads."""
    result = uptime.parse(garble(JC_CENTOS, 1, "10:25:20", "10q:25:20"))
    assert issue_lines(result) == [1] and "10q:25:20" in result.issues[0].reason
    (row,) = result.rows("host_uptime")
    assert row["time_of_day"] == "10q:25:20" and row["uptime_s"] == 16 * 3600 + 3 * 60
    assert (row["users"], row["load15"]) == (2, 0.05)


def test_uptime_macos_clock_garbled_is_reported() -> None:
    """derived: jc macOS ``10:15  up 20 days`` -> ``10:15q  up``."""
    result = uptime.parse(garble(JC_OSX, 1, "10:15", "10:15q"))
    assert issue_lines(result) == [1]
    assert result.rows("host_uptime")[0]["time_of_day"] == "10:15q"


def test_uptime_clock_after_a_pdsh_tag_reads_and_tags_the_host() -> None:
    """derived: jc centos 7.7 line behind a pdsh ``host:`` tag (a one-line file clean_lines leaves alone)."""
    result = uptime.parse("ip-10-1-71-197: " + JC_CENTOS)
    assert result.issues == []
    (row,) = result.rows("host_uptime")
    assert (row["time_of_day"], row["host"], row["uptime_s"]) == ("10:25:20", "ip-10-1-71-197", 57780.0)


def test_uptime_garbled_up_span_is_reported() -> None:
    """derived: jc centos 7.7 ``up 16:03`` -> ``up 16q:03``: the line cannot be read, so it is an issue."""
    raw = garble(JC_CENTOS, 1, "16:03", "16q:03")
    with pytest.raises(ParseError):  # its only line: zero rows is an error, never an empty result
        uptime.parse(raw)
    result = uptime.parse(JC_CENTOS + raw)
    assert issue_lines(result) == [2] and len(result.rows("host_uptime")) == 1


# --- shm --------------------------------------------------------------------------------------------------

POSTGRES_DF = fixture_text("shm", "postgres-416-docker-df-hT-busybox-64.0M-prompt.txt")
LLMD_LS = fixture_text("shm", "llm-d-352-ls-la-dev-shm-stale-nccl-zero-size-excerpt.txt")
COLLECTOR = fixture_text("shm", "handwritten-collector-p5-stale-nccl.txt")  # hand-written in the fixture set


def joined() -> str:
    """derived: the real busybox ``df -hT`` of /dev/shm and the real llm-d listing, joined by the marker."""
    return POSTGRES_DF + "--- ls -la /dev/shm\n" + LLMD_LS


def test_shm_joined_real_outputs_read() -> None:
    result = shm.parse(joined())
    assert result.issues == []
    (row,) = result.rows("shm")
    assert (row["line"], row["device"], row["size_bytes"], row["listing_line"]) == (3, "shm", 67108864, 5)
    assert row["nccl_files"] == row["entries"] and row["entries"] > 10


def test_shm_df_row_that_df_cannot_read_is_reported() -> None:
    """derived: the busybox df row's size ``64.0M`` -> ``64.0Mq``; the listing still counts."""
    raw = garble(joined(), 3, "64.0M ", "64.0Mq ")
    result = shm.parse(raw)
    assert issue_lines(result) == [3] and "df part not read" in result.issues[0].reason
    (row,) = result.rows("shm")
    assert row["size_bytes"] is None and row["listing_line"] == 5 and row["nccl_files"] > 10


def test_shm_df_only_unreadable_is_an_error() -> None:
    """derived: the busybox df alone with its Use% garbled: nothing read, so a ParseError, never empty."""
    with pytest.raises(ParseError):
        shm.parse(garble(POSTGRES_DF, 3, "0%", "0q%"))


def test_shm_total_line_that_is_not_a_number_is_reported() -> None:
    """derived from the hand-written collector sample: ``total 18824`` -> ``total 18824q``."""
    result = shm.parse(garble(COLLECTOR, 4, "total 18824", "total 18824q"))
    assert issue_lines(result) == [4] and result.issues[0].reason == "not an ls -la line"
    assert result.rows("shm")[0]["listing_line"] == 5  # the first entry then
    assert shm.parse(garble(COLLECTOR, 4, "total 18824", "total 19M")).issues == []  # ls -lah's total


# --- versions ---------------------------------------------------------------------------------------------

EFA_170 = fixture_text("versions", "efa-installed-packages-1.7.0-p3dn.txt")
EFA_1220 = fixture_text("versions", "pcluster-cookbook-1882-efa-installed-packages-1.22.0-el8-prompt.txt")


def packages(result) -> dict[str, dict]:  # noqa: ANN001
    return {json.loads(r["extra"])["printed"]: r for r in result.rows("software_version") if r["extra"]}


def test_versions_rpm_keeps_arch_and_the_word_as_printed() -> None:
    """real: every NVR of efa_installed_packages 1.7.0 keeps its arch and the word as printed."""
    got = packages(versions.parse(EFA_170))
    assert len(got) == 14
    ibacm = got["ibacm-25.0-1.amzn2.x86_64"]
    assert (ibacm["component"], ibacm["version"], ibacm["detail"]) == ("ibacm", "25.0", "ibacm-25.0-1.amzn2")
    assert json.loads(ibacm["extra"]) == {"arch": "x86_64", "printed": "ibacm-25.0-1.amzn2.x86_64"}


def test_versions_odd_version_is_kept_as_printed() -> None:
    """derived: 1.22.0 el8 ``efa-config-1.13-1.el8.noarch`` -> ``efa-config-1.13q-1.el8.noarch``."""
    result = versions.parse(garble(EFA_1220, 5, "efa-config-1.13-", "efa-config-1.13q-"))
    assert result.issues == []
    row = packages(result)["efa-config-1.13q-1.el8.noarch"]
    assert (row["line"], row["component"], row["version"]) == (5, "efa_config", "1.13q")


def test_versions_word_among_packages_that_is_not_one_is_reported() -> None:
    """derived: 1.7.0 line 4 with ``ibacm-25.0-1.amzn2.x86_64`` cut to ``ibacm-25.0``: the others are kept."""
    result = versions.parse(garble(EFA_170, 4, "ibacm-25.0-1.amzn2.x86_64", "ibacm-25.0"))
    assert [(i.line_no, i.reason) for i in result.issues] == [(4, "not a package name-version: ibacm-25.0")]
    got = packages(result)
    assert len(got) == 13 and "rdma-core-25.0-1.amzn2.x86_64" in got


# --- placement --------------------------------------------------------------------------------------------

BLOCK_SHOW = fixture_text("placement", "crusoe-slurm-readme-scontrol-show-topology-block-prompt.txt")
TREE_SHOW = fixture_text("placement", "gotest-scontrol-show-topology-tree-level-linkspeed-upper-nodes.txt")


def test_placement_block_index_not_a_number_is_kept_in_extra_and_reported() -> None:
    """derived: crusoe block 01 ``BlockIndex=0`` -> ``BlockIndex=0q``."""
    result = placement.parse(garble(BLOCK_SHOW, 2, "BlockIndex=0", "BlockIndex=0q"))
    assert issue_lines(result) == [2] and "BlockIndex=0q" in result.issues[0].reason
    rows = [r for r in result.rows("topology_member") if r["switch"] == "block01"]
    assert len(rows) == 18 and {r["block_index"] for r in rows} == {None}
    assert {r["block_size"] for r in rows} == {18} and json.loads(rows[0]["extra"]) == {"BlockIndex": "0q"}
    other = next(r for r in result.rows("topology_member") if r["switch"] == "block02")
    assert (other["block_index"], other["extra"]) == (1, None)


def test_placement_level_not_a_number_is_kept_in_extra_and_reported() -> None:
    """derived: gotest tree, root switch ``Level=2`` -> ``Level=2q``; LinkSpeed stays in extra."""
    result = placement.parse(garble(TREE_SHOW, 6, "Level=2", "Level=2q"))
    assert issue_lines(result) == [6]
    root = [r for r in result.rows("topology_member") if r["switch"] == "root"]
    assert {r["level"] for r in root} == {None}
    assert json.loads(root[0]["extra"]) == {"Level": "2q", "LinkSpeed": "1"}
    leaf = next(r for r in result.rows("topology_member") if r["switch"] == "unknown")
    assert (leaf["level"], json.loads(leaf["extra"])) == (0, {"LinkSpeed": "1"})
