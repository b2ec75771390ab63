"""mlx-lm's and mlx-lm-lora's consoles (``Iter N: ...`` reports): columns, the iterations a validation
followed, and its trained tokens. The real consoles are in test_real_samples.py; the lines here are written
from the trainers' f-strings (mlx-examples' llms/mlx_lm/tuner/trainer.py before June 2024, mlx-lm-lora's
trainer/grpo_trainer.py of 2026)."""

from pathlib import Path

import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import detect_format
from scalerl.curves.mlx_lm_log import read_mlx_lm_rows
from scalerl.errors import InputError

RULE, THIN = "=" * 80, "-" * 80


def _grpo_block(it, loss, reward):
    return [RULE, f"Iter {it}:", THIN, f"Loss: {loss:.3f}", f"Total Rewards:  μ={reward:.3f}, σ=0.250",
            "Group Rewards:  μ=0.400, σ=0.100", "KL Divergence: 0.000123456789", THIN, "Generation Stats:",
            "  • Avg tokens: 123.4", "  • Min tokens: 12", "  • Max tokens: 256 (limit: 256)", "  • Hit limit: 12.5%",
            THIN, "Individual Reward Functions:", "  • accuracy: μ=0.500, σ=0.500, cov=100.00%", THIN,
            "Clipping:  low=0.000, high=0.010, total=0.010", "Learning Rate: 1.0000e-05",
            "Speed: 0.123 it/s, 45.6 tok/s", "Memory: 12.345GB", RULE, ""]


def test_mlx_lm_lora_grpo_report_blocks(tmp_path):
    p = tmp_path / "grpo.log"
    lines = ["Starting GRPO training..., iters: 20", "Iter 1: Val loss 0.500, Val took 3.000s",
             *_grpo_block(10, 0.012, 0.75), *_grpo_block(20, 0.010, 0.875),
             "Iter 20: Saved adapter weights to adapters/adapters.safetensors and adapters/0000020_adapters.safetensors."]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect_format(p) == "mlx-lm"
    rows, notes = read_mlx_lm_rows(p)
    assert [r["step"] for r in rows] == [0, 10, 20] and not notes
    row = rows[1]
    assert row["train_loss"] == 0.012 and row["total_rewards_mean"] == 0.75 and row["total_rewards_std"] == 0.25
    assert row["accuracy_mean"] == 0.5 and row["accuracy_coverage"] == 1.0 and row["hit_limit"] == 0.125
    assert row["max_tokens"] == 256 and row["clipping_high"] == 0.01 and row["kl_divergence"] == 0.000123456789
    assert row["iterations_per_second"] == 0.123 and row["tokens_per_second"] == 45.6 and row["peak_memory"] == 12.345
    (curve,) = read_curves(p, "step", "total_rewards_mean")
    assert list(curve.x) == [10, 20] and list(curve.y) == [0.75, 0.875]


def test_a_validation_printed_after_its_iterations_report_followed_that_update(tmp_path):
    """mlx-examples before June 2024 validated after the update and printed it after the training report of
    the same iteration: ``Iter 200: Val`` follows 200 iterations (since: before the 200th update, 199)."""
    p = tmp_path / "lora.log"
    lines = [f"Iter {n}: Train loss {3 - n / 100:.3f}, Learning Rate 1.000e-05, It/sec 0.800, Tokens/sec 80.000, "
             f"Trained Tokens {100 * n}" for n in range(10, 210, 10)]
    lines.insert(0, "Iter 1: Val loss 2.480, Val took 0.732s")
    lines.append("Iter 200: Val loss 1.250, Val took 0.700s")
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (curve,) = read_curves(p, "trained_tokens", "val_loss", bounded=False)
    assert list(curve.x) == [100.0, 20000.0]  # iteration 1: a tenth of the way to the report at 10 (1000)
    assert list(read_curves(p, "step", "val_loss", bounded=False)[0].x) == [1, 200]
    assert any("1 validation(s) fall between 'Trained Tokens' reports" in n for n in curve.notes)


