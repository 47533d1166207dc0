"""Flight-recorder dumps (parsers/flight_recorder.py): every version's layout, pickle and JSON, read without
ever loading a pickle that names anything; cut, empty and hostile dumps named.

The dumps are written in each test (tests/fr_dumps.py: the documented layout, as ``torch::jit::Pickler``
writes it); none is kept in the repository.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

import parsers
from parsers import ParseError, flight_recorder
from tests.fr_dumps import dump, entry, jit_pickle


def _parse(data: bytes, name: str = "extra/nccl_trace_rank_3") -> parsers.ParseResult:
    return parsers.parse("flight-recorder", parsers.text_of(data), filename=name)


def test_the_jit_writer_makes_a_pickle_python_reads_alike() -> None:
    """The test's writer is a faithful pickle: Python's own reader gives the document back (our bytes)."""
    frames = [{"name": "all_reduce", "filename": "torch/distributed/distributed_c10d.py", "line": 2696}]
    doc = dump([entry(1, frames=frames), entry(2, frames=frames, state="scheduled")])
    data = jit_pickle(doc)
    assert data[:3] == b"\x80\x02}" and b"h" in data  # protocol 2, a dict, memo gets (shared frames, keys)
    assert pickle.loads(data) == doc  # noqa: S301 - bytes this test wrote itself


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.3", "2.4", "2.5", "2.7", "2.8", "2.10"])
def test_every_version_of_the_layout_is_read(version: str) -> None:
    entries = [entry(s, version=version, created=1_700_000_000 + s - 800) for s in (806, 807)]
    entries.append(entry(808, version=version, state="scheduled", created=1_700_000_010))
    r = _parse(jit_pickle(dump(entries, version=version)))
    (d,) = r.rows("fr_dump")
    assert (d["rank"], d["format"], d["version"], d["status"], d["entries"]) == (
        3,
        "pickle",
        version,
        "ok",
        3,
    )
    assert d["last_created_ns"] == 1_700_000_010 * 10**9
    assert d["timeout_ms"] == (600_000 if version >= "2.2" or version == "2.10" else None)
    rows = r.rows("fr_entry")
    assert [(e["collective_seq_id"], e["state"], e["op"]) for e in rows] == [
        (806, "completed", "all_reduce"),
        (807, "completed", "all_reduce"),
        (808, "scheduled", "all_reduce"),
    ]
    assert rows[2]["time_started_ns"] is None and rows[0]["time_completed_ns"] is not None
    assert (rows[0]["pg_name"], rows[0]["pg_desc"], rows[0]["numel_in"]) == ("0", "default_pg", 1024)
    status = r.rows("fr_pg_status")
    if version in ("2.0", "2.1"):
        assert status == []  # pg_status is written from 2.3
    else:
        assert [(s["pg_id"], s["last_enqueued"], s["last_completed"]) for s in status] == [(0, 808, 807)]
    assert r.rows("fr_group")[0]["size"] == 4 and r.issues == []


def test_the_json_form_reads_as_the_pickle() -> None:
    """dump_nccl_trace_json: counters as strings, a time not seen as 0, process_group an array."""
    doc = dump([entry(5, state="started"), entry(6, state="scheduled")])
    text = json.dumps(doc)
    text = text.replace('"last_completed_collective": 4', '"last_completed_collective": "4"')
    text = text.replace('"time_discovered_completed_ns": null', '"time_discovered_completed_ns": 0')
    r = parsers.parse("flight-recorder", text, filename="nccl_trace_rank_12")
    assert parsers.detect_kind(text) == "flight-recorder"
    (d,) = r.rows("fr_dump")
    assert (d["rank"], d["format"], d["entries"]) == (12, "json", 2)
    assert [e["time_completed_ns"] for e in r.rows("fr_entry")] == [None, None]
    assert r.rows("fr_pg_status")[0]["last_completed"] == -1


def test_a_pickle_is_recognised_by_content_whatever_its_name() -> None:
    data = jit_pickle(dump([entry(1)]))
    assert parsers.detect_kind(parsers.text_of(data)) == "flight-recorder"
    assert parsers.detect_kind(parsers.text_of(jit_pickle({"weights": [1, 2]}))) is None


def test_a_cut_dump_keeps_its_rank_and_says_it_is_cut() -> None:
    data = jit_pickle(dump([entry(s) for s in range(1, 40)]))
    r = _parse(data[: len(data) // 2], "fr/job_rank_7")
    (d,) = r.rows("fr_dump")
    assert (d["rank"], d["status"], d["entries"]) == (7, "cut", 0)
    assert r.rows("fr_entry") == []
    assert "dump cut: the pickle ends after byte" in r.issues[0].reason


def test_an_empty_dump_is_named_empty() -> None:
    r = _parse(jit_pickle(dump([])))
    assert r.rows("fr_dump")[0]["status"] == "empty" and r.rows("fr_entry") == []


def test_a_pickle_that_is_no_dump_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not a flight-recorder dump"):
        _parse(jit_pickle({"version": "1", "entries_x": []}))


class _Shell:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {_Shell.target}",))

    target = ""


class _Built:
    def __init__(self) -> None:
        self.x = 1


@pytest.mark.parametrize(
    ("payload", "opcode"),
    [
        ("reduce", "GLOBAL"),  # os.system via __reduce__, protocol 2: GLOBAL then REDUCE
        ("stack_global", "STACK_GLOBAL"),  # protocol 4
        ("build", "GLOBAL"),  # an object with state: GLOBAL, NEWOBJ, BUILD
        ("inst", "INST"),
        ("obj", "OBJ"),
        ("persid", "BINPERSID"),
        ("bytes", "(SHORT_)?BINBYTES"),
        ("set", "EMPTY_SET"),
    ],
)
def test_a_hostile_pickle_is_refused_and_nothing_runs(tmp_path: Path, payload: str, opcode: str) -> None:
    target = tmp_path / "pwned"
    _Shell.target = str(target)
    data = {
        "reduce": lambda: pickle.dumps({"entries": [_Shell()]}, protocol=2),
        "stack_global": lambda: pickle.dumps({"entries": [_Shell()]}, protocol=4),
        "build": lambda: pickle.dumps({"entries": [_Built()]}, protocol=2),
        "inst": lambda: b"\x80\x02(ios\nsystem\nX\x05\x00\x00\x00echo!b.",
        "obj": lambda: b"\x80\x02(X\x02\x00\x00\x00osX\x05\x00\x00\x00echo!o.",
        "persid": lambda: b"\x80\x02X\x01\x00\x00\x00aQ.",
        "bytes": lambda: pickle.dumps({"entries": [b"raw"]}, protocol=3),
        "set": lambda: pickle.dumps({"entries": [{1, 2}]}, protocol=4),
    }[payload]()
    with pytest.raises(ParseError, match=f"refused: pickle opcode {opcode}"):
        _parse(data)
    assert not target.exists()


def test_the_restricted_unpickler_itself_finds_no_class() -> None:
    """Behind the opcode check, the Unpickler refuses every global and persistent id on its own."""
    import io

    with pytest.raises(pickle.UnpicklingError, match=r"refused: the pickle names (os|posix)\.system"):
        flight_recorder._PlainUnpickler(io.BytesIO(pickle.dumps(os.system, protocol=2))).load()


def test_a_dump_over_the_size_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flight_recorder, "MAX_DUMP_BYTES", 1000)
    with pytest.raises(ParseError, match="refused: .* bytes, more than a flight-recorder dump"):
        _parse(jit_pickle(dump([entry(s) for s in range(50)])))


def test_a_bad_entry_keeps_the_rest() -> None:
    doc = dump([entry(1), entry(2)])
    doc["entries"].insert(1, ["not", "a", "dict"])
    doc["entries"][2]["collective_seq_id"] = "two"
    r = _parse(jit_pickle(doc))
    assert [e["collective_seq_id"] for e in r.rows("fr_entry")] == [1, None]
    assert [i.reason for i in r.issues] == [
        "entry 2: a list, not a dict",
        "entry 3: collective_seq_id not understood",
    ]


def test_a_file_name_without_a_rank_says_so() -> None:
    r = _parse(jit_pickle(dump([entry(1)])), "extra/trace.pkl")
    assert r.rows("fr_dump")[0]["rank"] is None
    assert "ends in no rank number" in r.issues[0].reason
