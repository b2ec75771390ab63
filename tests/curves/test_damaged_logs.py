"""Damaged logs: every real fixture, cut short, with bytes flipped, lines dropped, repeated, cut or
garbage inserted, is read or refused with an InputError -- never a traceback (a UnicodeDecodeError
from a damaged trainer state or SQLite page, zlib's and zipfile's own errors from a damaged
archive were found this way)."""

import gzip
import random
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from scalerl.curves import read_curve, read_curves
from scalerl.curves.csv_log import read_csv
from scalerl.errors import InputError

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
VAL = "val-core/openai/gsm8k/reward/mean@1"
MUTATIONS = 12


def _fixtures(tmp: Path) -> dict[str, tuple[Path, str, str]]:
    """name -> (a copy of a real log, x, y)."""
    out = {}

    def copy(src: Path, name: str, x: str, y: str):
        shutil.copy(src, tmp / name)
        out[name] = (tmp / name, x, y)

    copy(ROOT / "examples" / "data" / "real_rl_curves.csv", "runs.csv", "cum_wall_hours", "val_score")
    copy(DATA / "trl_grpo_console.log", "trl.log", "num_tokens", "eval_reward")
    copy(DATA / "trl_grpo_trainer_state.json", "trainer_state.json", "num_tokens", "eval_reward")
    copy(DATA / "verl_file_logger.jsonl", "verl.jsonl", "cum:timing_s/step", VAL)
    copy(DATA / "wandb_0_17_9_run.wandb", "run.wandb", "_step", "val/acc")
    copy(DATA / "skyrl_console.log.gz", "skyrl.log.gz", "step", "eval/all/avg_score")
    copy(DATA / "trl_tensorboard_resumed.tar.gz", "tb.tar.gz", "step", "eval/reward")
    copy(DATA / "nemo_rl_console.log.gz", "nemo.log.gz", "step", "validation/accuracy")
    (tmp / "openrlhf.log").write_bytes(gzip.decompress((DATA / "openrlhf_console_async.log.gz").read_bytes()))
    out["openrlhf.log"] = (tmp / "openrlhf.log", "step", "eval_openai/gsm8k_pass1")
    (tmp / "nemo.log").write_bytes(gzip.decompress((DATA / "nemo_rl_console_resumed.log.gz").read_bytes()))
    out["nemo.log"] = (tmp / "nemo.log", "cum:timing/train/total_step_time", "validation/accuracy")
    copy(DATA / "primerl_console.log.gz", "primerl.log.gz", "step", "eval/gsm8k/reward")
    for name in ("primerl_console_resumed", "primerl_console_json"):
        (tmp / f"{name}.log").write_bytes(gzip.decompress((DATA / f"{name}.log.gz").read_bytes()))
        out[f"{name}.log"] = (tmp / f"{name}.log", "cum:time/step", "eval/gsm8k/reward")
    (tmp / "mlruns.db").write_bytes(gzip.decompress((DATA / "mlflow_sqlite.db.gz").read_bytes()))
    out["mlruns.db"] = (tmp / "mlruns.db", "step", VAL)
    sky = gzip.decompress((DATA / "skyrl_console.log.gz").read_bytes())
    (tmp / "skyrl.log").write_bytes(sky)
    out["skyrl.log"] = (tmp / "skyrl.log", "cum:timing/step", "eval/all/avg_score")
    with tarfile.open(DATA / "trl_tensorboard_resumed.tar.gz") as tar:
        tar.extractall(tmp / "tb", filter="data")
    with zipfile.ZipFile(tmp / "tb.zip", "w", compression=zipfile.ZIP_DEFLATED) as z:
        for f in sorted((tmp / "tb" / "runs").rglob("*")):
            z.write(f, f.relative_to(tmp / "tb"))
    out["tb.zip"] = (tmp / "tb.zip", "step", "eval/reward")
    event = next((tmp / "tb" / "runs").rglob("*tfevents*"))
    shutil.copy(event, tmp / event.name)
    out["tfevents"] = (tmp / event.name, "step", "eval/reward")
    with tarfile.open(DATA / "swanlab_runs.tar.gz") as tar:
        tar.extractall(tmp / "sw", filter="data")
    for version, pattern in (("v1", "swanlog-0.6.12/*/backup.swanlab"), ("v2", "swanlog-0.10.3/*/*.swanlab")):
        shutil.copy(sorted((tmp / "sw").glob(pattern))[0], tmp / f"{version}.swanlab")
        out[f"swanlab-{version}"] = (tmp / f"{version}.swanlab", "step", "val/acc")
    with tarfile.open(DATA / "clearml_offline.tar.gz") as tar:
        tar.extractall(tmp / "cml", filter="data")
    session = sorted(p for p in (tmp / "cml" / "offline").iterdir() if p.is_dir())[0]
    shutil.copytree(session, tmp / "cml-session")
    out["clearml"] = (tmp / "cml-session" / "metrics.jsonl", "step", VAL)
    shutil.copy(session.with_suffix(".zip"), tmp / "session.zip")
    out["clearml.zip"] = (tmp / "session.zip", "step", VAL)
    import pandas as pd

    df = pd.read_csv(tmp / "runs.csv")
    df.to_parquet(tmp / "runs.parquet")
    out["runs.parquet"] = (tmp / "runs.parquet", "cum_wall_hours", "val_score")
    (tmp / "runs.json").write_text(df.to_json(orient="records"))
    out["runs.json"] = (tmp / "runs.json", "cum_wall_hours", "val_score")
    return out


