"""The cluster timeline (analyzer.judge.signals.timeline.build, analyzer.model.timeline, reports/timeline.py):
every node's dated events placed at the right UTC instant by its own clock, the times that cannot be
placed listed with why, the first event of the incident marked, and the reports saying it.

Inputs: the sample cluster xid-ecc-3node (``TZ=UTC dmesg -T`` on h100-node-04; raw dmesg seconds without an
uptime on p5-node-01; syslog lines without a stamp on p5-node-02; ``--reltime`` on p5-node-03), with real
fixtures added as nodes and job logs: the NVSentinel #155 fallen-off-the-bus dmesg (seconds since boot) with
jc's real ``/proc/uptime`` (46901.13 s), gpud #870's ``dmesg --time-format iso`` (its offset printed), the
Linux-surface #1494 NFS lines, and the containerd copy of BasicSR #737's watchdog log (RFC 3339 ``Z``
stamps).  Where a test places a node's collection so its events fall just before the hang, its meta.env's
collected_at is the one value chosen; the outputs are as the fixtures hold them.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.intake.load import load
from analyzer.intake.safe_read import Limits
from analyzer.judge.engine import Context
from analyzer.judge.signals import timeline as tl
from analyzer.model import timeline as view
from analyzer.store.tables import connect
from tests.conftest import SAMPLES, fixture_text
from tests.rules.helpers import write_node

HANG = "derived-basicsr-737-containerd-cri.txt"
#: rank 2's watchdog line (06:24:44.173 Z) minus its 600061 ms: the earliest start of the timed-out ALLREDUCE
HANG_BEGAN = datetime(2025, 6, 26, 6, 14, 44, 112078)


def cluster(tmp_path: Path, *, job: str | None = None, job_edit: tuple[str, str] | None = None) -> Path:
    root = tmp_path / "cluster"
    shutil.copytree(SAMPLES / "xid-ecc-3node" / "bundle", root)
    if job:
        (root / "extra").mkdir()
        text = fixture_text("job-log", job)
        if job_edit:
            text = text.replace(*job_edit)
        (root / "extra" / "slurm-48213.err").write_text(text)
    return root


def node(
    root: Path, name: str, dmesg: str, collected_at: str, uptime: str | None = "jc-linux-proc-uptime.txt"
) -> None:
    files = {"cmd/dmesg.txt": ("dmesg", fixture_text("dmesg", dmesg))}
    if uptime:
        files["cmd/uptime.txt"] = ("uptime", fixture_text("uptime", uptime))
    write_node(root, name, files, meta={"collected_at": collected_at})


def timeline_of(root: Path, **kw: float) -> tl.Timeline:
    con = connect(None)
    work = root.parent / "work"
    work.mkdir(exist_ok=True)
    load(con, [root], work, Limits(), jobs=1)
    return tl.build(Context(con), **kw)


def of(t: tl.Timeline, node: str, family: str | None = None) -> list[tl.Event]:
    return [e for e in t.events if e.node == node and (family is None or e.family == family)]


def test_sample_cluster_places_dmesg_T_under_TZ_UTC_and_lists_what_it_cannot_place(tmp_path: Path) -> None:
    t = timeline_of(cluster(tmp_path))
    # h100-node-04: `TZ=UTC dmesg -T` (the collector's command): its printed times are UTC
    xids = of(t, "h100-node-04", "xid")
    assert [(e.iso, e.line, e.clock) for e in xids][-1] == ("2024-08-30T11:43:14Z", 5, "dmesg-T-utc")
    assert xids[-1].level == "critical" and xids[-1].what.startswith("Xid 109 on 0000:cb:00.0")
    # p5-node-01: raw seconds since boot, no uptime in its bundle: not placed, not guessed
    (x48, *_) = of(t, "p5-node-01", "xid")
    assert x48.utc is None and x48.time_text == "430954.509105"
    assert x48.why == "seconds since boot, and the node's bundle has no uptime reading to convert them"
    # p5-node-02: syslog lines cut before their stamp; p5-node-03: dmesg --reltime
    assert {e.why for e in of(t, "p5-node-02", "xid")} == {"the line prints no time"}
    assert {e.clock for e in of(t, "p5-node-03", "pcie_aer")} == {"reltime"}
    assert len(t.unplaced) == 16 and all(e.why for e in t.unplaced)
    # collections at meta.env's collected_at, cited by its line
    (c,) = of(t, "p5-node-01", "collected")
    assert (c.iso, c.where) == ("2026-12-01T08:00:00Z", "p5-node-01/meta.env:3")
    # the latest critical event is Xid 109; the Xid 13s before it are info (an application's error), the
    # peermem error 32 min earlier is outside the 30 min before: Xid 109 is first
    assert t.incident is not None and t.incident.first == xids[-1]
    assert t.incident.window_start == datetime(2024, 8, 30, 11, 13, 14)


def test_dmesg_T_without_TZ_UTC_is_local_time_and_not_placed(tmp_path: Path) -> None:
    root = cluster(tmp_path)
    manifest = root / "h100-node-04" / "manifest.tsv"
    manifest.write_text(manifest.read_text().replace("TZ=UTC dmesg -T", "dmesg -T"))
    t = timeline_of(root)
    events = of(t, "h100-node-04", "xid")
    assert events and all(e.utc is None and e.clock == "dmesg-T-local" for e in events)
    assert events[0].why == "dmesg -T prints the host's local time and the bundle does not say its zone"
    assert t.incident is None and t.no_incident == "no hang and no critical event could be placed in time"


def test_seconds_since_boot_are_placed_with_the_nodes_uptime(tmp_path: Path) -> None:
    """NVSentinel #155: fallen off the bus at [1843.308145]; /proc/uptime 46901.13 at 2026-12-01T08:00:00Z:
    boot 2026-11-30T18:58:18.87Z, the event 18:58:18.87 + 1843.31 s = 19:29:02.18Z."""
    root = cluster(tmp_path)
    node(root, "p5-node-05", "nvsentinel-155-fallen-off-bus-multiline.txt", "2026-12-01T08:00:00Z")
    t = timeline_of(root)
    (bus,) = of(t, "p5-node-05", "gpu_driver")
    assert (bus.iso, bus.clock, bus.level, bus.where) == (
        "2026-11-30T19:29:02Z",
        "kernel-uptime",
        "critical",
        "p5-node-05/cmd/dmesg.txt:1",
    )
    (boot,) = of(t, "p5-node-05", "boot")
    assert (boot.iso, boot.where) == ("2026-11-30T18:58:19Z", "p5-node-05/cmd/uptime.txt:1")
    # the latest critical event of the cluster: the first of its incident
    assert t.incident is not None and t.incident.first == bus


def test_a_stamp_with_its_offset_is_utc(tmp_path: Path) -> None:
    """gpud #870 (dmesg --decode --time-format iso): 2025-05-27T04:18:56,089671+00:00; the same line with its
    offset made +02:00 is two hours earlier in UTC."""
    root = cluster(tmp_path)
    node(root, "p5-node-05", "gpud-870-dmesg-decode-iso-comma-xid79.txt", "2026-12-01T08:00:00Z", uptime=None)
    (x79,) = [e for e in of(timeline_of(root), "p5-node-05", "xid")]
    assert (x79.iso, x79.clock, x79.level) == ("2025-05-27T04:18:56Z", "kernel-zoned", "critical")
    edited = tmp_path / "edited"
    edited.mkdir()
    root = cluster(edited)
    write_node(
        root,
        "p5-node-05",
        {"cmd/dmesg.txt": ("dmesg", fixture_text("dmesg", "gpud-870-dmesg-decode-iso-comma-xid79.txt").replace(
            "04:18:56,089671+00:00", "04:18:56,089671+02:00"))},
    )  # fmt: skip
    (x79,) = of(timeline_of(root), "p5-node-05", "xid")
    assert x79.iso == "2025-05-27T02:18:56Z"


def test_a_failed_probe_is_placed_at_the_collection_and_never_first(tmp_path: Path) -> None:
    """ci-runners #40: nvidia-smi exits 9, 'couldn't communicate with the NVIDIA driver' (manifest exit code
    and stdout as the collector records them)."""
    from tests.rules.test_probe_answers import answer_text, fail_probe

    root = cluster(tmp_path)
    sick = write_node(root, "p5-node-05", {}, meta={"collected_at": "2026-12-01T08:00:05Z"})
    fail_probe(sick, "cmd/nvidia-smi.txt", 9, answer_text("nvidia-smi--ci-runners-40-driver-unreachable.txt"))
    t = timeline_of(root)
    (probe,) = of(t, "p5-node-05", "probe")
    assert (probe.iso, probe.what, probe.where, probe.clock) == (
        "2026-12-01T08:00:05Z",
        "nvidia-smi: driver-unreachable",
        "p5-node-05/cmd/nvidia-smi.txt:1",
        "probe",
    )
    assert not probe.fault and t.incident is not None and t.incident.first.node == "h100-node-04"


def test_job_log_stamps_are_placed_in_their_own_zone(tmp_path: Path) -> None:
    t = timeline_of(cluster(tmp_path, job=HANG))
    dogs = [e for e in t.events if e.family == "watchdog"]
    assert [(e.iso, e.line, e.clock) for e in dogs][0] == ("2025-06-26T06:24:44Z", 1, "job-zoned +00:00")
    assert all(e.row == "job logs (host unknown)" for e in dogs)  # the log names no host
    began = min(e.utc for e in t.events if e.family == "hang_began" and e.utc)
    assert began == HANG_BEGAN
    t2 = timeline_of(cluster(tmp_path / "z", job=HANG, job_edit=("Z stderr", "+02:00 stderr")))
    assert [e.iso for e in t2.events if e.family == "watchdog"][0] == "2025-06-26T04:24:44Z"


def test_a_ranks_line_sits_on_the_node_its_host_maps_to(tmp_path: Path) -> None:
    """Lightning #20434: NCCL's Init line puts rank 3 on babel-0-31, the hostname p5-node-02's meta.env
    gives; its watchdog line (glog, no year) is listed on that node, not placed."""
    root = cluster(tmp_path, job="lightning-20434-slurm-nccl-init-rank3.txt")
    meta = root / "p5-node-02" / "meta.env"
    meta.write_text(meta.read_text().replace("hostname=ip-10-1-0-12", "hostname=babel-0-31"))
    (dog,) = of(timeline_of(root), "p5-node-02", "watchdog")
    assert (dog.host, dog.line, dog.utc, dog.clock) == ("babel-0-31", 5, None, "glog")
    assert dog.what == "rank 3: watchdog timeout: BROADCAST SeqNum 1 after 1800 s"


def test_glog_and_zoneless_job_stamps_are_listed_not_guessed(tmp_path: Path) -> None:
    t = timeline_of(cluster(tmp_path, job="basicsr-737-pg-guid-default-pg.txt"))
    dogs = [e for e in t.events if e.family == "watchdog"]
    assert dogs and all(e.utc is None and e.clock == "glog" for e in dogs)
    assert dogs[0].why == "glog stamps print month, day and time: no year and no zone"
    t = timeline_of(cluster(tmp_path / "b", job="nccl-1610-pipeline-stamp-two-process-groups.txt"))
    dogs = [e for e in t.events if e.family == "watchdog"]
    assert dogs and {e.clock for e in dogs} == {"job-no-zone"}


def hang_cluster(tmp_path: Path) -> Path:
    """The hang (began 06:14:44.112Z) and a node whose GPU fell off the bus 40 s before it: its collection at
    18:45:02Z with 46901.13 s up puts [1843.308145] at 06:14:04Z."""
    root = cluster(tmp_path, job=HANG)
    node(root, "p5-node-05", "nvsentinel-155-fallen-off-bus-multiline.txt", "2025-06-26T18:45:02Z")
    return root


def test_the_first_event_is_the_nodes_fault_before_the_hang_began(tmp_path: Path) -> None:
    t = timeline_of(hang_cluster(tmp_path))
    inc = t.incident
    assert inc is not None
    assert (inc.first.node, inc.first.family, inc.first.iso) == (
        "p5-node-05",
        "gpu_driver",
        "2025-06-26T06:14:04Z",
    )
    assert inc.hangs == 3 and inc.start == datetime(2025, 6, 26, 6, 14, 4)
    assert inc.end == datetime(2025, 6, 26, 6, 24, 44, 903881)  # rank 1's watchdog line ends the hang
    # h100-node-04's critical Xid 109 (2024) is an earlier incident: not in this window
    assert all(e.node != "h100-node-04" for e in inc.events)
    # what a hang finding asks of the timeline: the node's evidence before the hang began
    before = t.before("p5-node-05", HANG_BEGAN)
    assert [(e.family, e.line) for e in before] == [("gpu_driver", 1), ("kernel_error", 4)]
    assert before[1].what == "kernel error: NVRM: The NVIDIA probe routine failed for 1 device(s)."
    assert t.before("p5-node-05", HANG_BEGAN, within_s=10) == []


def test_events_left_out_of_a_long_log_are_searched_in_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linux-surface #1494: six 'nfs: server not responding' lines 4.2 s apart.  Collected so the fourth
    ([32508.232794]) falls at 06:14:43Z, 1 s before the hang began; with one line kept at each end of the
    file, the fourth is in the middle left out, and still found first in a 3 s window."""
    root = cluster(tmp_path, job=HANG)
    node(root, "p5-node-06", "linux-surface-1494-dmesg-nfs-not-responding-ok.txt", "2025-06-26T10:14:36Z")
    monkeypatch.setattr(tl, "KEEP_HEAD", 1)
    monkeypatch.setattr(tl, "KEEP_TAIL", 1)
    t = timeline_of(root, lookback_s=3.0)
    # the 7 NFS lines of the file (6 timed out, 1 still trying): 5 between the first and the last
    assert [(g.family, g.count) for g in t.left_out if g.node == "p5-node-06"] == [("nfs", 5)]
    assert t.incident is not None
    assert (t.incident.first.node, t.incident.first.iso, t.incident.first.line) == (
        "p5-node-06",
        "2025-06-26T06:14:43Z",
        4,
    )


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from analyzer.cli import cli

    tmp = tmp_path_factory.mktemp("timeline")
    root = hang_cluster(tmp)
    out = tmp / "out"
    result = CliRunner().invoke(
        cli,
        ["analyze", str(root), "--html", str(out / "r.html"), "--md", str(out / "r.md"), "--jobs", "1",
         "--color", "never"],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return {"terminal": result.output, "md": (out / "r.md").read_text(), "html": (out / "r.html").read_text()}


FIRST = "first: 2025-06-26T06:14:04Z  p5-node-05  fallen off bus 0000:b3:00.0: The NVIDIA GPU 0000:b3:00.0"
FIRST_SOURCE = (
    "p5-node-05/cmd/dmesg.txt:1 (kernel log seconds since boot + boot time (collected_at - /proc/uptime))"
)


def test_terminal_and_markdown_say_the_first_events(reports: dict[str, str]) -> None:
    term = reports["terminal"].split("\nTimeline\n", 1)[1].split("\nVerdict", 1)[0]
    flat = " ".join(term.split())
    assert "its first event is the earliest fault from 30 min before." in flat
    assert " ".join(FIRST.split()) in flat and FIRST_SOURCE in flat
    assert (
        "then: 2025-06-26T06:14:44Z job logs (host unknown) rank 2: ALLREDUCE SeqNum 808 began (timed out after "
        "600 s) extra/slurm-48213.err:5 (job log time in its own zone (+00:00))"
    ) in flat
    assert "event(s) could not be placed in time and are not guessed" in flat
    md = reports["md"].split("## Timeline", 1)[1]
    first = next(line for line in md.splitlines() if line.startswith("- first: "))
    assert first.startswith(f"- {FIRST}") and first.endswith(FIRST_SOURCE)


def test_html_draws_every_family_and_marks_the_first(reports: dict[str, str]) -> None:
    html = reports["html"].split('<h2 id="timeline">', 1)[1].split('<h2 id="appendix"', 1)[0]
    svg = html.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert "▶ p5-node-05" in svg  # the first event's row
    for title in (
        "GPU driver faults (fallen off the bus, GSP, RmInitAdapter, MMU, bus timeouts)",
        "PyTorch watchdog timeouts",
        "Hang began (watchdog line's time minus its 'ran for')",
        "Boots (collected_at minus uptime)",
        "Collection (meta.env collected_at)",
        "first event of the incident",
    ):
        assert title.replace("'", "&#39;") in svg or title in svg, title
    assert "ringed: the first event, 2025-06-26T06:14:04Z" in html
    assert (
        "Times not placed" in html and "seconds since boot, and the node&#39;s bundle has no uptime" in html
    )
    assert "dmesg -T under TZ=UTC" in html and "job log time in its own zone (+00:00)" in html


def test_the_axis_spans_the_data_and_breaks_where_nothing_happened() -> None:
    from reports.timeline import _panels

    day = 1.0
    hour = day / 24
    # an incident of half an hour and a collection a day later: two panels, each spanning its own data
    assert _panels([0.0, 0.5 * hour, 24 * hour], 24 * hour) == [(0.0, 0.5 * hour), (24 * hour, 24 * hour)]
    # events an hour apart: one panel from the first to the last
    assert _panels([0.0, 0.5 * hour, hour], hour) == [(0.0, hour)]


def test_a_1024_node_timeline_stays_bounded() -> None:
    nodes = [f"node-{i:04d}" for i in range(1024)]
    at = datetime(2026, 12, 1, 7, 0, 0)
    events = [
        tl.Event(
            n,
            "link",
            "link down eth0",
            at.replace(minute=m),
            "kernel-uptime",
            "warning",
            f"{n}/cmd/dmesg.txt",
            m + 1,
        )
        for n in nodes
        for m in range(30)
    ] + [
        tl.Event(
            n, "collected", "collected", datetime(2026, 12, 1, 8), "collection", "info", f"{n}/meta.env", 3
        )
        for n in nodes
    ]
    events.append(
        tl.Event("node-0666", "xid", "Xid 79", at.replace(minute=31), "kernel-uptime", "critical", "x", 1)
    )
    t = tl.Timeline(events)
    tl._incident(t)
    c = view.chart(t)
    assert len(c["rows"]) == view.MAX_ROWS and c["rows"][-1] == "985 others"
    # the first event: the earliest fault from 30 min before Xid 79 (07:31): node-0000's link down at 07:01
    assert t.incident is not None and (t.incident.first.node, t.incident.first.iso) == (
        "node-0000",
        "2026-12-01T07:01:00Z",
    )
    assert c["rows"][0] == "node-0000" and c["marked_row"] == 0
    assert [p[0] for p in c["points"]["xid"]] == [1]  # node-0666: the most faults of the window's other rows
    assert c["spans"] and all(s[4] > 0 for s in c["spans"])  # the lines spanning the markers not drawn
    assert sum(len(p) for p in c["points"].values()) <= view.MAX_TOTAL_MARKERS
    assert "markers not drawn" in c["note"]
