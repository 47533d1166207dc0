"""NCCL log lines keep their host when text comes before ``host:pid:tid [dev]``: NCCL 2.26+'s wall-clock
stamp on WARN lines, a rank or job tag, launcher tags stacked on the stamp, a log pipeline's prefix.

Fixtures: tests/fixtures/nccl-tests/ (PROVENANCE.md, "Text before the host of NCCL log lines"): the
``nccl-302-*`` and ``aws-ofi-nccl-889-*`` files are real, the ``derived-*`` files are real lines behind
hand-written prefixes in the tools' wording, and say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsers import nccl_tests
from parsers._base import ParseResult
from tests.conftest import fixture_text
from tests.rules.helpers import analyze, write_node

WARN = "NET/OFI Only EFA provider is supported"


def parsed(name: str) -> ParseResult:
    return nccl_tests.parse(fixture_text("nccl-tests", name))


def events(result: ParseResult) -> list[tuple[int, str | None, str, str | None]]:
    return [(e["line"], e["host"], e["code"], e["prefix"]) for e in result.rows("nccl_log_event")]


def test_wallclock_stamp_before_the_host_keeps_it() -> None:
    r = parsed("derived-nccl-398-warn-wallclock-stamp.txt")
    assert events(r) == [
        (1, "ip-172-31-0-112", "EFA_INIT_FAIL", "[2026-01-05 08:14:03]"),
        (2, "ip-172-31-0-112", "EFA_INIT_FAIL", "[2026-01-05 08:14:03.512]"),
        (3, "ip-172-31-13-129", "EFA_INIT_FAIL", "[2026-01-05 08:14:03.512094 UTC]"),
    ]
    assert all(e["message"] == WARN and e["level"] == "WARN" for e in r.rows("nccl_log_event"))
    assert r.issues == []


@pytest.mark.parametrize(
    ("name", "tags"),
    [
        ("derived-nccl-398-warn-mpirun-tag-and-stamp.txt", ("[1,7]<stdout>:", "[1,13]<stdout>:")),
        ("derived-nccl-398-warn-srun-label-and-stamp.txt", ("7: ", "13: ")),
        ("derived-nccl-398-warn-pdsh-tag-and-stamp.txt", ("ip-172-31-0-112: ", "ip-172-31-13-129: ")),
    ],
)
def test_launcher_tag_stacked_on_the_stamp_keeps_the_host(name: str, tags: tuple[str, str]) -> None:
    r = parsed(name)
    stamp = "[2026-01-05 08:14:03]"
    assert events(r) == [
        (1, "ip-172-31-0-112", "EFA_INIT_FAIL", tags[0] + stamp),
        (2, "ip-172-31-13-129", "EFA_INIT_FAIL", tags[1] + stamp),
    ]
    assert r.issues == []


def test_container_log_prefix_keeps_the_host() -> None:
    r = parsed("derived-nccl-398-warn-k8s-container-log-and-stamp.txt")
    assert events(r) == [
        (
            1,
            "trainer-worker-0",
            "EFA_INIT_FAIL",
            "2026-01-05T08:14:03.512094331Z stderr F [2026-01-05 08:14:03]",
        ),
        (
            2,
            "trainer-worker-0",
            "EFA_INIT_FAIL",
            "2026-01-05T08:14:03.871220014Z stderr F [2026-01-05 08:14:03]",
        ),
    ]


def test_rank_tag_before_the_host_real() -> None:
    r = parsed("nccl-302-rank-tag-before-host-ring-ib.txt")
    rows = r.rows("nccl_transport")
    assert [(t["line"], t["host"], t["src_rank"], t["dst_rank"], t["transport"]) for t in rows] == [
        (1, "crow-ib-new-nccl-256-info-19", 155, 157, "P2P/IPC"),
        (2, "crow-ib-new-nccl-256-info-19", 155, 153, "P2P/IPC"),
        (3, "crow-ib-new-nccl-256-info-19", 155, 154, "P2P/IPC"),
    ]
    assert {t["prefix"] for t in rows} == {"[155]"} and r.issues == []


def test_cloudwatch_console_stamps_real_say_nothing_wrong() -> None:
    r = parsed("aws-ofi-nccl-889-cloudwatch-console-offset-glued-stamp.txt")
    assert r.rows("nccl_run")[0]["nccl_version"] == "2.21.5"
    assert r.issues == []  # a stamp glued to the host is not read as "host:pid:tid" with odd numbers


def test_cloudwatch_console_warn_keeps_the_host_also_when_the_stamp_is_glued() -> None:
    r = parsed("derived-aws-ofi-nccl-889-cloudwatch-warn.txt")
    assert [(no, host, code) for no, host, code, _ in events(r)] == [
        (1, "ip-10-36-29-253", "WARN"),
        (2, "ip-10-36-29-253", "WARN"),
    ]
    assert [e[3] for e in events(r)] == [
        "| 2025-05-16T16:39:51.208-07:00 |",
        "| 2025-05-16T16:39:51.208-07:00",
    ]
    assert r.issues == []


def test_a_mangled_pid_behind_a_stamp_is_still_loud() -> None:
    text = fixture_text("nccl-tests", "derived-nccl-398-warn-wallclock-stamp.txt").replace(
        ":8166:", ":81q66:", 1
    )
    r = nccl_tests.parse(text)
    assert events(r)[0][:2] == (1, "ip-172-31-0-112")
    assert [(i.line_no, "non-numeric pid" in i.reason) for i in r.issues] == [(1, True)]


def test_log_errors_names_the_host_not_an_unnamed_one(tmp_path: Path) -> None:
    """An NCCL log in a cluster bundle's extra/ belongs to no node: the finding names the node whose
    host name the line prints (before the fix: "on an unnamed host")."""
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    for node, host in (("node-07", "ip-172-31-0-112"), ("node-13", "ip-172-31-13-129")):
        write_node(cluster, node, {}, meta={"hostname": host, "instance_type": "p4d.24xlarge"})
    (cluster / "extra").mkdir()
    (cluster / "extra" / "nccl.log").write_text(
        fixture_text("nccl-tests", "derived-nccl-398-warn-wallclock-stamp.txt")
    )
    found = analyze(cluster).of("nccl.log.errors")
    assert sorted((f.node, f.params["count"]) for f in found) == [("node-07", 2), ("node-13", 1)]
    assert all("unnamed host" not in f.message for f in found)
    assert {f.evidence[0].line for f in found} == {1, 3}