GARBAGE = [b"nan", b"{}", b"[]", b'{"step": "x"}', b"step:5 - a:b", b"Step 3:", b"{", b"PAR1", b"\x00\x00",
           b"-1,-1,-1", b"\xff\xfe", b"\x1f\x8b"]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(7)
    if kind == 0:
        return data[:rng.randrange(len(data))]
    if kind == 1:
        b = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if kind == 2:
        del lines[i]
    elif kind == 3:
        lines.insert(i, bytes(rng.randrange(256) for _ in range(rng.randint(1, 80))))
    elif kind == 4:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif kind == 5:
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
    else:
        lines.insert(i, rng.choice(GARBAGE))
    return b"\n".join(lines)


def test_damaged_real_logs_are_read_or_refused_never_a_traceback(tmp_path):
    originals = tmp_path / "originals"
    originals.mkdir()
    fixtures = _fixtures(originals)
    damaged = tmp_path / "damaged"
    crashes = []
    for name, (path, x, y) in fixtures.items():
        read_curves(path, x, y)  # the undamaged log reads
        data = path.read_bytes()
        rng = random.Random(name)
        for i in range(MUTATIONS):
            target = damaged / f"{name}-{i}" / path.name
            target.parent.mkdir(parents=True)
            target.write_bytes(_mutate(data, rng))
            try:
                read_curves(target, x, y)
            except InputError:
                pass
            except Exception as exc:  # noqa: BLE001 -- what the test is looking for
                crashes.append(f"{name} #{i}: {type(exc).__name__}: {str(exc)[:120]}")
    assert not crashes, "\n".join(crashes)


def test_a_last_line_cut_inside_a_number_by_a_kill_is_left_out_not_misread(tmp_path):
    """A killed run's block-buffered stdout ends where the buffer was flushed, inside a line: mlx-lm's last
    report ``... Peak mem 65.006 GB`` cut to ``Peak mem 65.0``, a verl
    step's ``...:123456`` cut to ``...:12`` -- each read as a right-looking wrong value. Such a line is left
    out, and said; one that ends in a newline, or in no number, is read as before -- and a CSV's last row
    without a newline is kept."""
    mlx = (DATA / "real_samples" / "mlx_lm_issue18.log").read_bytes()
    cut = tmp_path / "mlx.log"
    cut.write_bytes(mlx.rstrip(b"\n")[:-len(b"06 GB")])  # '... Peak 65.0'
    c = read_curves(cut, "step", "peak_memory", bounded=False)[0]
    whole = read_curves(DATA / "real_samples" / "mlx_lm_issue18.log", "step", "peak_memory", bounded=False)[0]
    assert 65.0 not in list(c.y) and list(c.y) == list(whole.y)[:-1]
    assert any("ends inside its last line" in n and "Peak 65.0" in n for n in c.notes)

    # A CSV without a newline after its last row is far more often a finished export (Google Sheets, a
    # hand-made file) than a kill's cut: the row is data, kept.
    csv = tmp_path / "runs.csv"
    csv.write_text("step,score\n10,0.25\n20,0.3125\n30,0.3375")
    c = read_curves(csv, "step", "score")[0]
    assert list(c.x) == [10, 20, 30] and list(c.y)[-1] == 0.3375
    assert not any("ends inside its last line" in n for n in c.notes)

    verl = tmp_path / "verl.log"
    verl.write_text("".join(f"(TaskRunner pid=7) step:{s} - critic/score/mean:0.{s}00 - perf/total_num_tokens:123456\n"
                            for s in range(1, 4)) + "(TaskRunner pid=7) step:4 - critic/score/mean:0.400 - perf/total_num_tokens:12")
    tokens = read_curves(verl, "step", "perf/total_num_tokens", bounded=False)[0]
    assert list(tokens.y) == [123456.0] * 3 and any("ends inside its last line" in n for n in tokens.notes)


