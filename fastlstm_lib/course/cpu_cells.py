"""The LSTM cell's element-wise work on a CPU, three ways (notebook 05's CPU experiment, ``cpu_speed``).

Each takes one layer-step's pre-activations ``x_gates`` and ``h_gates`` ((B, 4H) float32, gates
i, f, c, o side by side), ``bias`` (4H,), ``c`` (B, H), updated in place, and writes ``h`` (B, H):

- ``numpy_cell``: the 17 unfused kernels as NumPy operations, each a pass over whole arrays.
- ``fused_cell_libm``: one loop compiled by ``numba.njit`` that does all of it per element, as the
  fused GPU kernel does per thread, calling the C library's ``exp`` and ``tanh``: one element at a
  time, since the compiler cannot spread those calls over SIMD lanes.
- ``fused_cell_rational``: the same loop with tanh as a rational function (and sigmoid(x) =
  (1 + tanh(x / 2)) / 2): only multiplies, adds, a divide and a clamp, which the compiler runs on
  8 float32 lanes at once (AVX2; 16 with AVX-512, 4 with NEON). The function is the float32 tanh
  of Eigen's ``generic_fast_tanh_float`` (Eigen/src/Core/MathFunctionsImpl.h; ONNX Runtime's MLAS
  and XLA use the same coefficients): an odd numerator of degree 13 over an even denominator of
  degree 6, within a few float32 roundings of tanh.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_F32 = np.float32
#: Beyond +-this, Eigen's rational tanh is clamped: tanh is 1 to float32 precision there.
TANH_CLAMP = _F32(7.90531110763549805)


def numpy_cell(x_gates, h_gates, bias, c, h):
    """The 17 element-wise kernels of the unfused step (``step02_baseline.cell_update``) in NumPy,
    in the same order: 26 passes over whole arrays (a sigmoid is 4: negate, exp, add 1, divide),
    most of them into a new temporary array; c updated in place, h written."""
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
    """One loop over (batch row, unit), the fused GPU kernel's body: 4 pre-activations read, c and
    h written, everything between in registers. ``error_model="numpy"``: no zero-division check
    per divide; ``fastmath={"contract"}``: a multiply and an add may fuse, nothing else relaxed."""

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
