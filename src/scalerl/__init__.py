"""scalerl: predictable RL post-training for LLMs.

Three parts share one data format, the run log (JSONL):

* ``scalerl.curves`` -- fit sigmoidal compute-performance curves, extrapolate, backtest,
  compare recipes (no torch needed);
* ``scalerl.rl`` / ``scalerl.train`` -- the ScaleRL recipe for Hugging Face causal LMs;
* ``scalerl.study`` -- leave-one-out and sweep studies, fitted and classified.

The package top level imports nothing heavy, so ``import scalerl`` is cheap.
"""

__version__ = "0.1.0"