def test_a_validation_after_the_last_token_report_has_no_tokens(tmp_path):
    p = tmp_path / "lora.log"
    p.write_text("Iter 10: Train loss 2.000, Trained Tokens 1000\nIter 20: Val loss 1.500, Val took 1.000s\n"
                 "Iter 30: Val loss 1.400, Val took 1.000s\n", encoding="utf-8")
    (curve,) = read_curves(p, "step", "val_loss", bounded=False)
    assert list(curve.x) == [19, 29]
    with pytest.raises(InputError) as error:
        read_curves(p, "trained_tokens", "val_loss", bounded=False)
    assert "no rows with finite 'trained_tokens' and 'val_loss'" in str(error.value)


TABLE_UI = Path(__file__).parent / "data" / "mlx_lm_table_ui.log"


def test_mlx_lm_table_ui_of_june_2026():
    """mlx-lm's table UI (``mlx_lm/cli_ui.py``'s ``TrainUI``, June 2026: ``  iter   train_loss     tok/s     tokens``
    over ``  10    2.600 ▼      161    3.3k`` and ``   1    val 2.890    5.27s`` rows, rich's colours forced into a
    redirected log) was "a text log without ... mlx-lm 'Iter N: ...' reports". The file is what that UI wrote,
    driven through mlx-lm's own cli_ui.py (mlx.core stubbed) and redirected to a file: header panel, colours,
    the final progress bar."""
    assert detect_format(TABLE_UI) == "mlx-lm"
    [val] = read_curves(TABLE_UI, "step", "val_loss", bounded=False)
    assert list(val.x) == [0, 19, 39, 59] and list(val.y) == [2.89, 2.7, 2.5, 2.3]  # before iteration N's update
    [train] = read_curves(TABLE_UI, "trained_tokens", "train_loss", bounded=False)
    assert list(train.x) == [3300, 6600, 9900, 13300, 16600, 19900]
    assert list(train.y) == [2.6, 2.5, 2.45, 2.3, 2.2, 2.1]
    assert any("read from the table's thousands" in n for n in train.notes)
    [speed] = read_curves(TABLE_UI, "step", "tokens_per_second", bounded=False)
    assert list(speed.y) == [161, 161, 161, 1614, 1614, 1614]  # '1,614'
    [took] = read_curves(TABLE_UI, "step", "val_time", bounded=False)
    assert list(took.y) == [5.27, 5.46, 5.67, 5.86]


def test_mlx_lm_lora_sft_report_trained_tok_is_trained_tokens(tmp_path):
    # mlx-lm-lora's trainer/sft_trainer.py (May 2025 on; checked at dfaaaed of August 2026): the validation
    # at the top of iteration N, then the report after it, written with tqdm.write and a leading newline --
    # 'trained_tok' for what its callback logs as 'trained_tokens'.
    p = tmp_path / "sft.log"
    lines = ["Iter 1: Val loss 2.345, Val took 3.456s", ""]
    for it, loss, tokens in ((10, 1.234, 12345), (20, 1.134, 24690), (30, 1.034, 37035)):
        if it == 20:
            lines.append(f"Iter {it}: Val loss 2.145, Val took 3.456s")
        lines += ["", f"Iter {it}: loss {loss:.3f}, lr {1e-5:.3e}, it/s {0.5:.3f}, tok/s {123.456:.3f}, "
                      f"trained_tok {tokens}, peak_mem {12.345:.3f}GB"]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect_format(p) == "mlx-lm"
    rows, notes = read_mlx_lm_rows(p)
    assert "trained_tok" not in {k for r in rows for k in r}
    assert [r["trained_tokens"] for r in rows if "train_loss" in r] == [12345, 24690, 37035]
    (curve,) = read_curves(p, "trained_tokens", "val_loss", bounded=False)
    # the validation before iteration 1's update at 0 tokens, the one before iteration 20's between 10 and 20
    assert list(curve.x) == [0.0, 12345 + (24690 - 12345) * 9 / 10]
    assert any("interpolated" in n for n in notes)
