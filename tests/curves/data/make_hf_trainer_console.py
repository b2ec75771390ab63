"""Write tests/curves/data/hf_trainer_console_resumed.log: the console of a Hugging Face ``Trainer``
(transformers 5.25, CPU, a 2-layer GPT-2 of random weights on random tokens: nothing downloaded)
that a resumed training was appended to (``tee -a``), with transformers' INFO logging on
(``transformers.logging.set_verbosity_info()``, as the example scripts do), so that each launch
prints its banner (``***** Running training *****``, ``Resuming training from checkpoint ...``).

    python make_hf_trainer_console.py OUT_DIR > console.log 2>&1             # killed at checkpoint-10
    python make_hf_trainer_console.py OUT_DIR resume >> console.log 2>&1     # from checkpoint-10

``eval_on_start`` evaluates before training -- and, resumed, evaluates the checkpoint it loaded at
the checkpoint's step and epoch again (as axolotl did with eval_steps = save_steps,
axolotl-ai-cloud/axolotl#3305). 40 steps of one epoch, logging every 2 steps, evaluating and
saving every 5; the first launch is killed (``os._exit``) right after it saved checkpoint-10, its
last printed row step 10's evaluation (epoch 0.25), which the resumed launch prints again.
"""

import os
import sys

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 64, (n, 16), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class Kill(TrainerCallback):
    """Kills the training right after it saved checkpoint-10 (and printed step 10's evaluation)."""

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == 10:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)


def main(out: str, resume: bool) -> None:
    transformers.logging.set_verbosity_info()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2))
    args = TrainingArguments(output_dir=out, max_steps=40, per_device_train_batch_size=4, logging_steps=2,
                             eval_strategy="steps", eval_steps=5, save_steps=5, eval_on_start=True,
                             report_to=[], use_cpu=True, seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(160, 0), eval_dataset=Tokens(16, 1),
                      callbacks=[] if resume else [Kill()])
    trainer.train(resume_from_checkpoint=os.path.join(out, "checkpoint-10") if resume else None)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] == ["resume"])
