"""A console whose report lines are coloured is told as the format its plain text is, and read the same.

The readers take a line's colours off before reading it; the format tests looked at the raw text, so a
log the reader would read was refused as no format at all. The colours come from where a report is
printed: re-logged through loguru (``<level>{message}</level>``: the whole message in one colour,
its codes before the first line and after the last, however many lines the message spans) or through
rich's handler, whose highlighter colours each number (``Iter \\x1b[1;36m10\\x1b[0m: ...``). Each case
colours a real excerpt of tests/curves/data/real_samples that way and reads it beside the plain one.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import detect_format, log_columns

SAMPLES = Path(__file__).parent / "data" / "real_samples"
GREEN, RESET = "\x1b[32m", "\x1b[0m"  # loguru's INFO level colour
NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)")


def _loguru_lines(text: str) -> str:
    """Each non-blank line a message of its own, coloured whole (a report printed a line at a time)."""
    return "".join(f"{GREEN}{line.rstrip(chr(10))}{RESET}\n" if line.strip() else line
                   for line in text.splitlines(True))


def _rich_numbers(text: str) -> str:
    """rich's highlighter: each number bold cyan."""
    return NUMBER.sub("\x1b[1;36m\\1\x1b[0m", text)


def _loguru_message(text: str) -> str:
    """The whole excerpt one message (a dict ``pprint`` spread over lines): codes at its two ends only."""
    return f"{GREEN}{text.rstrip(chr(10))}{RESET}\n"


@pytest.mark.parametrize("name, fmt, x, y, colour", [
    ("torchtune_pr1358.log", "torchtune", "step", "loss", _loguru_lines),
    ("torchtune_pr640.log", "torchtune", "step", "loss", _rich_numbers),
    ("mlx_lm_issue18.log", "mlx-lm", "trained_tokens", "val_loss", _loguru_lines),
    ("mlx_lm_pr330.log", "mlx-lm", "step", "train_loss", _rich_numbers),
    ("mlx_examples_grpo_pr1233.log", "mlx-lm", "step", "train_loss", _loguru_lines),
    ("deepspeed_chat_issue586.log", "deepspeed-chat", "global_step", "average_reward_score", _loguru_lines),
    ("video_r1_grpo_issue86.log", "dict-lines", None, None, _loguru_message),
    ("unsloth_gspo_issue3485.log", "dict-lines", None, None, _loguru_message),
])
def test_a_coloured_console_reads_as_its_plain_text(tmp_path, name, fmt, x, y, colour):
    plain = SAMPLES / name
    coloured = tmp_path / name
    coloured.write_text(colour(plain.read_text(encoding="utf-8")), encoding="utf-8")
    assert "\x1b[" in coloured.read_text(encoding="utf-8")
    assert detect_format(plain) == fmt
    assert detect_format(coloured) == fmt
    assert log_columns(coloured) == log_columns(plain)
    if x is None:  # a single dict: its columns are the read
        return
    ours, theirs = read_curves(coloured, x, y, bounded=False), read_curves(plain, x, y, bounded=False)
    assert len(ours) == len(theirs) == 1
    np.testing.assert_array_equal(ours[0].x, theirs[0].x)
    np.testing.assert_array_equal(ours[0].y, theirs[0].y)
