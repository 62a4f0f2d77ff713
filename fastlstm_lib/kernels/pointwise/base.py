"""What the element-wise versions share: ``sigmoidf``, the one-thread-per-element launch, the
fused cell's FLOPs, traffic formula and float64 answer, and the runner's shapes.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda, float32

from ...numerics import sigmoid64
from ...runtime.device import DEVICE
from ...runtime.numba_compat import function_name
from ..case import Case, f32, poisoned
from ..geometry import pointwise_grid
from ..spec import Build, Spec, Traffic
from ..views import view_of

#: Below this, exp(-z) overflows float32 (ln of its largest value is 88.72): sigmoid is 0 there.
SIGMOID_FLOOR = -88.72
#: FLOPs per element (kernels/spec.py's Traffic says what counts; exp and tanh run on the special-
#: function units at a fraction of the peak, so counting them as 1 keeps a lower bound a lower bound).
SIGMOID_FLOP = 3  # exp, 1 + e, 1 / (...)
TANH_FLOP = 1
#: The fused cell per (batch row, unit): 4 gates x (x + h + bias) = 8, 3 sigmoids = 9, 2 tanh = 2,
#: c = f*c + i*g = 3, h = o * tanh(c) = 1.
CELL_FLOP = 8 + 3 * SIGMOID_FLOP + 2 * TANH_FLOP + 3 + 1
#: Reads x_gates, the recurrent product, bias, c; writes c, h.
CELL_ACCESS = ((0, 1, 2, 3), (3, 4))
#: (rows, hidden units) of the runner's cases: the kernels run on (rows, 4 x units) or (rows, units).
CELL_SHAPES = {"odd": (3, 7), "article": (64, 512)}
#: Numba types of the compile matrix's signatures (the fused cells as steps launch them: C-contiguous).
A2, A1, C3, C2, C1 = float32[:, :], float32[:], float32[:, :, ::1], float32[:, ::1], float32[::1]


@cuda.jit(device=True, inline=True)
def sigmoidf(z):
    """1 / (1 + exp(-z)), saturating like the reference for any finite z. Below ``SIGMOID_FLOOR``
    it returns 0, which is what a GPU's float32 exp gives there anyway (1 / inf); without the test,
    the simulator's Python math.exp(-z) raises OverflowError once z < -709. Above it, the same
    formula as ever, so every result is unchanged to the bit."""
    if z < float32(SIGMOID_FLOOR):
        return float32(0.0)
    return float32(1.0) / (float32(1.0) + math.exp(-z))


def launch_elementwise(kernel, out, *args, stream=0):
    """Launch an element-wise ``kernel(*args)`` with one thread per element of ``out``."""
    DEVICE.announce()
    blocks, threads = pointwise_grid(out.size)
    kernel[blocks, threads, stream](*args)


def spec(family: str, number: int, kernel, what: str, access: tuple, traffic, signature: tuple, built: str,
         **facts) -> Spec:
    """An element-wise version's spec; the compile matrix builds ``kernel`` once, for ``signature``;
    ``facts``: other ``Spec`` fields (its role and colour in the charts)."""
    name = function_name(kernel)
    return Spec(family, number, name, what, access, traffic,
                lambda: (Build(name.lstrip("_"), lambda: (kernel, signature), built),), **facts)


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


def cell64(x_gates, h_gates, bias, c):
    """The fused cell in float64: (c_new, h_new, the gate activations i, f, g, o side by side)."""
    z = x_gates.astype(np.float64) + h_gates + bias
    units = c.shape[1]
    i, f, gg, o = (z[:, q * units:(q + 1) * units] for q in range(4))
    i, f, gg, o = sigmoid64(i), sigmoid64(f), np.tanh(gg), sigmoid64(o)
    c_new = f * c + i * gg
    return c_new, o * np.tanh(c_new), np.concatenate([i, f, gg, o], axis=1)


def elementwise_cases(size: str, rng, runs: dict) -> list:
    """The runner's cases of element-wise operations, one each (its ``variant`` its name), on fresh
    a, b (rows, 4 x units) and bias (4 x units) at ``CELL_SHAPES[size]``: ``runs`` maps a name to
    (``launch(a, b, bias, out)`` on device arrays, ``answer(a, b, bias)`` in float64, the arrays
    of its size it moves), each into its own poisoned ``out``."""
    rows, units = CELL_SHAPES[size]
    cols = 4 * units
    host = f32(rng, rows, cols), f32(rng, rows, cols), f32(rng, cols)
    device, wide = [cuda.to_device(array) for array in host], [array.astype(np.float64) for array in host]
    found = []
    for name, (launch, answer, arrays) in runs.items():
        out = poisoned(rows, cols)
        found.append(Case(f"{rows} x {cols}", functools.partial(launch, *device, out), {"out": out},
                          {"out": answer(*wide)}, rows * cols, 4.0 * arrays * rows * cols, variant=name))
    return found


def cell_inputs(size: str, rng) -> tuple:
    """The fused cell's inputs at ``CELL_SHAPES[size]``, unsaturated: x_gates, h_gates (rows, 4H),
    bias (4H,), c (rows, H), float32."""
    rows, units = CELL_SHAPES[size]
    return (f32(rng, rows, 4 * units, scale=0.5), f32(rng, rows, 4 * units, scale=0.5), f32(rng, 4 * units, scale=0.1),
            f32(rng, rows, units, scale=0.5))
