"""The LSTM cell's element-wise work on a CPU, three ways (``cpu_speed.fused_pointwise``): NumPy
passes, one ``numba.njit`` loop with the C library's exp and tanh, and the same loop with Eigen's
rational ``generic_fast_tanh_float``, which the compiler vectorizes.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_F32 = np.float32
#: Beyond +-this, Eigen's rational tanh is clamped: tanh is 1 to float32 precision there.
TANH_CLAMP = _F32(7.90531110763549805)


def numpy_cell(x_gates, h_gates, bias, c, h):
    """The unfused step's 17 element-wise kernels in NumPy: 26 passes over whole arrays."""
    H = c.shape[1]
    gates = []
    for g, activation in enumerate(("sigmoid", "sigmoid", "tanh", "sigmoid")):
        z = x_gates[:, g * H:(g + 1) * H] + h_gates[:, g * H:(g + 1) * H]
        z += bias[g * H:(g + 1) * H]
        gates.append(1 / (1 + np.exp(-z)) if activation == "sigmoid" else np.tanh(z))
    i, f, g, o = gates
    np.add(f * c, i * g, out=c)
    np.multiply(o, np.tanh(c), out=h)


@numba.njit
def tanh_rational(x):
    """Eigen's float32 rational tanh (see the module's docstring), evaluated by Horner's rule in x^2."""
    x = min(max(x, -TANH_CLAMP), TANH_CLAMP)
    x2 = x * x
    p = _F32(-2.76076847742355e-16)
    for a in (_F32(2.00018790482477e-13), _F32(-8.60467152213735e-11), _F32(5.12229709037114e-08),
              _F32(1.48572235717979e-05), _F32(6.37261928875436e-04), _F32(4.89352455891786e-03)):
        p = p * x2 + a
    q = _F32(1.19825839466702e-06)
    for b in (_F32(1.18534705686654e-04), _F32(2.26843463243900e-03), _F32(4.89352518554385e-03)):
        q = q * x2 + b
    return x * p / q


@numba.njit
def _sigmoid_rational(x):
    return _F32(0.5) * tanh_rational(_F32(0.5) * x) + _F32(0.5)


@numba.njit
def _sigmoid_libm(x):
    return _F32(1) / (_F32(1) + math.exp(-x))


@numba.njit
def _tanh_libm(x):
    return math.tanh(x)


def _fused(sigmoid, tanh):
    """One loop over (batch row, unit), the fused kernel's body; no zero-division checks, only
    multiply-add contraction relaxed."""

    @numba.njit(error_model="numpy", fastmath={"contract"})
    def cell(x_gates, h_gates, bias, c, h):
        H = c.shape[1]
        for r in range(c.shape[0]):
            x, y, c_r, h_r = x_gates[r], h_gates[r], c[r], h[r]
            for j in range(H):
                i = sigmoid(x[j] + y[j] + bias[j])
                f = sigmoid(x[H + j] + y[H + j] + bias[H + j])
                g = tanh(x[2 * H + j] + y[2 * H + j] + bias[2 * H + j])
                o = sigmoid(x[3 * H + j] + y[3 * H + j] + bias[3 * H + j])
                c_new = f * c_r[j] + i * g
                c_r[j] = c_new
                h_r[j] = o * tanh(c_new)

    return cell


#: Compiled at their first call (about a second each), not at import.
fused_cell_libm = _fused(_sigmoid_libm, _tanh_libm)
fused_cell_rational = _fused(_sigmoid_rational, tanh_rational)
