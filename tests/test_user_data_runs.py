"""A user's own data and reward through train --resume and eval: data edited under a run, a reward function that
cannot score one evaluation set; prompts with characters the tokenizer has no token for."""

from __future__ import annotations

import json

import pytest


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _user_model(tmp_path, random_model, char_tokenizer):
    """A small local model directory (the random tiny Qwen2 and its character tokenizer): no warm start."""
    model = tmp_path / "model"
    random_model.save_pretrained(model)
    char_tokenizer.save_pretrained(model)
    return model


def _fast_math_args(model, data, reward, output):
    return ["train", "--model", str(model), "--task", "math", "--data", str(data), "--reward", reward,
            "--output", str(output), "--no-progress", "--no-report", "--steps", "1", "--eval-every", "1",
            "--set", "pipeline=sync", "--set", "batch.prompts_per_step=2", "--set", "batch.generations_per_prompt=2",
            "--set", "eval.problems=2", "--set", "eval.samples_per_problem=1", "--set", "length.mode=truncate",
            "--set", "length.max_new_tokens=8", "--set", "forecast.enabled=false"]


def test_resume_after_the_data_file_grew_is_a_one_line_error(tmp_path, random_model, char_tokenizer, capsys):
    from scalerl.cli import main

    model = _user_model(tmp_path, random_model, char_tokenizer)
    data = _write_jsonl(tmp_path / "train.jsonl", [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(60)])
    reward = tmp_path / "my_reward.py"
    reward.write_text("def score(completion, answer):\n    return completion.strip() == answer\n")
    args = _fast_math_args(model, data, f"{reward}:score", tmp_path / "run")
    assert main(args) == 0, capsys.readouterr().err
    with data.open("a") as f:  # more data, then the original command + --resume --steps (README: extends it)
        f.write(json.dumps({"prompt": "100+1=", "answer": "101"}) + "\n")
    capsys.readouterr()
    code = main([*args, "--resume", "--steps", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert "train.jsonl" in err and "Traceback" not in err


def test_resume_after_the_data_file_changed_in_place_is_said(tmp_path, random_model, char_tokenizer, capsys):
    from scalerl.cli import main

    model = _user_model(tmp_path, random_model, char_tokenizer)
    rows = [{"prompt": f"{i}+1=", "answer": str(i + 1)} for i in range(60)]
    data = _write_jsonl(tmp_path / "train.jsonl", rows)
    reward = tmp_path / "my_reward.py"
    reward.write_text("def score(completion, answer):\n    return completion.strip() == answer\n")
    args = _fast_math_args(model, data, f"{reward}:score", tmp_path / "run")
    assert main(args) == 0, capsys.readouterr().err
    # Every answer changed (the prompts, so the held-out split and the row ids, the same).
    _write_jsonl(data, [{**r, "answer": str(int(r["answer"]) + 1000)} for r in rows])
    capsys.readouterr()
    code = main([*args, "--resume", "--steps", "2"])
    err = capsys.readouterr().err
    # Refused, or at least said: the rows the run trained and evaluated on are not the file's any more.
    assert code == 2 or "train.jsonl" in err, err


def test_eval_goes_on_when_only_one_set_fails_every_call(tmp_path, random_model, char_tokenizer, capsys):
    from scalerl.cli import main

    model = _user_model(tmp_path, random_model, char_tokenizer)
    # Set val: answers the function cannot read (int('N/A') raises); set b: plain numbers.
    val = _write_jsonl(tmp_path / "val.jsonl", [{"prompt": f"{i}+1=", "answer": "N/A"} for i in range(3)])
    b = _write_jsonl(tmp_path / "b.jsonl", [{"prompt": f"{i}+2=", "answer": str(i + 2)} for i in range(3)])
    reward = tmp_path / "strict.py"
    reward.write_text("def score(completion, answer):\n    return completion.strip() == str(int(answer))\n")
    code = main(["eval", "--model", str(model), "--task", "math", "--data", str(val), "--reward", f"{reward}:score",
                 "--set", f"task.settings={{eval_data: {{b: {b}}}}}", "--k", "1", "--max-new-tokens", "4",
                 "--no-progress", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err  # as train's first evaluation: 3 of 6 calls failed, not every call
    result = json.loads(out)
    assert set(result["sets"]) == {"val", "b"}
    assert result["reward_errors"] == 3 and result["reward_calls"] == 6


# review fk: characters the tokenizer has no token for are said

@pytest.mark.slow
def test_prompts_the_tokenizer_cannot_encode_are_said(tmp_path, random_model, char_tokenizer, capsys):
    from scalerl.cli import main

    model = tmp_path / "model"
    random_model.save_pretrained(model)
    char_tokenizer.save_pretrained(model)
    rows = [{"prompt": f"What is {i}{op}{i + 1}?", "answer": str(eval(f"{i}{'*' if op == '×' else '-'}{i + 1}"))}
            for i in range(20) for op in ("×", "−")]
    data = tmp_path / "problems.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    code = main(["train", "--model", str(model), "--task", "math", "--data", str(data),
                 "--output", str(tmp_path / "run"), "--no-progress", "--no-report", "--steps", "1", "--eval-every", "1",
                 "--set", "pipeline=sync", "--set", "batch.prompts_per_step=2", "--set",
                 "batch.generations_per_prompt=2", "--set", "eval.problems=2", "--set", "eval.samples_per_problem=1",
                 "--set", "length.mode=truncate", "--set", "length.max_new_tokens=8", "--set", "forecast.enabled=false"])
    out = capsys.readouterr()
    said = (out.out + out.err).lower()
    # Either refused in one line, or trained with a warning that counts the prompts and names a character.
    assert ("unknown" in said or "<unk>" in said or "cannot encode" in said) and ("×" in said or "−" in said), \
        (code, said[-2000:])


def test_an_unknown_token_a_template_adds_is_no_unknown_character(char_tokenizer):
    """Where the unknown token is in a prompt's ids but no character of its text encodes to it (a tokenizer whose
    unknown token is its end of text, which a chat template adds), nothing is said; a '×' is named."""
    from scalerl.tasks.base import Problem
    from scalerl.train.preflight import unknown_characters_note

    unk = char_tokenizer.unk_token_id
    plain, odd = Problem(id="a", prompt="What is 3*4?", answer="12"), Problem(id="b", prompt="What is 3×4?", answer="12")
    encoded = [[*char_tokenizer.encode(p.prompt, add_special_tokens=False), unk] for p in (plain, plain)]
    assert unknown_characters_note(char_tokenizer, [plain, plain], encoded) is None
    note = unknown_characters_note(char_tokenizer, [plain, odd],
                                   [char_tokenizer.encode(p.prompt, add_special_tokens=False) for p in (plain, odd)])
    assert note is not None and note.startswith("1 of 2 prompts") and "'×' in 1" in note, note


def test_an_unknown_character_is_counted_once_per_prompt_and_said_beside_a_positions_refusal(char_tokenizer,
                                                                                             random_model):
    """A prompt held by the training data and an evaluation set is one prompt of the count (FM's note: counted
    twice); where the positions check refuses the run, the warning goes with the refusal -- the run stops before it
    could be printed (FQ's note)."""
    from scalerl.errors import InputError
    from scalerl.rl.recipe import LengthConfig
    from scalerl.tasks.base import Problem
    from scalerl.train.preflight import check_positions, unknown_characters_note

    odd = Problem(id="b", prompt="What is 3×4?", answer="12")
    again = Problem(id="val:b", prompt="What is 3×4?", answer="12")
    plain = Problem(id="a", prompt="What is 3*4?", answer="12")
    encode = [char_tokenizer.encode(p.prompt, add_special_tokens=False) for p in (odd, again, plain)]
    note = unknown_characters_note(char_tokenizer, [odd, again, plain], encode)
    assert note is not None and note.startswith("1 of 2 prompts") and "'×' in 1" in note, note
    positions = random_model.config.max_position_embeddings
    with pytest.raises(InputError, match="also: 1 of 1 prompts hold characters the tokenizer has no token for"):
        check_positions(random_model, char_tokenizer, [odd], LengthConfig(mode="truncate", max_new_tokens=positions),
                        lambda room: f"lower the budget to {room}")


def test_unknown_characters_note_counts_a_conversation_apart_from_the_plain_prompt_of_its_joined_text(char_tokenizer):
    """A training conversation (system 'Solve: ', user '3×4') and an evaluation set's plain prompt 'Solve: 3×4' are two
    prompts to the model (other token ids: the turns are joined with a blank line, or a chat template's markers), but
    the note counts them as one ('1 of 1 prompts', "'×' in 1"): its key joins the turns' texts with nothing."""
    from scalerl.tasks.base import Problem
    from scalerl.tasks.encoding import encode_problem
    from scalerl.train.preflight import unknown_characters_note

    conversation = Problem("train:1", "3×4", "12", messages=(("system", "Solve: "), ("user", "3×4")))
    plain = Problem("val:1", "Solve: 3×4", "12")
    encoded = [encode_problem(char_tokenizer, p) for p in (conversation, plain)]
    assert encoded[0] != encoded[1]  # two prompts to the model
    note = unknown_characters_note(char_tokenizer, [conversation, plain], encoded)
    assert note is not None and note.startswith("2 of 2 prompts") and "'×' in 2" in note, note
