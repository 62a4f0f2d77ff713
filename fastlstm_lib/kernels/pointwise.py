"""Element-wise kernels on (rows, cols) device arrays: one thread per element.

Its versions, and the steps that launch them (the README's table counts them per pass; ``SPECS``
at the end holds each version's facts):

1. one kernel per operation: ``fill``, ``add``, ``add_bias``, ``mul``, ``sigmoid``, ``tanh``.
   The unfused cell of steps 02-04 (baseline, combined_gemms, streams), 17 launches per
   layer-step; ``fill`` zeroes the cell state in steps 02-08 and the gradients in bwd01-05. The
   op-by-op backward (bwd01) chains ``add``, ``mul`` and ``tanh`` with the derivatives in
   ``pointwise_backward.py``.
2. ``lstm_cell``: all of version 1 for one layer-step in one kernel (notebook 05): steps 05-08
   (fused_pointwise, pretransposed, combined_inputs, wavefront) where the recurrent GEMM is not
   split (always under the ladder's default GEMM policy, ``steps/gemm_policy.py``). Step 09's persistent kernel (``persistent.py``) does the same work inside itself, with
   ``sigmoidf`` from here.
3. ``lstm_cell_split``: 2 with the recurrent product in parts, one per part of K, as the GEMM's
   split-K version (``gemm.gemm_split``) leaves it, added in the same pass: steps 06-08 under the
   "fast" GEMM policy where ``gemm.choose_splits`` cuts K (at batch 64 on an H100 or an M40; never
   on the simulator).

The training versions (the fused cell that saves its gates, the activations' derivatives, the
fused backward cell) are in ``pointwise_backward.py``.

The version-1 kernels are the small, separate kernels of the unfused LSTM: each reads its inputs
from global memory and writes its result back, and each costs a launch. The fused step replaces a
whole chain of them with a single kernel.
"""

from __future__ import annotations

import dataclasses
import math

from numba import cuda, float32

from ..runtime.device import DEVICE
from .geometry import pointwise_grid
from .spec import BACKWARD_STEPS, Build, Spec, Traffic, elementwise, function_name
from .views import view_of


#: Below this, exp(-z) overflows float32 (ln of its largest value is 88.72): sigmoid is 0 there.
SIGMOID_FLOOR = -88.72


@cuda.jit(device=True, inline=True)
def sigmoidf(z):
    """1 / (1 + exp(-z)), saturating like the reference for any finite z. Below ``SIGMOID_FLOOR``
    it returns 0, which is what a GPU's float32 exp gives there anyway (1 / inf); without the test,
    the simulator's Python math.exp(-z) raises OverflowError once z < -709. Above it, the same
    formula as ever, so every result is unchanged to the bit."""
    if z < float32(SIGMOID_FLOOR):
        return float32(0.0)
    return float32(1.0) / (float32(1.0) + math.exp(-z))


