"""The kernel-log parser's shortcuts never change what it finds.

Reference: the same parser with each shortcut turned off (every line cleaned by ``LineCleaner.clean`` and
read by ``_STAMP``, no remembered events or unclassified lines, every NVRM kind pattern searched, every
signature pattern of the catalog searched on every candidate line, in the catalog's order).  Inputs: every real dmesg
fixture, a log past the vectorised threshold in which links flap (most lines candidates), lines around
the shortcuts' edges, and mangled copies (hypothesis).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsers import dmesg
from parsers._base import ParserFailure
from parsers._kernel_catalog import signature
from tests.conftest import fixture_files
from tests.parsers.test_fuzz import mangled

FIXTURES = fixture_files("dmesg")
#: _EFA as it was written first: ``\S*.*`` matches what ``.*`` matches, with a backtracking cost
_EFA_FIRST = re.compile(r"^(?:infiniband )?efa[_ ]\S*.*(?:error|fail|timeout|reset)", re.IGNORECASE)


def _outcome(text: str) -> Any:
    try:
        r = dmesg.parse(text)
    except ParserFailure as exc:
        return f"{type(exc).__name__}: {exc}"
    # every row with its columns in order, and every issue
    return [list(row.items()) for row in r.rows("kernel_event")], r.issues, r.issues_dropped


def _slow_kind(body: str) -> str | None:
    return next((kind for pattern, kind in dmesg._NVRM_KINDS if pattern.search(body)), None)


def _reference(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    cleaner = dmesg._cleaner
    with monkeypatch.context() as m:
        m.setattr(dmesg, "_cleaner", lambda t: (cleaner(t)[0], False))  # never "plain": no ordinary lines
        m.setattr(dmesg, "_MEMO_MAX", 0)  # no remembered events, no remembered unclassified lines
        m.setattr(dmesg, "_nvrm_kind", _slow_kind)
        # every line meets every signature of the catalog, in its order: no key gate, no key index (so
        # the keys must be held by every match for the shortcuts to agree)
        m.setattr(dmesg, "_SIGNATURE_KEYS", re.compile(""))
        m.setattr(dmesg, "_SIGNATURES_OF_KEY", (("", tuple(range(len(dmesg.SIGNATURES)))),))
        return _outcome(text)


FLAPPING = [
    "bond0: link status up for interface enp1s0f0, enabling it in 200 ms",
    "bond0: (slave eth1): making interface eth1 the new active one",
    "mlx5_core 0000:ab:00.0 mlx5_1: Port: 1 Link ACTIVE",
    "mlx5_core 0000:ab:00.0 mlx5_1: Port: 1 Link INIT",
    "ena 0000:00:05.0 eth0: Link is Up",
    "efa 0000:00:07.0: Setup irq:0xffff8f3bcee5b288 vector:93 name:efa-mgmnt@pci:0000:00:07.0",
    "infiniband efa_0: IB device registered",
    "efa 0000:00:07.0: enabling device (0000 -> 0002)",
    "Elastic Fabric Adapter (EFA) v2.6.0g",
    "nvidia 0000:05:00.0: enabling device (0000 -> 0002)",
    "IPv6: ADDRCONF(NETDEV_UP): bond0: link is not ready",
    "nvme nvme0: 2/0/0 default/read/poll queues",
    "NVRM: GPU1 _kgspLogRpcTimeout: rpc timed out",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
]


def test_flapping_log_past_the_vectorised_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    # derived: the link, EFA and probe lines of the fixtures, printed again and again as a flapping node does
    lines, t = [], 20.0
    for k in range(max(dmesg.VECTOR_BELOW, 1 << 18) // 40):  # 256 KB at least: every line many times over
        t += 0.01 + (k % 7) * 0.5
        lines.append(f"[{t:12.6f}] {FLAPPING[k % len(FLAPPING)]}")
        if k % 97 == 0:
            lines.append("    NVRM: a continuation line")
    text = "\n".join(lines) + "\n"
    assert len(text) > dmesg.VECTOR_BELOW
    fast = _outcome(text)
    assert isinstance(fast, tuple) and len(fast[0]) > 1000
    assert fast == _reference(text, monkeypatch)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_shortcuts_keep_every_event_of_each_fixture(path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_text(encoding="utf-8")
    assert _outcome(text) == _reference(text, monkeypatch)


EDGES = [
    # ordinary "[ t] message" lines beside ones that only look so: the cleaner's own tests decide those
    "[  12.000001] bond0: link status up for interface eth0 $ odd",
    "[  12.000002] bond0: link status down for interface eth0 <---- here",
    "[  12.000003] `bond0: link status up for interface eth1`",
    "[123456.000004] ena 0000:00:05.0 eth0: Link is Down",
    "[1,0]<stdout>:  NVRM: indented by mpirun",
    "[  12.000005] NVRM: The NVIDIA GPU 0000:b3:00.0",
    "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
    "[  12.000006] NVRM: fallen off the bus and is not responding to commands.",
    "> [  12.000007] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x",
    "[  12.000008]   efa 0000:00:07.0: reset failed",
    "[  12.000009] NVRM: GPU3 \u017fysmembar timeout",  # the long s is an s to IGNORECASE
    "[  12.000010] NVRM: GPU3 \u212agmmu: fail",  # the Kelvin sign is a k to IGNORECASE
    "[  12.000011] host1 kernel: NVRM: GPU2 NV_ERR_GPU_IS_LOST",
    "[  12.000012] ~~~",
    "[  12.000013]",
    # one message at the levels dmesg -x and /dev/kmsg print: remembered per level, an error at err only
    "kern  :err   : [  12.000014] foo foo0: went wrong",
    "kern  :info  : [  12.000015] foo foo0: went wrong",
    "kern  :err   : [  12.000016] foo foo0: went wrong",
    "3,1,12000017,-;foo foo0: went wrong",
    "6,2,12000018,-;foo foo0: went wrong",
    "[  12.000019] foo foo0: went wrong",
]


@pytest.mark.parametrize("order", [1, -1])
def test_shortcuts_at_their_edges(order: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(EDGES[::order]) + "\n"
    assert _outcome(text) == _reference(text, monkeypatch)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_shortcuts_on_mangled_logs(data: st.DataObject) -> None:
    text = data.draw(mangled("dmesg"))
    with pytest.MonkeyPatch.context() as m:
        assert _outcome(text) == _reference(text, m)


WORDS = st.sampled_from(
    ["NVRM: ", "GPU", "gsp", "GSP ", "timed out", "timeout", "heartbeat", "RPC", "rpc", "fail", "lost", "nvlink",
     "ECC", "ecc", "HBM", "error", "memory", "fault", "bus", "BAR1 ", "flush", "sysmembar", "MMU Fault", "kgmmu",
     "_kgspBootGspRm", "failed to ", "boot", "Board Serial Number", "GPU-1a2b3c4d-", " ", ":", "\u017f", "\u212a",
     "\u0131", "\u0130", "x", "0"]
)  # fmt: skip


@settings(max_examples=400, deadline=None, derandomize=True)
@given(words=st.lists(WORDS, max_size=12), noise=st.text(max_size=20))
def test_nvrm_kind_words_never_miss_a_kind(words: list[str], noise: str) -> None:
    body = "".join(words) + noise
    assert dmesg._nvrm_kind(body) == _slow_kind(body)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    words=st.lists(
        st.sampled_from(["efa", "EFA", "infiniband ", "_", " ", "0000:", "Error", "reset", "x", "\n"]),
        max_size=10,
    )
)
def test_efa_pattern_reads_as_first_written(words: list[str]) -> None:
    body = "".join(words)
    efa = signature("efa_error").pattern  # the catalog's row: the first form plus rdmap* names
    if not body.lower().startswith("infiniband rdmap"):
        assert bool(efa.search(body)) == bool(_EFA_FIRST.search(body))