def test_csv_cut_inside_last_number_is_not_read_as_a_value(tmp_path):
    """(review reviewaf) A CSV still being written, or killed mid-write, cut inside its last number:
    ``300,150.0,0`` of ``300,150.0,0.6623`` was read as y = 0, silently. Where the column's earlier rows
    all share a fixed precision (``%.4f``) and the last number is written shorter, the row is visibly cut:
    left out, said as the consoles say it. A column of varying precision gives no such evidence (the
    finished export without a last newline, above, keeps its row)."""
    def sig(c):
        return 0.2 + 0.5 / (1 + (60.0 / c) ** 1.5)

    lines = ["step,gpu_hours,val_acc"] + [f"{s},{s * 0.5:.1f},{sig(s):.4f}" for s in range(10, 310, 10)]
    path = tmp_path / "metrics.csv"
    for cut in ("0", "0.6", "0.66", "0."):
        path.write_text("\n".join(lines[:-1]) + "\n" + "300,150.0," + cut)
        curve = read_curves(path, "gpu_hours", "val_acc")[0]
        assert curve.y.min() > 0.2, f"the cut row was read as y = {curve.y.min()}"
        assert len(curve) == 29 and curve.x[-1] == 145.0
        (note,) = [n for n in curve.notes if "ends inside its last line" in n]
        assert f"line 31 ('300,150.0,{cut}')" in note and "cut short" in note
        assert ("ends in its decimal point" if cut.endswith(".") else "4 decimals") in note
    # One decimal short may be a whole number whose trailing zero its writer dropped (review am): read.
    path.write_text("\n".join(lines[:-1]) + "\n" + "300,150.0,0.662")
    assert len(read_curves(path, "gpu_hours", "val_acc")[0]) == 30
    # The same row whole, with or without a newline after it, is data.
    for end in ("", "\n"):
        path.write_text("\n".join(lines) + end)
        curve = read_curves(path, "gpu_hours", "val_acc")[0]
        assert len(curve) == 30 and curve.y[-1] == float(lines[-1].rsplit(",", 1)[1]) and not curve.notes
    # Cut, but ending in a newline (a writer that adds one), or a column of varying precision: kept.
    path.write_text("\n".join(lines[:-1]) + "\n300,150.0,0\n")
    assert len(read_curves(path, "gpu_hours", "val_acc")[0]) == 30
    varying = ["step,gpu_hours,val_acc"] + [f"{s},{s * 0.5},{round(sig(s), 4)!r}" for s in range(10, 310, 10)]
    path.write_text("\n".join(varying[:-1]) + "\n300,150.0,0")
    assert len(read_curves(path, "gpu_hours", "val_acc")[0]) == 30


def test_a_quoted_last_cell_with_its_closing_quote_is_no_cut_row(tmp_path):
    # Review aj: the closing quote after 0.5 shows the cell was written whole: it cannot have been cut inside it.
    path = tmp_path / "log.csv"
    path.write_text('step,pass_rate\n"10","0.25"\n"20","0.31"\n"30","0.42"\n"40","0.5"', encoding="utf-8")
    (curve,) = read_csv(path, "step", "pass_rate")
    assert list(curve.x) == [10, 20, 30, 40]
    assert list(curve.y) == [0.25, 0.31, 0.42, 0.5]


@pytest.mark.parametrize("cells, last", [
    # A percent sign is written after every digit: a last cell that has it was not cut inside its number.
    (["12.5%", "20.5%", "33.3%", "41.7%"], "50%"),
    # An exponent is written after the mantissa's decimals: a last cell with its whole exponent was not cut.
    (["1.2500e-01", "2.0500e-01", "3.3300e-01", "4.1700e-01"], "5e-01"),
])
def test_a_last_cell_written_to_its_end_is_no_cut_row(tmp_path, cells, last):
    path = tmp_path / "log.csv"
    rows = [f"{10 * (i + 1)},{c}" for i, c in enumerate([*cells, last])]
    path.write_text("step,pass_rate\n" + "\n".join(rows), encoding="utf-8")  # (no newline at the end)
    (curve,) = read_csv(path, "step", "pass_rate")
    assert list(curve.x) == [10, 20, 30, 40, 50]
    assert not any("cut short" in n for n in curve.notes)


def test_a_last_value_of_fewer_decimals_in_a_two_decimal_column_is_kept(tmp_path):
    """A hand-made or spreadsheet column of two decimals may end in a plain 0.5 (review aj: it was left out as
    cut short); a logger's fixed %.4f column is the evidence of a cut."""
    path = tmp_path / "log.csv"
    path.write_text("step,pass_rate\n10,0.25\n20,0.31\n30,0.42\n40,0.45\n50,0.5", encoding="utf-8")
    (curve,) = read_csv(path, "step", "pass_rate")
    assert list(curve.y) == [0.25, 0.31, 0.42, 0.45, 0.5] and not any("cut short" in n for n in curve.notes)


