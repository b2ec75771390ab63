from transformers import AutoTokenizer

from scalerl.models.char_tokenizer import BOS, EOS, PAD, THINK_CLOSE, THINK_OPEN


def test_round_trip_every_printable_character(char_tokenizer):
    text = "47+38=<think>7+8+0=15\n4+3+1=8\n</think>85 Okay, time is up. ~!@#$%^&*()_{}|:\"<>?`-=[]\\;',./"
    ids = char_tokenizer(text).input_ids
    assert ids[0] == char_tokenizer.bos_token_id
    assert char_tokenizer.unk_token_id not in ids
    assert char_tokenizer.decode(ids, skip_special_tokens=True) == text


def test_think_tags_are_single_tokens_that_survive_skip_special(char_tokenizer):
    ids = char_tokenizer(f"{THINK_OPEN}1{THINK_CLOSE}2", add_special_tokens=False).input_ids
    assert len(ids) == 4
    assert char_tokenizer.decode(ids + [char_tokenizer.eos_token_id], skip_special_tokens=True) == "<think>1</think>2"


def test_one_token_per_character(char_tokenizer):
    text = "12+345=\n  x"
    assert len(char_tokenizer(text, add_special_tokens=False).input_ids) == len(text)


def test_special_tokens_and_left_padding(char_tokenizer):
    assert (char_tokenizer.pad_token, char_tokenizer.bos_token, char_tokenizer.eos_token) == (PAD, BOS, EOS)
    assert len({char_tokenizer.pad_token_id, char_tokenizer.bos_token_id, char_tokenizer.eos_token_id}) == 3
    batch = char_tokenizer(["1+1=", "10+10="], padding=True).input_ids
    assert batch[0][:2] == [char_tokenizer.pad_token_id] * 2


def test_unknown_character_maps_to_unk(char_tokenizer):
    assert char_tokenizer("é", add_special_tokens=False).input_ids == [char_tokenizer.unk_token_id]


def test_saves_and_loads_with_auto_tokenizer(char_tokenizer, tmp_path):
    char_tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    text = "99+1=<think>9+1+0=10\n</think>100"
    assert loaded(text).input_ids == char_tokenizer(text).input_ids
    assert len(loaded) == len(char_tokenizer)
    assert loaded.eos_token_id == char_tokenizer.eos_token_id and loaded.padding_side == "left"


def test_interruption_phrase_is_three_tokens_and_any_other_text_still_encodes(char_tokenizer):
    from scalerl.models.char_tokenizer import INTERRUPTION_SENTENCE

    phrase = f"{INTERRUPTION_SENTENCE} {THINK_CLOSE}"
    ids = char_tokenizer(phrase, add_special_tokens=False).input_ids
    assert len(ids) == 3 and char_tokenizer.decode(ids, skip_special_tokens=True) == phrase
    other = "Okay, time is up! </think>"
    ids = char_tokenizer(other, add_special_tokens=False).input_ids
    assert len(ids) == len(other) - len(THINK_CLOSE) + 1 and char_tokenizer.decode(ids) == other


def test_tiny_tokenizer_as_loaded_keeps_the_prompts_whitespace(tmp_path, random_model, char_tokenizer):
    from scalerl.models.loading import load_model

    random_model.save_pretrained(tmp_path)  # as models/tiny.py saves the tiny model: weights, then its tokenizer
    char_tokenizer.save_pretrained(tmp_path)
    _, tokenizer = load_model(str(tmp_path), dtype="float32")
    text = "What is 12 + 30?\nAnswer:"
    assert char_tokenizer.decode(char_tokenizer(text).input_ids, skip_special_tokens=True) == text  # as built
    ids = tokenizer(text).input_ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == text  # as every run and eval loads it
    assert ids == char_tokenizer(text).input_ids
