"""Every kernel's FLOPs and global-memory traffic, as formulas of its launch.

For one launch of a kernel with its arguments (array views), grid and block, ``traffic`` returns:

- ``flop``: the arithmetic the kernel source writes on its data, one per +, -, *, /, exp and
  tanh (a multiply-add is 2, like the FP32 peak counts it; index arithmetic is not counted;
  exp and tanh run on the special-function units at a fraction of the peak, so counting them as
  1 undercounts their cost, which keeps a lower bound a lower bound). The GEMMs: 2 M N K (+ M N
  to accumulate), the count ``fl.flops`` uses.
- ``loads`` / ``stores``: per array argument, how many elements the kernel loads from or stores
  to global memory: every load instruction its threads execute, re-reads included (a GEMM loads
  each A element once per block column of C). Bytes read = loads x item size. That is exactly
  what ``instrument.py`` counts on the simulator, element by element.
- ``reads`` / ``writes``: the views it reads and writes (their union: the footprint, distinct
  bytes); ``inputs``: the views it reads before writing them, i.e. what must come from memory
  (the persistent kernel reads back the h it wrote itself, and that doesn't).

The formulas read the compile-time constants of a kernel (the persistent kernel's units per
block and threads per pair) from its closure, so they follow whatever plan was launched.
"""

from __future__ import annotations

import dataclasses
import inspect

from ..launches import kernel_name
from .views import is_array, view_of

#: FLOPs per element of the element-wise kernels (see the module docstring for what counts).
SIGMOID_FLOP = 3  # exp, 1 + e, 1 / (...)
TANH_FLOP = 1
#: The fused cell per (batch row, unit): 4 gates x (x + h + bias) = 8, 3 sigmoids = 9, 2 tanh = 2,
#: c = f*c + i*g = 3, h = o * tanh(c) = 1.
CELL_FLOP = 8 + 3 * SIGMOID_FLOP + 2 * TANH_FLOP + 3 + 1


@dataclasses.dataclass(frozen=True)
class Traffic:
    """What one launch computes and moves (element counts per argument name; views for footprints)."""

    flop: int
    loads: dict
    stores: dict
    reads: tuple
    writes: tuple
    inputs: tuple


def kernel_constants(kernel) -> dict:
    """The values a kernel's factory baked into it (its closure's free variables)."""
    function = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    cells = getattr(function, "__closure__", None) or ()
    return {name: cell.cell_contents for name, cell in zip(function.__code__.co_freevars, cells)}


def argument_names(kernel) -> list[str]:
    function = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    return list(inspect.signature(function).parameters)


# ---- the GEMMs ---------------------------------------------------------------------------------


def gemm_traffic(args, grid, block, constants) -> Traffic:
    """Every GEMM kernel: every block loads its rows of A and its columns of op(B) over all of K
    (elements past an edge are zeros, not loads), so A is loaded once per block column of C and
    B once per block row; C is stored once (and loaded once to accumulate). Split-K (version 6,
    C of shape (splits, M, N), grid depth splits): each layer of blocks loads its part of K, so
    A and B are loaded as often, and each part of C is stored once."""
    a, b, c, accumulate = args["a"], args["b"], args["c"], bool(args["accumulate"])
    m, k = a.shape
    parts = c.shape[0] if len(c.shape) == 3 else 1
    n = c.shape[len(c.shape) - 1]  # (the simulator's shapes take no negative index)
    blocks_n, blocks_m = grid[0], grid[1]
    loads = {"a": blocks_n * m * k, "b": blocks_m * k * n}
    reads = [view_of(a), view_of(b)]
    if accumulate:
        loads["c"] = parts * m * n
        reads.append(view_of(c))
    flop = 2 * m * n * k + (parts * m * n if accumulate else 0)
    return Traffic(flop, loads, {"c": parts * m * n}, tuple(reads), (view_of(c),), tuple(reads))


# ---- the element-wise kernels: one thread per element of ``out`` (rows x cols) -------------------


def _elementwise(args, out_name, inputs, flop_per_element) -> Traffic:
    out = args[out_name]
    rows, cols = out.shape
    n = rows * cols
    views = {name: view_of(args[name]).head(rows, cols) for name in inputs}
    return Traffic(flop_per_element * n, {name: n for name in inputs}, {out_name: n}, tuple(views.values()),
                   (view_of(out).head(rows, cols),), tuple(views.values()))


def fill_traffic(args, grid, block, constants) -> Traffic:
    return _elementwise(args, "out", (), 0)


def add_traffic(args, grid, block, constants) -> Traffic:
    return _elementwise(args, "out", ("a", "b"), 1)


def mul_traffic(args, grid, block, constants) -> Traffic:
    return _elementwise(args, "out", ("a", "b"), 1)


def sigmoid_traffic(args, grid, block, constants) -> Traffic:
    return _elementwise(args, "out", ("a",), SIGMOID_FLOP)


def tanh_traffic(args, grid, block, constants) -> Traffic:
    return _elementwise(args, "out", ("a",), TANH_FLOP)


def add_bias_traffic(args, grid, block, constants) -> Traffic:
    """Every thread loads its column's bias: rows x cols loads of a cols-long footprint."""
    rows, cols = args["out"].shape
    traffic = _elementwise(args, "out", ("a",), 1)
    bias = view_of(args["bias"]).head(cols)
    return dataclasses.replace(traffic, loads={**traffic.loads, "bias": rows * cols},
                               reads=traffic.reads + (bias,), inputs=traffic.inputs + (bias,))