def test_a_last_line_cut_after_its_decimal_point_is_left_out(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_text("step,tokens,pass_rate\n10,10000,0.21\n20,20000,0.30\n30,30000,0.37\n40,40000,0.41\n"
                    "50,50000,0.45\n60,60000,0.")  # killed mid-write: no newline, nothing after the point
    c = read_curves(path, x="tokens", y="pass_rate")[0]
    assert list(c.y) == pytest.approx([0.21, 0.30, 0.37, 0.41, 0.45]), c.y  # (review am: [..., 0.45, 0.0], no note)


def test_a_whole_last_row_written_by_str_is_kept(tmp_path):
    path = tmp_path / "k1000.csv"
    vals = [0.212, 0.305, 0.377, 0.418, 0.452, 0.47]  # pass rates over 1000 problems, str() of each
    path.write_text("\n".join(["step,tokens,pass_rate"] + [f"{(i + 1) * 10},{(i + 1) * 10000},{v}"
                                                         for i, v in enumerate(vals)]))  # "\n".join: no last newline
    c = read_curves(path, x="tokens", y="pass_rate")[0]
    assert list(c.y) == pytest.approx(vals), (c.y, c.notes)


# Review ao
def test_a_percent_column_cut_before_its_sign_with_more_decimals_is_left_out(tmp_path):
    p = tmp_path / "pct.csv"
    p.write_text("step,acc\n100,41.2%\n200,53%\n300,61.15%\n400,70.7%\n500,78.1%\n600,84%\n700,88.5%\n800,90.125")
    c = read_curve(p, x="step", y="acc")
    assert len(c.x) == 7 and any("cut short" in n for n in c.notes)


def test_a_sheets_export_ending_in_a_whole_one_keeps_its_last_row(tmp_path):
    p = tmp_path / "sheets.csv"
    p.write_text("step,acc\n100,0.412\n200,0.533\n300,0.611\n400,0.707\n500,0.781\n600,0.844\n700,0.912\n800,1")
    c = read_curve(p, x="step", y="acc")
    assert len(c.x) == 8 and c.y[-1] == 1.0


# Review ap: a fixed-width column is told by a trailing zero among its decimals, not by counting rows.
def _ap_csv(path, values, last):
    lines = ["step,val/pass_rate"] + [f"{10 * (i + 1)},{v}" for i, v in enumerate(values)]
    path.write_text("\n".join([*lines, f"{10 * (len(values) + 1)},{last}"]))  # no newline at the end
    return path


def test_a_shortest_float_export_of_twelve_rows_ending_in_1_keeps_its_last_row(tmp_path):
    values = ["0.112", "0.187", "0.243", "0.305", "0.358", "0.412", "0.466", "0.517", "0.563", "0.618", "0.672",
              "0.725"]
    (curve,) = read_curves(_ap_csv(tmp_path / "sheets.csv", values, "1"), "step", "val/pass_rate")
    assert float(curve.y[-1]) == 1.0 and len(curve.x) == 13


def test_a_fixed_width_log_killed_inside_its_last_number_drops_it_with_few_rows(tmp_path):
    values = ["0.1123", "0.2871", "0.3402", "0.4519", "0.5230", "0.5917"]  # 0.5230: a fixed width, not shortest
    (curve,) = read_curves(_ap_csv(tmp_path / "killed.csv", values, "0"), "step", "val/pass_rate")
    assert [float(v) for v in curve.y][-1] == pytest.approx(0.5917)


# Review aq: a cut number ending in a zero shows the width itself; a sign alone; a column that ends every number
# in its decimal point; a last number short of an unproven width is kept, and said.
_AQ_ROWS = ["gpu_hours,pass_rate"] + [f"{10 * i},{v:.4f}" for i, v in enumerate(
    [0.2213, 0.2591, 0.2867, 0.3124, 0.3389, 0.3642, 0.3915, 0.4187, 0.4584, 0.4911, 0.5673], start=1)]


def test_a_cut_number_ending_in_a_zero_is_fixed_width(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("\n".join(_AQ_ROWS + ["120,0.60"]))  # killed while writing 0.6023, no newline
    (c,) = read_csv(f, "gpu_hours", "pass_rate")
    assert c.x[-1] == 110.0 and any("cut short" in n for n in c.notes)


def test_a_row_cut_at_its_sign_is_left_out(tmp_path):
    f = tmp_path / "log.csv"
    rows = ["step,reward"] + [f"{s},{r:.4f}" for s, r in [(1, -0.8123), (2, -0.6542), (3, -0.5231), (4, -0.4111)]]
    f.write_text("\n".join(rows + ["5,-"]))  # killed while writing -0.3329, no newline
    (c,) = read_csv(f, "step", "reward", bounded=False)
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0] and any("is a sign alone: cut short" in n for n in c.notes)


def test_a_short_last_number_under_an_unproven_width_is_kept_and_said(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("\n".join(_AQ_ROWS + ["120,0"]))  # a cut '0' of 0.6023, or a shortest-float export's last 0
    (c,) = read_csv(f, "gpu_hours", "pass_rate")
    assert c.x[-1] == 120.0 and any("kept as a value -- if the file was read while being written" in n for n in c.notes)


def test_a_column_that_ends_every_number_in_its_point_keeps_its_last_row(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("pass_rate,tokens\n" + "\n".join(f"0.{i}000,{i}000000." for i in range(2, 8)))  # printf's %#.0f
    (c,) = read_csv(f, "tokens", "pass_rate")
    assert len(c) == 6 and not c.notes


# Review ar
@pytest.mark.parametrize("last", ["1.0", "0.0"])
def test_a_shortest_float_whole_number_last_is_not_dropped_as_cut(tmp_path, last):
    # A script writes f"{step},{round(acc, 4)}" joined by newlines (no newline at the end): every earlier value
    # has 4 decimals, the last is a whole number, written as Python writes it. '1.0' is no fixed-width mark
    # (str never leaves a trailing zero but in 'X.0'): at most it is an unproven width -- kept, with the note.
    f = tmp_path / "log.csv"
    f.write_text("step,acc\n1,0.1234\n2,0.2346\n3,0.3457\n4,0.4568\n5," + last)
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist()[-1] == 5.0


def test_a_markdown_tables_dash_placeholder_last_keeps_its_row(tmp_path):
    # A hand-made / pasted Markdown table (no newline at its end) that marks a missing value '-'; its last line
    # closes with '|', so its last cell was written whole.
    f = tmp_path / "table.md"
    f.write_text("| step | acc | loss |\n|---|---|---|\n| 1 | 0.5 | 0.9 |\n| 2 | 0.6 | 0.8 |\n"
                 "| 3 | 0.7 | 0.7 |\n| 4 | 0.8 | - |")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("cut", ["4.8e", "4.8e+1"])
def test_a_number_cut_inside_its_exponent_is_left_out(tmp_path, cut):
    # pandas to_csv of a float compute column writes repr: '2.4000000000000003e+18' beside '1.2e+18', so the
    # column shares no width. A kill inside the last exponent leaves '4.8e' (refused: "not a number") or
    # '4.8e+1' (read as 48: refused as compute going back, with a resume diagnosis). Like the sign alone, a
    # dangling 'e' / exponent is no number a writer finishes: the row should be left out.
    f = tmp_path / "log.csv"
    f.write_text("step,acc,flops\n1,0.5,1.2e+18\n2,0.6,2.4000000000000003e+18\n3,0.7,3.6e+18\n4,0.8," + cut)
    (c,) = read_csv(f, "flops", "acc")
    assert c.x.tolist() == [1.2e18, 2.4000000000000003e18, 3.6e18]


def test_a_cut_last_step_is_not_read_as_an_early_evaluation(tmp_path):
    # The step is the last column (df[["acc", "step"]].to_csv); killed while writing '500': '5'. Read as an
    # evaluation at step 5 with acc 0.9 (put first, said "sorted as text"), where it should be left out.
    f = tmp_path / "log.csv"
    f.write_text("acc,step\n0.5,100\n0.6,200\n0.7,300\n0.8,400\n0.9,5")
    (c,) = read_csv(f, "step", "acc")
    assert 5.0 not in c.x.tolist()


# Review as
def test_a_javascript_written_exponent_last_is_kept(tmp_path):
    # Node's rows.map(r => r.join(",")).join("\n") (no newline at the end): String(1e-10) is '1e-10',
    # String(0.000012) '0.000012', String(5e-7) '5e-7' -- written whole (review as: it was taken for a cut
    # inside its exponent, '-7' shorter than the one earlier exponent, '-10').
    f = tmp_path / "log.csv"
    f.write_text("step,acc,kl\n1,0.5,1e-10\n2,0.6,0.000012\n3,0.7,0.000034\n4,0.8,5e-7")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_counter_cut_where_it_gains_a_digit_is_left_out(tmp_path):
    # df[["acc", "step"]].to_csv killed while writing '1000': '100' after '900' has as many digits as the
    # step before it (review as: read as step 100, the file was refused, "compute decreases").
    f = tmp_path / "log.csv"
    f.write_text("acc,step\n" + "\n".join(f"0.{i},{i}00" for i in range(1, 10)) + "\n0.95,100")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [float(i * 100) for i in range(1, 10)]


# Review au
@pytest.mark.parametrize("text", [
    "step,accuracy,mean_tokens\n1,0.1,312\n2,0.2,345\n3,0.25,390\n4,0.3,371",  # a mean length, as integers
    "step,correct\n10,12\n20,15\n30,19\n40,17",  # problems solved of an eval set
    "step,n\n1,1\n2,2\n3,3\n4,2",
], ids=["mean-tokens", "correct", "small-count"])
def test_a_whole_number_column_that_falls_in_its_last_row_keeps_it(tmp_path, text):
    # A spreadsheet export (no newline at its end) whose last column of whole numbers rose and then fell, written
    # whole: 371 after 390 begins no count the column reaches next (391..480); the row was dropped as a counter cut.
    f = tmp_path / "log.csv"
    f.write_text(text)
    (c,) = read_csv(f, "step", text.split("\n")[0].split(",")[1], bounded=False)
    assert c.x.size == 4, c.notes


@pytest.mark.parametrize("text", [
    "step,acc,lr\n1,0.5,1e-10\n2,0.6,2e-10\n3,0.7,5e-10\n4,0.8,1e-9",  # JavaScript's Number#toString, past 1e-9
    "step,acc,loss\n1,0.5,3.0E10\n2,0.6,2.0E10\n3,0.7,1.5E10\n4,0.8,9.0E9",  # Java's Double.toString, below 1e10
], ids=["javascript", "java"])
def test_an_unpadded_exponent_one_digit_shorter_is_a_whole_number(tmp_path, text):
    # Writers that pad no exponent write e-9 after e-10s as the value crosses a power of ten: the decade next to the
    # last, where a cut leaves a prefix decades away ('e+1' of 'e+18'). The row was dropped as cut in its exponent.
    f = tmp_path / "log.csv"
    f.write_text(text)
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0], c.notes


def test_a_padded_exponent_cut_short_is_left_out(tmp_path):
    # Python's repr pads its exponent to two digits ('1e-05'): '1e-0' of '1e-05' is a cut, decades from e-05.
    f = tmp_path / "log.csv"
    f.write_text("step,acc,kl\n1,0.5,3e-05\n2,0.6,2e-05\n3,0.7,1e-05\n4,0.8,1e-0")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [1.0, 2.0, 3.0] and any("exponent" in n for n in c.notes)


# Review ax
@pytest.mark.parametrize("text", [
    # numpy.savetxt's default '%.18e' and C's '%e' pad the exponent to two digits: 'e-0' of 'e-01' is cut
    "step,acc\n" + "\n".join(f"{s:.18e},{a:.18e}" for s, a in [(1, .388), (2, .45), (3, .51), (4, .55)])
    + "\n5.000000000000000000e+00,5.9e-0",
    "step,reward\n" + "\n".join(f"{s:.6e},{a:.6e}" for s, a in [(1, 11.0), (2, 12.5), (3, 13.1), (4, 14.2)])
    + "\n5.000000e+00,1.52e+0",
], ids=["acc-e-01", "reward-e+01"])
def test_a_padded_exponent_cut_next_to_its_decade_is_left_out(tmp_path, text):
    f = tmp_path / "log.csv"
    f.write_text(text)
    (c,) = read_csv(f, "step", text.split("\n")[0].split(",")[1], bounded=False)
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0] and any("exponent" in n for n in c.notes), (c.y.tolist(), c.notes)


@pytest.mark.parametrize("cut", ["1", "10"])
def test_a_counter_cut_after_its_interval_widens_is_left_out(tmp_path, cut):
    # Logged every 10 steps, then every 50: '1' or '10' of '100' after '50' lies outside 51..70 (twice the largest
    # rise), so it is kept, and the compute column then decreases: the whole file is refused.
    f = tmp_path / "log.csv"
    f.write_text("acc,step\n" + "\n".join(f"0.{i},{i}0" for i in range(1, 6)) + f"\n0.6,{cut}")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [10.0, 20.0, 30.0, 40.0, 50.0]


def test_a_markdown_table_cut_before_its_closing_pipe_is_read_without_that_line(tmp_path):
    # A table a run prints row by row, killed inside its last row: one cell fewer made the delimiter sniffer give
    # up and the whole table was read as one column ("no y column 'acc'; available columns: '| step | acc |...'").
    f = tmp_path / "table.md"
    f.write_text("| step | acc | loss |\n|---|---|---|\n" + "".join(f"| {i} | 0.{i} | 0.9 |\n" for i in range(1, 6))
                 + "| 6 | 0.6 | 0.")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert any("lacks the closing '|' every earlier line has" in n for n in c.notes)
    f.write_text(f.read_text() + "8 |")  # whole: read to its end
    assert read_csv(f, "step", "acc")[0].x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


# Review ba
def test_a_count_metric_that_falls_keeps_its_last_row(tmp_path):
    # num_correct rose 40, 42, 45, 50 and fell to 7 in the finished file's last row (no newline after it, as
    # spreadsheet exports end). 70 lies within twice 50, so '7' is taken for a cut '70': the row is dropped.
    # Before 4d1375f (the range 51..60) it was kept.
    f = tmp_path / "log.csv"
    f.write_text("step,acc,num_correct\n1,0.4,40\n2,0.45,42\n3,0.5,45\n4,0.55,50\n5,0.3,7")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert any("'7' in column 'num_correct', is below the one before it (50)" in n and "may be cut" in n
               for n in c.notes), c.notes


# Review ba
def test_a_log_spaced_step_cut_short_is_left_out(tmp_path):
    # Evaluations at 10, 25, 50, 100, 250, 500, 1000, killed inside '2500': '25' is read as a value and the whole
    # file is refused as a compute that decreases.
    f = tmp_path / "log.csv"
    f.write_text("acc,step\n" + "".join(f"0.{i + 1},{s}\n" for i, s in enumerate([10, 25, 50, 100, 250, 500, 1000]))
                 + "0.8,25")
    (c,) = read_csv(f, "step", "acc")
    assert c.x.tolist() == [10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0]


def test_markdown_tables_with_escaped_pipes_or_only_opening_pipes_are_read(tmp_path):
    # Review ba: GitHub's escaped pipe in a cell ('a \| b') split the cell; a table whose lines open with '|' and
    # do not close with one kept its rule row ("'---' is not a number").
    f = tmp_path / "t.md"
    f.write_text("| step | acc | note |\n|---|---|---|\n| 1 | 0.5 | a \\| b |\n| 2 | 0.6 | c |\n| 3 | 0.7 | d |\n")
    assert read_csv(f, "step", "acc")[0].y.tolist() == [0.5, 0.6, 0.7]
    f.write_text("| step | acc\n|---|---\n| 1 | 0.5\n| 2 | 0.6\n| 3 | 0.7\n")
    assert read_csv(f, "step", "acc")[0].y.tolist() == [0.5, 0.6, 0.7]


# Review bb
def test_a_new_runs_first_row_last_in_a_run_column_table_is_no_cut(tmp_path):
    """A table of runs (run column) whose last line, with no newline after it, is run b's first evaluation: its
    compute (20e15, as many digits as a's 50e15: no prefix of a larger number) is below run a's last, which says
    nothing of b's own counter. f3abdf3 dropped it as 'cut short', and run b with it; the code before kept it."""
    lines = ["run,step,pass_rate,flops"] + [f"a,{s},{0.1 + s / 1000:.3f},{s * 10**15}" for s in range(10, 60, 10)]
    lines.append(f"b,20,0.120,{20 * 10**15}")
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(lines))  # (a spreadsheet export: no newline after the last line)
    assert [c.name for c in read_csv(path, "flops", "pass_rate")] == ["a", "b"]


