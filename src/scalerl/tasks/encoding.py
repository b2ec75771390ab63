"""Turn a problem's prompt into the token ids the generator is given.

An instruct model gets its chat template (one user turn -- or the conversation the data gave,
system prompt included -- plus the generation prompt), as it was trained to see; a base model --
the tiny one included -- gets the raw text with the tokenizer's usual special tokens (e.g. BOS);
a conversation then reads as its turns' texts one after another.
"""

from __future__ import annotations

from typing import Any, Sequence

from scalerl.errors import InputError
from scalerl.tasks.base import Problem


def has_chat_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def _chat_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    # transformers 5 returns a BatchEncoding here; 4.x returns the list of ids.
    if hasattr(ids, "keys") and "input_ids" in ids:
        ids = ids["input_ids"]
    return list(ids)


def encode_prompt(tokenizer: Any, text: str) -> list[int]:
    """Token ids of one prompt text: chat template when the tokenizer has one, else the raw text."""
    if has_chat_template(tokenizer):
        return _chat_ids(tokenizer, [{"role": "user", "content": text}])
    return list(tokenizer(text).input_ids)


#: The thinking markers (the math task's answer is what follows the last ``</think>``).
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def opens_thinking(tokenizer: Any, prompt_ids: Sequence[int]) -> bool:
    """Whether the prompt ends by opening the model's thinking: a chat template whose generation prompt does
    (DeepSeek-R1-Distill's and QwQ's end with ``<think>\n``), or a prompt written so (TinyZero's ``Assistant:
    ... <think>``). The completion then holds no ``<think>`` of its own. Only at the end: a ``<think>`` in the
    prompt's text (an instruction to think in ``<think>`` tags) opens nothing."""
    return tokenizer.decode(list(prompt_ids), skip_special_tokens=False).rstrip().endswith(THINK_OPEN)


def graded_texts(tokenizer: Any, prompts: Sequence[Sequence[int]], texts: Sequence[str]) -> list[str]:
    """The completions as the rewards read them: each as the model continues its prompt, so one whose prompt
    ends by opening the thinking (:func:`opens_thinking`) starts with that ``<think>`` -- cut off before its
    ``</think>``, it is still thinking and holds no answer (review cw: a ``\\boxed{}`` guess in the unfinished
    thinking passed). ``prompts[i]`` is ``texts[i]``'s prompt."""
    opened: dict[tuple[int, ...], bool] = {}  # (a prompt repeats once per completion drawn)
    out = []
    for ids, text in zip(prompts, texts):
        key = tuple(ids)
        if key not in opened:
            opened[key] = opens_thinking(tokenizer, ids)
        out.append(THINK_OPEN + text if opened[key] else text)
    return out


def encode_prompts(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    return [encode_prompt(tokenizer, t) for t in texts]


def encode_problem(tokenizer: Any, problem: Problem) -> list[int]:
    """Token ids of a problem's prompt: its conversation where the data gave one, else its text.

    :class:`InputError` (one line, naming the problem) when the chat template does not compile or
    refuses the conversation (Gemma's and Mistral's raise on a system message)."""
    try:
        return _encode(tokenizer, problem)
    except Exception as exc:
        refusal = _template_refusal(tokenizer, problem, exc)
        if refusal is None:
            raise
        raise InputError(refusal) from None


def _template_refusal(tokenizer: Any, problem: Problem, exc: Exception) -> str | None:
    """What to tell the user when ``exc`` is the chat template's own error, else None."""
    try:  # (jinja2 is no dependency of ours: transformers needs it only to run a chat template)
        from jinja2 import TemplateError, TemplateSyntaxError
    except ImportError:
        return None
    if isinstance(exc, TemplateSyntaxError):
        return (f"the chat template of {_model(tokenizer)} does not compile ({exc.message}, template line "
                f"{exc.lineno}); fix chat_template in the model's tokenizer_config.json or chat_template.jinja, "
                "or use another model")
    if isinstance(exc, TemplateError):
        return f"the chat template of {_model(tokenizer)} refuses problem {problem.id} ({exc}); {_refusal_hint(problem)}"
    return None


def _refusal_hint(problem: Problem) -> str:
    """What the user can change when the chat template refuses ``problem``'s conversation."""
    roles = [role for role, _ in problem.messages]
    if "system" in roles:  # Gemma's and Mistral's templates refuse a system message
        return ("change the data to what it accepts (e.g. drop the system message or merge it into the user turn) "
                "or use another model")
    if roles:
        return "change the data's conversations to what it accepts or use another model"
    # The prompt was one user turn (a built-in task's, or --data's prompt text): a template that
    # refuses it wants more (a system message first, say), which only a conversation can give.
    return ("the prompt was one user turn; give the problems as conversations it accepts (--task math --data with a "
            "prompt field holding a list of {role, content} messages, e.g. a system message first) or use another "
            "model")


def _model(tokenizer: Any) -> str:
    return repr(getattr(tokenizer, "name_or_path", "") or "the model")


def _encode(tokenizer: Any, problem: Problem) -> list[int]:
    if not problem.messages:
        return encode_prompt(tokenizer, problem.prompt)
    if has_chat_template(tokenizer):
        return _chat_ids(tokenizer, problem.conversation)
    return list(tokenizer("\n\n".join(content for _, content in problem.messages)).input_ids)


def encode_problems(tokenizer: Any, problems: Sequence[Problem]) -> list[list[int]]:
    return [encode_problem(tokenizer, p) for p in problems]
