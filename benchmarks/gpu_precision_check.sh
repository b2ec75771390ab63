#!/usr/bin/env bash
# GPU check of mixed precision, LoRA and gradient checkpointing (needs torch + transformers + peft; no vLLM, no hub).
# Prints the mixed-precision table on CUDA and four short tiny-model runs on cuda (auto=bf16, fp16, LoRA+GC, PipelineRL).
# Usage: OUT=/tmp/out bash benchmarks/gpu_precision_check.sh   (about 3 minutes on one H200)
OUT=${OUT:-/tmp/gpu_precision_check}; mkdir -p $OUT
set -o pipefail; export PYTHONPATH=src PYTHONUNBUFFERED=1 SCALERL_CACHE=/tmp/cache TOKENIZERS_PARALLELISM=false
nvidia-smi -L; python3 -c "import torch,transformers,peft;print('torch',torch.__version__,'transformers',transformers.__version__,'peft',peft.__version__)"
timeout 120 python3 benchmarks/mixed_precision.py --device cuda 2>&1 | grep -v -i "warn\|scheduler.step" | tee $OUT/bench.txt
i=0
for m in "" "--set precision.compute=fp16" "--set model.lora.rank=8 --set model.gradient_checkpointing=true" "--set pipeline=pipeline-rl-k --set k=2"; do
  i=$((i+1)); o=/tmp/run$i; t0=$(date +%s)
  timeout 150 python3 -m scalerl.cli train --model tiny --steps 6 --eval-every 3 --no-progress --output $o --set run.device=cuda --set pipeline=sync --set k=1 $m > $OUT/run$i.log 2>&1; rc=$?
  python3 - $o "$m" $rc $(( $(date +%s)-t0 )) <<'PY'
import json,sys
o,m,rc,t=sys.argv[1:]
rows=[json.loads(l) for l in open(o+"/runlog.jsonl")][1:]
tr=[r for r in rows if r.get("type")=="train"]; ev=[r for r in rows if r.get("type")=="eval"]
cfg=json.load(open(o+"/final/config.json")) if rc=="0" else {}
print(f"[{m or 'default (auto)'}] exit {rc} {t}s steps {len(tr)} skipped {sum(r['skipped'] for r in tr)} ratio_mean {[round(r.get('loss/ratio_mean',0),4) for r in tr]} loss_scale {tr[-1].get('loss_scale')} val {[r['val/pass_rate'] for r in ev]} final dtype {cfg.get('dtype')}")
PY
  tail -2 $OUT/run$i.log | grep -i error
done