def test_backslashes_in_a_markdown_tables_run_names_are_kept(tmp_path):
    r"""GitHub reads only '\|' as an escape in a table cell: 'C:\runs\a' renders as written. f3abdf3's
    escapechar read it 'C:runsa' (and 'D:\out\ ' as 'D:out'), so --run with the name as shown found nothing."""
    rows = "".join(f"| C:\\runs\\a | {0.1 * k:.2f} | {10 * k} |\n" for k in range(1, 5))
    path = tmp_path / "runs.md"
    path.write_text("| run | pass_rate | step |\n|---|---|---|\n" + rows)
    assert [c.name for c in read_curves(path, "step", "pass_rate")] == ["C:\\runs\\a"]


# Review bp
def test_a_second_markdown_table_after_a_blank_line_is_passed_over(tmp_path, capsys):
    from scalerl.cli import main

    log = tmp_path / "results.md"
    log.write_text("| step | acc |\n|---|---|\n| 1 | 0.10 |\n| 2 | 0.20 |\n| 3 | 0.30 |\n| 4 | 0.35 |\n| 5 | 0.40 |\n"
                   "| 6 | 0.42 |\n\n| step | loss |\n|---|---|\n| 1 | 5 |\n| 2 | 4 |\n")
    code = main(["fit", str(log), "--x", "step", "--y", "acc"])
    out, err = capsys.readouterr()
    # With a line of text between the tables the second is passed over, said in a note; a blank line alone (which is
    # what ends a Markdown table) made it rows of the first.
    assert code == 0, err
    assert "Markdown table of lines 1-8; 4 line(s) around it (line 10, 11, 12, 13) passed over" in out, out