@cuda.jit
def _fill(out, value):
    i = cuda.grid(1)
    if i < out.size:
        out[i // out.shape[1], i % out.shape[1]] = value


@cuda.jit
def _add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = a[r, c] + b[r, c]


@cuda.jit
def _add_bias(a, bias, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = a[r, c] + bias[c]


@cuda.jit
def _mul(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = a[r, c] * b[r, c]


@cuda.jit
def _sigmoid(a, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = sigmoidf(a[r, c])


@cuda.jit
def _tanh(a, out):
    i = cuda.grid(1)
    if i < out.size:
        r, c = i // out.shape[1], i % out.shape[1]
        out[r, c] = math.tanh(a[r, c])


def launch_elementwise(kernel, out, *args, stream=0):
    """Launch an element-wise ``kernel(*args)`` with one thread per element of ``out``."""
    DEVICE.announce()
    blocks, threads = pointwise_grid(out.size)
    kernel[blocks, threads, stream](*args)


def fill(out, value, stream=0):
    """out[:] = value"""
    launch_elementwise(_fill, out, out, float32(value), stream=stream)


def add(a, b, out, stream=0):
    """out = a + b"""
    launch_elementwise(_add, out, a, b, out, stream=stream)


def add_bias(a, bias, out, stream=0):
    """out = a + bias (bias broadcast along rows)"""
    launch_elementwise(_add_bias, out, a, bias, out, stream=stream)


def mul(a, b, out, stream=0):
    """out = a * b"""
    launch_elementwise(_mul, out, a, b, out, stream=stream)


def sigmoid(a, out, stream=0):
    """out = 1 / (1 + exp(-a))"""
    launch_elementwise(_sigmoid, out, a, out, stream=stream)


def tanh(a, out, stream=0):
    """out = tanh(a)"""
    launch_elementwise(_tanh, out, a, out, stream=stream)


# --------------------------------------------------------------------------------------------
# Version 2, the fused cell (notebook 05): everything above, for one layer-step, in one kernel.


@cuda.jit
def _lstm_cell(x_gates, h_gates, bias, c, h):
    # One thread per (batch row, hidden unit): it reads that unit's 4 gate pre-activations from
    # both GEMM results, and writes c and h once. Nothing else goes through global memory.
    i = cuda.grid(1)
    hidden = c.shape[1]
    if i < c.size:
        r, j = i // hidden, i % hidden
        z_i = x_gates[r, j] + h_gates[r, j] + bias[j]
        z_f = x_gates[r, hidden + j] + h_gates[r, hidden + j] + bias[hidden + j]
        z_c = x_gates[r, 2 * hidden + j] + h_gates[r, 2 * hidden + j] + bias[2 * hidden + j]
        z_o = x_gates[r, 3 * hidden + j] + h_gates[r, 3 * hidden + j] + bias[3 * hidden + j]
        c_new = sigmoidf(z_f) * c[r, j] + sigmoidf(z_i) * math.tanh(z_c)
        c[r, j] = c_new
        h[r, j] = sigmoidf(z_o) * math.tanh(c_new)


def lstm_cell(x_gates, h_gates, bias, c, h, stream=0):
    """One layer-step's point-wise work in one launch: z = x_gates + h_gates + bias (B, 4H, gates
    i, f, c, o); c = f*c + i*tanh(z_c) in place; h = o*tanh(c)."""
    launch_elementwise(_lstm_cell, c, x_gates, h_gates, bias, c, h, stream=stream)


# --------------------------------------------------------------------------------------------
# Version 3, the fused cell that adds the recurrent GEMM's split-K parts (gemm.py's version 6).


@cuda.jit
def _lstm_cell_split(x_gates, h_parts, bias, c, h):
    # Version 2, with h_gates = h_parts[0] + h_parts[1] + ...: the parts of the recurrent product
    # that version 6 of the GEMM left, one per part of K, added here in one pass (no extra launch).
    i = cuda.grid(1)
    hidden = c.shape[1]
    if i < c.size:
        r, j = i // hidden, i % hidden
        z_i = x_gates[r, j] + bias[j]
        z_f = x_gates[r, hidden + j] + bias[hidden + j]
        z_c = x_gates[r, 2 * hidden + j] + bias[2 * hidden + j]
        z_o = x_gates[r, 3 * hidden + j] + bias[3 * hidden + j]
        for s in range(h_parts.shape[0]):
            z_i += h_parts[s, r, j]
            z_f += h_parts[s, r, hidden + j]
            z_c += h_parts[s, r, 2 * hidden + j]
            z_o += h_parts[s, r, 3 * hidden + j]
        c_new = sigmoidf(z_f) * c[r, j] + sigmoidf(z_i) * math.tanh(z_c)
        c[r, j] = c_new
        h[r, j] = sigmoidf(z_o) * math.tanh(c_new)


def lstm_cell_split(x_gates, h_parts, bias, c, h, stream=0):
    """``lstm_cell`` with the recurrent product in parts: z = x_gates + bias + h_parts.sum(0)
    (h_parts (splits, B, 4H), from ``gemm.gemm_split``); c in place, h out."""
    if len(h_parts.shape) != 3 or tuple(h_parts.shape[1:]) != tuple(x_gates.shape):
        raise ValueError(f"h_parts must be (splits, {x_gates.shape[0]}, {x_gates.shape[1]}) like x_gates, "
                         f"got shape {tuple(h_parts.shape)}")
    launch_elementwise(_lstm_cell_split, c, x_gates, h_parts, bias, c, h, stream=stream)


# ---- the versions' facts (kernels/spec.py) ----------------------------------------------------------

#: FLOPs per element (kernels/spec.py's Traffic says what counts; exp and tanh run on the special-
#: function units at a fraction of the peak, so counting them as 1 keeps a lower bound a lower bound).
SIGMOID_FLOP = 3  # exp, 1 + e, 1 / (...)
TANH_FLOP = 1
#: The fused cell per (batch row, unit): 4 gates x (x + h + bias) = 8, 3 sigmoids = 9, 2 tanh = 2,
#: c = f*c + i*g = 3, h = o * tanh(c) = 1.
CELL_FLOP = 8 + 3 * SIGMOID_FLOP + 2 * TANH_FLOP + 3 + 1


def add_bias_traffic(args, grid, block, constants) -> Traffic:
    """Every thread loads its column's bias: rows x cols loads of a cols-long footprint."""
    rows, cols = args["out"].shape
    traffic = elementwise(args, "out", ("a",), 1)
    bias = view_of(args["bias"]).head(cols)
    return dataclasses.replace(traffic, loads={**traffic.loads, "bias": rows * cols},
                               reads=traffic.reads + (bias,), inputs=traffic.inputs + (bias,))


def cell_traffic(args, product: str, parts: tuple) -> Traffic:
    """Per (row, unit): 4 gate values from x_gates, from each part of the recurrent ``product``
    (``parts``: (splits,) for one leading axis of parts, () for none) and the bias, c; stores c and
    h. One more add per gate for each part past the first."""
    rows, hidden = args["c"].shape
    n, count = rows * hidden, parts[0] if parts else 1
    reads = (view_of(args["x_gates"]).head(rows, 4 * hidden), view_of(args[product]).head(*parts, rows, 4 * hidden),
             view_of(args["bias"]).head(4 * hidden), view_of(args["c"]))
    writes = (view_of(args["c"]), view_of(args["h"]).head(rows, hidden))
    loads = {"x_gates": 4 * n, product: 4 * n * count, "bias": 4 * n, "c": n}
    return Traffic((CELL_FLOP + 4 * (count - 1)) * n, loads, {"c": n, "h": n}, reads, writes, reads)


def _built(kernel, signature: tuple, what: str):
    """The spec's ``builds``: ``kernel`` compiled once, for ``signature`` (its row: its name)."""
    return lambda: (Build(function_name(kernel).lstrip("_"), lambda: (kernel, signature), what),)


def _op(kernel, inputs: tuple, flop: int, access: tuple, steps: tuple, signature: tuple, traffic=None) -> Spec:
    traffic = traffic or (lambda args, grid, block, constants: elementwise(args, "out", inputs, flop))
    return Spec("pointwise", 1, function_name(kernel), "one element-wise operation per launch (steps 02-04)", steps,
                access, traffic, _built(kernel, signature, "element-wise"))


_UNFUSED = ("baseline", "combined_gemms", "streams")
#: Steps 02-08 zero the cell state with it; the backward ladder, the gradients.
_FILLED = _UNFUSED + ("fused_pointwise", "pretransposed", "combined_inputs", "wavefront") + BACKWARD_STEPS
_CELL_ACCESS = ((0, 1, 2, 3), (3, 4))  # reads x_gates, the recurrent product, bias, c; writes c, h

#: Signatures the compile matrix builds (the fused cells as steps 05-08 launch them: C-contiguous).
_A2, _A1, _C3, _C2, _C1 = float32[:, :], float32[:], float32[:, :, ::1], float32[:, ::1], float32[::1]

SPECS = (
    _op(_fill, (), 0, ((), (0,)), _FILLED, (_A2, float32)),
    _op(_add, ("a", "b"), 1, ((0, 1), (2,)), _UNFUSED + ("bwd_op_by_op",), (_A2, _A2, _A2)),
    _op(_add_bias, ("a",), 1, ((0, 1), (2,)), _UNFUSED, (_A2, _A1, _A2), add_bias_traffic),
    _op(_mul, ("a", "b"), 1, ((0, 1), (2,)), _UNFUSED + ("bwd_op_by_op",), (_A2, _A2, _A2)),
    _op(_sigmoid, ("a",), SIGMOID_FLOP, ((0,), (1,)), _UNFUSED, (_A2, _A2)),
    _op(_tanh, ("a",), TANH_FLOP, ((0,), (1,)), _UNFUSED + ("bwd_op_by_op",), (_A2, _A2)),
    Spec("pointwise", 2, "_lstm_cell", "the whole cell of a layer-step in one launch (notebook 05)",
         ("fused_pointwise", "pretransposed", "combined_inputs", "wavefront"), _CELL_ACCESS,
         lambda args, grid, block, constants: cell_traffic(args, "h_gates", ()),
         _built(_lstm_cell, (_C2, _C2, _C1, _C2, _C2), "fused cell")),
    Spec("pointwise", 3, "_lstm_cell_split", "2 adding the recurrent product's split-K parts as it reads them",
         (), _CELL_ACCESS,
         lambda args, grid, block, constants: cell_traffic(args, "h_parts", (args["h_parts"].shape[0],)),
         _built(_lstm_cell_split, (_C2, _C3, _C1, _C2, _C2), "fused cell, split-K parts")),
)
