"""scalerl.study: run a family of small runs, fit each, and say which choices move the ceiling
(A) and which only the efficiency (B, C_mid) -- the paper's method as one command.

    scalerl study --family loo --steps 400 --eval-every 10 --output runs/study-loo
    scalerl report runs/study-loo

Modules, in the order data flows through them:

  spec.py      StudySpec: what to run (family, base, values, seeds, budget, overrides) and how
  families.py  the family registry: loo, recipes, batch-size, generations, gen-length, model-size
  plan.py      every (variant, seed) run with its directory and resolved config; the budget
  run_state.py each run directory's state (new, partial, done, damaged), checked against the plan
  one_run.py   train / resume / extend / skip one run, and what became of it (Outcome)
  local_runs.py, ray_runs.py   the backends: one after another or in worker processes; Ray tasks
  runner.py    a study from start to end: plan, check, prepare the models, run every run
  analysis.py  curves from the run logs -> fits, classifications, common-A view, extrapolation
  paper.py     what the paper says each component moves (docs/paper.md), for the agree / disagree column
  report.py    report.md, report.html, analysis.json and the figures, from the logs alone
"""
