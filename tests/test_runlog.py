"""The run log's resume: rows after the checkpoint are dropped, the record of each resume is not."""

import math
import os

import pytest

from scalerl.runlog import RESUME, RunLogWriter, read_runlog


def test_a_resume_killed_before_its_next_checkpoint_keeps_its_resume_row(tmp_path):
    """A resumed run killed before its next checkpoint lost its ``resume`` row with the rest of the
    rows after the checkpoint (the next resume truncated them), and the report's "resumed: N times"
    undercounted the stops. The row is about the attempt, not about the rows it trained: kept."""
    path = tmp_path / "runlog.jsonl"
    w = RunLogWriter(path, {"run": "r"})
    w.append({"type": "eval", "step": 0, "pass_rate": 0.1})
    offset = w.offset()  # the checkpoint at step 0
    w.append({"type": "train", "step": 1})
    w.close()
    for utc in ("2026-12-03T10:00:00Z", "2026-12-03T11:00:00Z"):  # two resumes, each killed before step 2's checkpoint
        w = RunLogWriter(path, resume_offset=offset)
        w.append({"type": RESUME, "from_step": 0, "utc": utc})
        w.append({"type": "train", "step": 1})
        w.close()
    with open(path, "a") as f:
        f.write('{"type": "train", "st')  # a torn line from the last kill
    w = RunLogWriter(path, resume_offset=offset)
    assert w.offset() == path.stat().st_size  # (what its next checkpoint records)
    w.close()
    rows = read_runlog(path)[1]
    assert [(r["type"], r.get("step"), r.get("utc")) for r in rows] == [
        ("eval", 0, None), (RESUME, None, "2026-12-03T10:00:00Z"), (RESUME, None, "2026-12-03T11:00:00Z")]


def test_a_run_log_cut_shorter_than_the_checkpoints_offset_is_refused_not_padded(tmp_path):
    """os.truncate "back" to the checkpoint's offset extended a run log cut short since (a copy, a
    sync) with NUL bytes, and the resumed run wrote on after them: its last rows lost, the log unreadable."""
    import pytest

    from scalerl.errors import InputError

    path = tmp_path / "runlog.jsonl"
    w = RunLogWriter(path, {"run": "r"})
    w.append({"type": "eval", "step": 0, "pass_rate": 0.1})
    offset = w.offset()
    w.close()
    os.truncate(path, offset - 10)
    with pytest.raises(InputError, match=rf"runlog.jsonl holds {offset - 10} bytes, fewer than the {offset} written "
                                         r"when the checkpoint was saved: .*restore it, or move the newest checkpoint"):
        RunLogWriter(path, resume_offset=offset)
    assert path.stat().st_size == offset - 10 and b"\0" not in path.read_bytes()  # left as it was


class _Killed(KeyboardInterrupt):
    """A kill simulated at one point of the resume's cut-back."""


