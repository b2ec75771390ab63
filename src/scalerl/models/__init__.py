"""scalerl.models: the policy a run starts from.

* :func:`~scalerl.models.loading.load_model` -- ``tiny``, a local model directory, or a hub id;
* :mod:`~scalerl.models.tiny` -- the ~1M-parameter Qwen2 with a character tokenizer, warm-started
  on arithmetic and cached under ``$SCALERL_CACHE``;
* :mod:`~scalerl.models.char_tokenizer`, :mod:`~scalerl.models.warmstart` -- its parts.
"""