# Review br
def test_a_rule_like_row_inside_a_markdown_table_drops_no_data_rows(tmp_path):
    path = tmp_path / "results.md"
    rows = [f"| {i} | 0.{i} |" for i in range(1, 10)]
    path.write_text("| step | acc |\n|---|---|\n" + "\n".join(rows[:6]) + "\n|---|---|\n" + "\n".join(rows[6:]) + "\n")
    # Line 8 is `| 6 | 0.6 |`, a data row; line 9 the rule-like row. Before the change: a one-line error naming line 9
    # ('---' is not a number). Today: 5 points (steps 1-5), and a note that lines 8-12 were "passed over".
    try:
        curve = read_curves(path, "step", "acc")[0]
    except InputError as exc:
        assert "line 9" in str(exc), str(exc)
        return
    assert len(curve) == 9, f"{len(curve)} of the 9 rows read"


def test_a_text_line_with_a_pipe_after_a_blank_line_is_not_a_row_of_the_table(tmp_path):
    path = tmp_path / "results.md"
    rows = "".join(f"| {i} | 0.{i} |\n" for i in range(1, 7))
    path.write_text("| step | acc |\n|---|---|\n" + rows + "\nNote: acc is the mean | std over 3 seeds\n")
    # A blank line ends a Markdown table (the fix of review bp says so for a second table), so the note is no row.
    assert len(read_curves(path, "step", "acc")[0]) == 6


