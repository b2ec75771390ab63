"""scalerl.study: run a family of small runs, fit each, and say which choices move the ceiling
(A) and which only the efficiency (B, C_mid) -- the paper's method as one command.

    scalerl study --family loo --steps 400 --eval-every 10 --output runs/study-loo
    scalerl report runs/study-loo

Modules, in the order data flows through them:

  spec.py      StudySpec: what to run (family, base, values, seeds, budget, overrides) and how
  families.py  the family registry: loo, recipes, batch-size, generations, gen-length, model-size
  runner.py    plan every (variant, seed) run, then run / resume / skip each (local or Ray)
  analysis.py  curves from the run logs -> fits, classifications, common-A view, extrapolation
  paper.py     what the paper says each component moves (docs/paper.md), for the agree / disagree column
  report.py    report.md, report.html, analysis.json and the figures, from the logs alone
"""
