"""scalerl.generate: sampling backends behind one interface.

* :mod:`~scalerl.generate.base` -- the ``Generator`` protocol, ``SamplingParams``, ``Completion``,
  the ``LengthController`` / ``LengthState`` protocols (no torch);
* :mod:`~scalerl.generate.sampling` -- next-token sampling and the log-prob convention the
  trainer must share (fp32, after temperature, top-p not folded in);
* :mod:`~scalerl.generate.hf` -- ``HFGenerator``: KV-cache sampling loop on a Hugging Face model,
  in-flight weight updates;
* :mod:`~scalerl.generate.logprobs` -- teacher-forced ``log pi_train`` of completions, same layout.
"""