# Review bt

def _points(curves):
    return [(float(x), float(y)) for c in curves for x, y in zip(c.x, c.y)]


FOUR = [(1.0, 0.1), (2.0, 0.2), (3.0, 0.3), (4.0, 0.4)]


def test_markdown_table_with_blank_lines_between_rows_is_read(tmp_path):
    p = tmp_path / "table.md"
    p.write_text("| step | acc |\n|---|---|\n\n| 1 | 0.1 |\n\n| 2 | 0.2 |\n\n| 3 | 0.3 |\n\n| 4 | 0.4 |\n")
    assert _points(read_csv(p, "step", "acc")) == FOUR


def test_markdown_table_with_cr_cr_lf_line_ends_is_read(tmp_path):
    p = tmp_path / "table.md"
    p.write_bytes(b"| step | acc |\r\r\n|---|---|\r\r\n| 1 | 0.1 |\r\r\n| 2 | 0.2 |\r\r\n| 3 | 0.3 |\r\r\n"
                  b"| 4 | 0.4 |\r\r\n")
    assert _points(read_csv(p, "step", "acc")) == FOUR


# Review bv
def test_a_note_after_a_blank_line_under_a_table_without_outer_pipes_is_not_a_row(tmp_path):
    # A notebook's table pasted into a GitHub issue (the format docs/forecasting.md names), then the user's
    # sentence. GitHub ends the table at the blank line; so did scalerl until review bt's change.
    p = tmp_path / "issue.md"
    p.write_text("Step | acc\n-- | --\n1 | 0.1\n2 | 0.2\n3 | 0.3\n4 | 0.4\n\n"
                 "Note: acc is the mean | std over 3 seeds\n")
    assert _points(read_curves(p, "Step", "acc")) == FOUR