@pytest.mark.parametrize("kill_at", ["os.truncate", "os.fsync", "os.replace"])
def test_a_kill_inside_the_resumes_cut_back_loses_no_resume_row(tmp_path, monkeypatch, kill_at):
    """The cut-back truncated the log to the checkpoint's offset, then wrote the earlier attempts'
    resume rows after it: a kill in between lost them for good (the report undercounted the stops).
    Now the cut log is written beside it and renamed over it: a kill at any point leaves the old log
    or the new, each with every resume row, and the next resume goes on from there."""
    path = tmp_path / "runlog.jsonl"
    w = RunLogWriter(path, {"run": "r"})
    w.append({"type": "eval", "step": 0, "pass_rate": 0.1})
    offset = w.offset()
    w.close()
    w = RunLogWriter(path, resume_offset=offset)
    w.append({"type": RESUME, "from_step": 0, "utc": "2026-12-03T10:00:00Z"})
    w.append({"type": "train", "step": 1})
    w.close()

    module, name = kill_at.split(".")
    real = getattr(os, name)

    def killed_after(*args, **kwargs):
        if name != "replace":
            real(*args, **kwargs)  # the kill lands right after it (before, for the rename)
        raise _Killed

    monkeypatch.setattr(os, name, killed_after)
    try:
        RunLogWriter(path, resume_offset=offset).close()
    except _Killed:
        pass
    monkeypatch.setattr(os, name, real)
    assert [r["type"] for r in read_runlog(path)[1]][:2] == ["eval", RESUME]
    w = RunLogWriter(path, resume_offset=offset)  # the next attempt
    w.append({"type": RESUME, "from_step": 0, "utc": "2026-12-03T12:00:00Z"})
    w.close()
    rows = read_runlog(path)[1]
    assert [(r["type"], r.get("utc")) for r in rows] == [
        ("eval", None), (RESUME, "2026-12-03T10:00:00Z"), (RESUME, "2026-12-03T12:00:00Z")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runlog.jsonl"]  # no temporary left behind


def _rising_rows(n: int) -> list[dict]:
    """n evaluation rows of a rising pass rate against FLOPs (R0 first)."""
    out = []
    for s in range(n):
        x = s * 1e10
        y = 0.2 + 0.5 / (1 + (3e10 / max(x, 1.0)) ** 1.5) + 0.004 * math.sin(3.1 * s)
        out.append({"step": s, "flops": x, "val/pass_rate": y})
    return out


def test_resuming_a_run_log_behind_a_byte_order_mark_keeps_every_row(tmp_path):
    from scalerl.errors import InputError
    from scalerl.runlog import RunLogWriter, read_runlog

    log = tmp_path / "runlog.jsonl"
    w = RunLogWriter(log, {"run": "r", "config": {"eval": {"sets": ["val"]}}})
    for row in _rising_rows(3):
        w.append({"type": "eval", **row})
    offset = w.offset()  # what the checkpoint at step 2 stores
    w.append({"type": "eval", **_rising_rows(4)[3]})  # written after it: the resume redoes it
    w.close()
    log.write_bytes(b"\xef\xbb\xbf" + log.read_bytes())  # the log opened and saved in an editor
    try:
        w = RunLogWriter(log, resume_offset=offset)
    except InputError:
        return  # refused in one line: acceptable
    w.append({"type": "eval", **_rising_rows(4)[3]})
    w.close()
    _, rows, notes = read_runlog(log)  # (today: steps 2-3 skipped as "a torn last line"; a row more and it is
    # "line 4 is not a JSON object" -- a real 12-step run resumed so: report and fit refused its log)
    assert [r["step"] for r in rows] == [0, 1, 2, 3] and not notes


def test_append_json_line_ends_a_torn_last_line_before_it_writes(tmp_path):
    """A study's ``progress.jsonl`` torn by a kill or a full disk mid-write: the next record is appended after a
    newline -- appended to the fragment, it fused into one unreadable line and was lost with it."""
    from scalerl.runlog import append_json_line
    from scalerl.study.run_state import progress_records

    path = tmp_path / "progress.jsonl"
    append_json_line(path, {"label": "base", "seed": 0, "status": "trained"})
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"label": "loo-x", "seed": 0, "sta')  # the torn record
    append_json_line(path, {"label": "loo-y", "seed": 1, "status": "failed", "x": float("nan")})
    records = progress_records(tmp_path)
    assert [(r["label"], r["seed"]) for r in records] == [("base", 0), ("loo-y", 1)]
    assert records[1]["x"] is None  # (NaN written as JSON's null: every reader parses it)
    assert path.read_text().count("\n") == 3


def test_a_marked_copy_says_where_it_was_copied_wherever_it_moves(tmp_path):
    """runlog.mark_copied records where a copied run directory ends (its final/'s step); copied_at reads it back --
    after the copy's own extension moved final/ on, and after the directory is moved. An unmarked directory is a
    run of its own; a directory without a final/ step is no finished run to copy."""
    import json
    import shutil

    import pytest

    from scalerl.errors import InputError
    from scalerl.runlog import copied_at, mark_copied

    def finished(d, step):
        (d / "final").mkdir(parents=True, exist_ok=True)
        (d / "final" / "scalerl_final.json").write_text(json.dumps({"step": step}))

    copy = tmp_path / "copy"
    finished(copy, 300)
    assert copied_at(copy) is None
    assert mark_copied(copy, tmp_path / "source") == 300 and copied_at(copy) == 300
    finished(copy, 360)  # its extension in the new study
    shutil.move(str(copy), str(tmp_path / "moved"))
    assert copied_at(tmp_path / "moved") == 300
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no final/"):
        mark_copied(tmp_path / "empty", tmp_path / "source")
