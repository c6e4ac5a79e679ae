"""The listing of oracle recordings no test asked for (TIMERACE_ORACLE_UNUSED=report,
tests/oracle.py): a recording counts as asked for once a test computes its path, for pan
(by the twin's text) and herd7 (by a generated program's); the rest are listed."""

from __future__ import annotations

import oracle


def test_recordings_no_test_asked_for_are_listed(tmp_path, monkeypatch):
    herd, pan = tmp_path / "herd7_recordings", tmp_path / "pan_recordings"
    herd.mkdir()
    pan.mkdir()
    monkeypatch.setattr(oracle, "RECORDINGS", herd)
    monkeypatch.setattr(oracle, "PAN_RECORDINGS", pan)
    monkeypatch.setattr(oracle, "ASKED", set())
    read_pan = oracle.pan_recording_of("active proctype p() { skip /* m.spec:3 */}")
    read_herd = oracle.recording_of(None, "C gen\n{}\nP0(int *x) { WRITE_ONCE(*x, 1); }\nexists (x=1)\n")
    for f in (read_pan, read_herd, pan / "0123456789abcdef0123.json", herd / "00000000000000000000.herd7",
              pan / "x.json.7.tmp"):
        f.write_text("{}\n")
    # the comments do not key a twin's recording
    assert oracle.pan_recording_of("active proctype p() { skip }") == read_pan
    assert oracle.unread() == ["tests/herd7_recordings/00000000000000000000.herd7",
                               "tests/pan_recordings/0123456789abcdef0123.json"]