def test_a_column_of_a_later_table_is_not_said_to_be_missing(tmp_path):
    p = tmp_path / "README.md"
    p.write_text("# Results\n\n| run | acc |\n|---|---|\n| a | 0.4 |\n\n## Curve of run a\n\n"
                 "| step | acc |\n|---|---|\n| 1 | 0.1 |\n| 2 | 0.2 |\n| 3 | 0.3 |\n| 4 | 0.4 |\n")
    try:
        got = _points(read_curves(p, "step", "acc"))
    except InputError as exc:
        # Acceptable: an error that does not say the file lacks the column, or says the table holding it was passed
        # over (lines 9-14).
        assert "passed over" in str(exc) or "line 9" in str(exc), str(exc)
    else:
        assert got == FOUR


def test_a_markdown_cell_opening_with_a_double_quote_does_not_swallow_rows(tmp_path):
    # A compact table (no padding around its pipes) with a ditto mark in its run column.
    p = tmp_path / "runs.md"
    p.write_text('|run|step|acc|\n|-|-|-|\n|a|1|0.1|\n|"|2|0.2|\n|"|3|0.3|\n|b|4|0.4|\n')
    curves = read_curves(p, "step", "acc")
    # Read today: runs 'a' (step 1), '|2|0.2|\\n|' (step 3) and 'b' (step 4): the row of step 2 is gone, unsaid.
    assert sorted(_points(curves)) == FOUR, [(c.name, _points([c])) for c in curves]


# Review bx
def test_a_note_after_a_spaced_table_without_outer_pipes_is_not_a_row(tmp_path):
    from scalerl.curves.io import read_curves

    # review bv's notebook table pasted into a GitHub issue, with a note, saved on Windows and written again in text
    # mode (review bt: every line end \r\r\n, a blank line after each row).
    p = tmp_path / "issue.md"
    p.write_bytes(b"Step | acc\r\r\n-- | --\r\r\n1 | 0.1\r\r\n2 | 0.2\r\r\n3 | 0.3\r\r\n4 | 0.4\r\r\n\r\r\n"
                  b"Note: acc is the mean | std over 3 seeds\r\r\n")
    assert _points(read_curves(p, "Step", "acc")) == FOUR


def test_an_unknown_column_of_a_one_table_document_does_not_advise_another_table(tmp_path):
    from scalerl.curves.io import read_curves

    p = tmp_path / "README.md"
    p.write_text("# Results\n\nWe trained for 4 steps.\n\n| step | acc |\n|---|---|\n| 1 | 0.1 |\n| 2 | 0.2 |\n"
                 "| 3 | 0.3 |\n| 4 | 0.4 |\n\nThe accuracy rises.\n")
    with pytest.raises(InputError) as err:
        read_curves(p, "step", "accuracy")
    message = str(err.value)
    assert "'acc'" in message
    # Saving the one table in a file of its own gives the same error: the advice does not help.
    assert "file of its own" not in message and "first Markdown table" not in message, message


# ----------------------------------------------------------------------------- bw: fit --verdict, the run report
