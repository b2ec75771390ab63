#!/usr/bin/env bash
# GPU check (one CUDA GPU, under 10 minutes; torch + transformers only: no vLLM, no hub, no internet,
# no `pip install -e .` -- the repository runs from PYTHONPATH=src).
#   1. benchmarks/gpu_check.py: a random ~90M-parameter Qwen2 saved in bf16; the FP32 head's log-prob
#      agreement between the HF generator and the trainer (bf16 compute); bf16 training, one process;
#      the same run as a one-rank FSDP2 trainer group on NCCL (what --nproc N runs per GPU); samples/s.
#      Then the LM head whole vs in chunks (peak memory), the decode loop all rows vs a few at a time,
#      and the activation probe's prediction against the allocator's peak; bf16 training and decoding
#      with cuDNN's attention kernel allowed and off; an fp32 FSDP pair that compares step by step; a one-rank
#      group joined as --nproc joins it (NCCL bound to the GPU, the gloo object group, a sharded checkpoint).
#      One GPU: no check here runs two NCCL ranks (that needs two GPUs; docs/distributed.md says what is unproven).
#      (On one H200 the script of 2026-12-04 took 324 s, part 2 about 150 s of it; on one H100 the
#      whole script with every stage took 469 s on 2026-12-06: benchmarks/figures/gpu_check_h100.txt.
#      Give the device call ~560 s.)
#   2. mixed precision (was gpu_precision_check.sh): benchmarks/mixed_precision.py on CUDA and short
#      tiny-model runs on cuda (auto=bf16, fp16, PipelineRL-2; LoRA + gradient checkpointing when peft is there).
# Usage: OUT=/tmp/out bash benchmarks/gpu_check.sh       (figures in $OUT/gpu_check.txt and $OUT/*.log)
#        bash benchmarks/gpu_check.sh --dry               (CPU, tiny model, part 1 only: what the tests run)
OUT=${OUT:-/tmp/gpu_check}; mkdir -p "$OUT"; export OUT
set -o pipefail; export PYTHONPATH=src PYTHONUNBUFFERED=1 SCALERL_CACHE=${SCALERL_CACHE:-/tmp/scalerl-cache} TOKENIZERS_PARALLELISM=false
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
if [ "$1" = "--dry" ]; then
  exec $PY benchmarks/gpu_check.py --device cpu --tiny
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L | tee -a "$OUT/gpu_check.txt"
$PY - <<'PY' 2>&1 | tee -a "$OUT/gpu_check.txt"
import importlib.util, torch, transformers
print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available())
for name in ("peft", "scipy", "matplotlib", "ray", "vllm", "math_verify"):
    print(f"  optional {name}: {'yes' if importlib.util.find_spec(name) else 'no (not needed by part 1)'}")
PY
# 1. (the 100M model, log-probs, bf16 training, FSDP on NCCL)
timeout 480 $PY benchmarks/gpu_check.py --device cuda 2>&1 | grep -v -i "warn" | tee "$OUT/part1.log" | grep -v "shards"
echo "part 1 exit ${PIPESTATUS[0]}" | tee -a "$OUT/gpu_check.txt"
# 2. mixed precision on the tiny model
timeout 120 $PY benchmarks/mixed_precision.py --device cuda 2>&1 | grep -v -i "warn\|scheduler.step" | tee -a "$OUT/gpu_check.txt"
# Each run names its pipeline (sync unless it is the PipelineRL-2 one), so no option is given twice.
runs=("--set pipeline=sync --set k=1 --set precision.compute=auto" "--set pipeline=sync --set k=1 --set precision.compute=fp16"
      "--set pipeline=pipeline-rl-k --set k=2")
$PY -c "import peft" 2>/dev/null && runs+=("--set pipeline=sync --set k=1 --set model.lora.rank=8 --set model.gradient_checkpointing=true")
i=0
for m in "${runs[@]}"; do
  i=$((i+1)); o=$(mktemp -d)/run$i; t0=$(date +%s)
  timeout 90 $PY -m scalerl.cli train --model tiny --steps 6 --eval-every 3 --no-progress --output $o \
    --set run.device=cuda --set forecast.enabled=false $m > "$OUT/run$i.log" 2>&1; rc=$?
  $PY - $o "$m" $rc $(( $(date +%s)-t0 )) <<'PY' 2>&1 | tee -a "$OUT/gpu_check.txt"
import json, os, sys
o, m, rc, t = sys.argv[1:]
if not os.path.exists(o + "/runlog.jsonl"):
    sys.exit(f"[{m}] exit {rc} {t}s: no run log (see run log file)")
rows = [json.loads(l) for l in open(o + "/runlog.jsonl")][1:]
tr = [r for r in rows if r.get("type") == "train"]; ev = [r for r in rows if r.get("type") == "eval"]
cfg = json.load(open(o + "/final/config.json")) if os.path.exists(o + "/final/config.json") else {}
print(f"[{m.replace('--set pipeline=sync --set k=1', 'sync').strip()}] exit {rc} {t}s steps {len(tr)} skipped {sum(r['skipped'] for r in tr)} "
      f"ratio_mean {[round(r.get('loss/ratio_mean', 0), 4) for r in tr]} loss_scale {tr[-1].get('loss_scale') if tr else None} "
      f"val {[r['val/pass_rate'] for r in ev]} final dtype {cfg.get('dtype')}")
PY
done
echo "gpu_check.sh: done; figures in $OUT/gpu_check.txt"