def _cell_traffic(args, product: str, parts: tuple) -> Traffic:
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


def lstm_cell_traffic(args, grid, block, constants) -> Traffic:
    """The fused cell (pointwise version 2): one recurrent product, h_gates (B, 4H)."""
    return _cell_traffic(args, "h_gates", ())


def lstm_cell_split_traffic(args, grid, block, constants) -> Traffic:
    """The split cell (version 3): the recurrent product in parts, h_parts (splits, B, 4H)."""
    return _cell_traffic(args, "h_parts", (args["h_parts"].shape[0],))


# ---- the column sum (notebook 41's db) -------------------------------------------------------------


def column_sum_traffic(args, grid, block, constants) -> Traffic:
    """Every element of ``a`` loaded once and added once, by the one thread of its column and rows;
    then each block's tree: (threads per column - 1) adds for each of its 32 columns, those past
    the last column included (they add zeros); out stored once (and loaded once to accumulate)."""
    a, out, accumulate = args["a"], args["out"], bool(args["accumulate"])
    rows, cols = a.shape
    tree = grid[0] * block[0] * (block[1] - 1)
    loads, reads = {"a": rows * cols}, [view_of(a)]
    if accumulate:
        loads["out"] = cols
        reads.append(view_of(out))
    flop = rows * cols + tree + (cols if accumulate else 0)
    return Traffic(flop, loads, {"out": cols}, tuple(reads), (view_of(out),), tuple(reads))


# ---- the persistent layer (notebook 09) ----------------------------------------------------------


def persistent_traffic(args, grid, block, constants) -> Traffic:
    """One launch = a layer's whole sequence.

    U: each block loads its units' 4 columns once per launch, H x 4H elements in all. h_{t-1}:
    every block stages all of it, B x H elements, at every step but the first. The pair leaders
    load their 4 input pre-activations and store h, at every step; every thread of a unit loads
    its 4 biases once per launch. FLOPs: the dot
    products of the layer's B x H pairs (4 gates x H multiply-adds) at every step but the first
    (h_{-1} = 0), the sums of split shares, and the cell's arithmetic.
    """
    hs = args["hs"]
    steps, batch, hidden = hs.shape
    blocks, splits = grid[0], constants["splits"]
    pairs = batch * hidden
    unit_threads = -(-batch // constants["rows"]) * splits  # threads per unit: row groups x splits
    loads = {"x_gates": 4 * pairs * steps, "recurrent": 4 * hidden * hidden, "bias": 4 * hidden * unit_threads,
             "hs": blocks * (steps - 1) * batch * hidden}
    flop = 8 * pairs * hidden * (steps - 1) + steps * pairs * (CELL_FLOP + (4 * splits if splits > 1 else 0))
    inputs = (view_of(args["x_gates"]).head(steps, batch, 4 * hidden), view_of(args["recurrent"]).head(hidden, 4 * hidden),
              view_of(args["bias"]).head(4 * hidden))
    reads = inputs + ((view_of(hs).head(steps - 1),) if steps > 1 else ())
    return Traffic(flop, loads, {"hs": steps * batch * hidden}, reads, (view_of(hs),), inputs)


FORMULAS = {
    "blocked_gemm": gemm_traffic,
    "tiled_gemm": gemm_traffic,
    "_fill": fill_traffic,
    "_add": add_traffic,
    "_add_bias": add_bias_traffic,
    "_mul": mul_traffic,
    "_sigmoid": sigmoid_traffic,
    "_tanh": tanh_traffic,
    "_lstm_cell": lstm_cell_traffic,
    "_lstm_cell_split": lstm_cell_split_traffic,
    "persistent_layer": persistent_traffic,
    "column_sum": column_sum_traffic,
}


_DESCRIPTIONS: dict = {}


def kernel_description(kernel) -> tuple:
    """(name, argument names, constants) of a kernel; cached, and the cache keeps the kernel
    alive, so that an id is never reused for another."""
    cached = _DESCRIPTIONS.get(id(kernel))
    if cached is None:
        cached = _DESCRIPTIONS[id(kernel)] = (kernel, kernel_name(kernel), argument_names(kernel),
                                               kernel_constants(kernel))
    return cached[1:]


def traffic(kernel, grid: tuple, block: tuple, args: tuple) -> tuple[Traffic, dict]:
    """(the formula of ``kernel`` applied to one launch, its arguments by name); grid and block
    are 3-tuples."""
    name, names, constants = kernel_description(kernel)
    if name not in FORMULAS:
        raise ValueError(f"no traffic formula for kernel {name!r}; known: {', '.join(FORMULAS)}")
    named = dict(zip(names, args))
    return FORMULAS[name](named, grid, block, constants), named


def byte_counts(counts: dict, named: dict) -> int:
    """Bytes of per-argument element counts (loads or stores)."""
    return sum(n * view_of(named[arg]).itemsize for arg, n in counts.items())


def array_count(args: tuple) -> int:
    """How many of a launch's arguments are arrays (what a Python launch pays for, per argument)."""
    return sum(1 for value in args if is_array(value))


__all__ = ["Traffic", "traffic", "kernel_description", "FORMULAS", "kernel_name", "kernel_constants", "argument_names",
           "byte_counts", "array_count", "CELL_FLOP", "SIGMOID_FLOP", "TANH_FLOP"]
