"""Property-based tests: random arrays and random files never give a traceback or a silent
nonsense fit -- either a finite fit or a clear InputError / exit status 2."""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalerl.cli import main
from scalerl.curves import Curve, fit_sigmoid
from scalerl.errors import InputError

finite = st.one_of(st.floats(min_value=-1e3, max_value=1e3), st.sampled_from([math.nan, math.inf, -math.inf]))
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.lists(st.tuples(finite, finite), min_size=0, max_size=30))
def test_random_arrays_fit_or_refuse(points):
    x = [p[0] for p in points]
    y = [p[1] for p in points]
    try:
        curve = Curve.from_arrays(x, y)
        fit = fit_sigmoid(curve)
    except InputError as exc:
        assert str(exc)
        return
    assert all(math.isfinite(v) for v in (fit.A, fit.B, fit.C_mid, fit.R0, fit.sse))
    assert 0.0 <= fit.R0 < fit.A <= 1.0 and fit.B > 0 and fit.C_mid > 0


@SETTINGS
@given(
    st.lists(st.floats(min_value=0, max_value=1, allow_nan=False), min_size=6, max_size=40),
    st.floats(min_value=0.01, max_value=1e4),
)
def test_rising_random_curves_give_sane_fits(ys, scale):
    y = np.maximum.accumulate(np.asarray(ys))  # a rising metric
    x = np.linspace(scale / len(y), scale, len(y))
    try:
        fit = fit_sigmoid(Curve.from_arrays(x, y))
    except InputError:
        return
    assert fit.A >= fit.R0 and fit.sse >= 0
    assert np.all(np.isfinite(fit.law(x)))


cell = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-5, 5).map(str),
    st.sampled_from(["", "nan", "abc", "1e400", "-0", "0.5"]),
)


@SETTINGS
@given(st.lists(st.tuples(cell, cell), max_size=25), st.booleans())
def test_random_csv_files_through_the_cli(tmp_path_factory, rows, comment):
    p = tmp_path_factory.mktemp("csv") / "run.csv"
    body = ("# comment\n" if comment else "") + "c,r\n" + "".join(f"{a},{b}\n" for a, b in rows)
    p.write_text(body)
    code = main(["fit", str(p), "--x", "c", "--y", "r", "--bootstrap", "20", "--json"])
    assert code in (0, 2)


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_as_a_jsonl_log(tmp_path_factory, blob):
    p = tmp_path_factory.mktemp("jsonl") / "runlog.jsonl"
    p.write_bytes(blob)
    code = main(["fit", str(p), "--x", "c", "--y", "r", "--bootstrap", "20"])
    assert code in (0, 2)


def test_x_over_hundreds_of_decades_keeps_c_mid_a_positive_number():
    # (hypothesis found x from 1.8e-217 to 1: the solver's bound on ln C_mid was e^-1997, and C_mid came out 0.0)
    fit = fit_sigmoid(Curve.from_arrays([1.7871958225616805e-217, 7.987432980612467e-99, 1.0, 1.0], [0, 0.5, 0, 1]))
    assert 0 < fit.C_mid < math.inf and 0.0 <= fit.R0 < fit.A <= 1.0


def test_compute_below_the_least_normal_float_fits_or_refuses(tmp_path):
    # (review cy: ln C_mid's bounds crossed for x near 1e-322 -- scipy's "lower bound must be less" traceback)
    log = tmp_path / "sub.csv"
    xs = [1e-322 * 2 ** i for i in range(8)]
    log.write_text("x,y\n" + "".join(f"{x!r},{0.1 + 0.06 * i:.2f}\n" for i, x in enumerate(xs)))
    assert main(["fit", str(log), "--x", "x", "--y", "y", "--bootstrap", "20"]) in (0, 2)

