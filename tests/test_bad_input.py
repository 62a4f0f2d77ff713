"""Bad input gets a ValueError/TypeError that says what was expected and what came."""

import numpy as np
import pytest

import fastlstm_lib as fl
from conftest import MINI, problem

X, PARAMS = problem(MINI)


def forward(x, params):
    return fl.steps.get("baseline").forward(x, params)


@pytest.mark.parametrize("function", [forward, fl.reference_forward])
@pytest.mark.parametrize(
    "x, error, words",
    [
        (X.astype(np.int32), TypeError, "dtype"),
        (X.tolist(), TypeError, "NumPy array"),
        (X[0], ValueError, "batch, seq_len, input_size"),
        (X[:, :, :2], ValueError, "2 features per step but the first layer.s kernel expects 3"),
        (X[:0], ValueError, "at least one"),
        (X[:, :0], ValueError, "at least one"),
        (np.full_like(X, np.nan), ValueError, "NaN"),
    ],
)
def test_bad_x(function, x, error, words):
    x = x if not isinstance(x, np.ndarray) else x.copy()
    with pytest.raises(error, match=words):
        function(x, PARAMS)


def test_steps_want_float32():
    with pytest.raises(TypeError, match=r"float32, got float64 \(convert with .astype\(np.float32\)\)"):
        forward(X.astype(np.float64), PARAMS)
    params64 = [[a.astype(np.float64) for a in layer] for layer in PARAMS]
    with pytest.raises(TypeError, match=r"params\[0\].kernel must have dtype float32"):
        forward(X, params64)
    # The reference itself accepts float64.
    assert fl.reference_forward(X.astype(np.float64), params64).shape == (1, 2, 5)


@pytest.mark.parametrize(
    "params, error, words",
    [
        ([], ValueError, "at least one layer"),
        (PARAMS[0], TypeError, "one \\(kernel, recurrent_kernel, bias\\) per layer"),
        ([PARAMS[0][:2]], TypeError, "must be \\(kernel, recurrent_kernel, bias\\)"),
        ([(PARAMS[0].kernel, PARAMS[0].recurrent_kernel[:, :-1], PARAMS[0].bias)], ValueError, "shape \\(H, 4H\\)"),
        ([(PARAMS[0].kernel[:, :-1], PARAMS[0].recurrent_kernel, PARAMS[0].bias)], ValueError, "kernel must have shape"),
        ([(PARAMS[0].kernel, PARAMS[0].recurrent_kernel, PARAMS[0].bias[:-1])], ValueError, "bias must have shape"),
        ([PARAMS[0], PARAMS[0]], ValueError, "must read the 5 outputs of layer 0"),
    ],
)
def test_bad_params(params, error, words):
    with pytest.raises(error, match=words):
        forward(X, params)


def _with(part: str, value: float) -> list:
    layer = PARAMS[0]._replace(**{part: getattr(PARAMS[0], part).copy()})
    getattr(layer, part).flat[1] = value
    return [layer]


@pytest.mark.parametrize("function", [*(lambda x, params, name=name: fl.steps.get(name).forward(x, params)
                                        for name in fl.steps.names()),
                                      fl.reference_forward,
                                      lambda x, params: fl.reference_backward(x, params, np.ones((1, 2, 5)))],
                         ids=[*fl.steps.names(), "reference_forward", "reference_backward"])
@pytest.mark.parametrize("part, value", [("kernel", np.nan), ("recurrent_kernel", np.inf), ("bias", -np.inf)])
def test_params_with_nan_or_infinity_are_refused_as_x_is(function, part, value):
    with pytest.raises(ValueError, match=rf"params\[0\]\.{part} contains NaN or infinity"):
        function(X, _with(part, value))


def test_layers_must_share_one_hidden_size():
    first = fl.init_params(fl.LSTMConfig(batch=1, seq_len=1, input_size=3, hidden=5), seed=0)[0]
    second = fl.init_params(fl.LSTMConfig(batch=1, seq_len=1, input_size=5, hidden=4), seed=0)[0]
    with pytest.raises(ValueError, match="same hidden size"):
        forward(X, [first, second])


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(batch=0, seq_len=1, input_size=1, hidden=1), ValueError),
        (dict(batch=2.5, seq_len=1, input_size=1, hidden=1), TypeError),
        (dict(batch=1, seq_len=1, input_size=1, hidden=1, layers=True), TypeError),
        (dict(batch=1, seq_len=-3, input_size=1, hidden=1), ValueError),
    ],
)
def test_bad_config(kwargs, error):
    with pytest.raises(error, match="LSTMConfig"):
        fl.LSTMConfig(**kwargs)


def test_unknown_step_lists_the_known_ones():
    with pytest.raises(ValueError, match="known steps: baseline"):
        fl.steps.get("warp_speed")
    with pytest.raises(TypeError):
        fl.steps.get(3)


def test_steps_reject_unknown_options():
    with pytest.raises(TypeError, match="takes no options"):
        fl.steps.get("baseline").forward(X, PARAMS, turbo=True)


def test_bench_rejects_bad_arguments():
    with pytest.raises(TypeError, match="LSTMConfig"):
        fl.bench("baseline", cfg={"batch": 1})
    with pytest.raises(ValueError, match="repeats must be an int >= 1, got 0"):
        fl.bench("baseline", MINI, repeats=0)
    with pytest.raises(TypeError, match="LSTMConfig"):
        fl.flops((64, 100))
