"""The names of a run's report files -- apart from the report's code (:mod:`scalerl.train.report`), which
needs scipy and matplotlib: the run directory's bookkeeping reads these names in every process, a GPU box
without those packages included."""

#: The report's files in the run directory: the page, its Markdown twin and its two figures.
REPORT_HTML, REPORT_MD, CURVE_PNG, SETS_PNG = "report.html", "report.md", "curve.png", "sets.png"
REPORT_FILES = (REPORT_HTML, REPORT_MD, CURVE_PNG, SETS_PNG)
