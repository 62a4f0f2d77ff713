"""Exercise (notebook 09): ``gate_dots(h, u, z)``, several batch rows per thread, the register
blocking of the persistent kernel's inner loop; the solution is written here plainly.

The check launches ceil(B / ROWS) * UNITS threads in one block, on two probes: an odd batch with z
NaN, and z holding numbers. Weights reloaded inside the row loop give the same numbers: no output
shows it, so it is in the hints, not the catalog.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from ...kernels.geometry import blocks_for
from ...kernels.persistent import MAX_ROWS
from . import locate, symptoms
from .base import Mistake
from .kernel_runs import KernelExercise, Probe

#: Batch rows per thread, units per block, the dot products' length; batches no multiple of ROWS.
ROWS, UNITS, K = MAX_ROWS, 5, 13
BATCH, HELD_BATCH = 7, 10
GROUPS = blocks_for(BATCH, ROWS)  # groups of rows in the odd probe: the check launches GROUPS * UNITS threads
ODD = f"batch {BATCH}: {GROUPS} groups of rows, the last of {BATCH % ROWS}; {UNITS} units, k < {K}"
HELD = (f"batch {HELD_BATCH}: {blocks_for(HELD_BATCH, ROWS)} groups, the last of {HELD_BATCH % ROWS}; z holding "
        "numbers before the launch")
AXES = ("batch row", "column")


@cuda.jit
def gate_dots(h, u, z):
    # h (B, K): batch rows of h_{t-1}; u (K, 4 * UNITS): this block's columns of U, gate g of unit jj
    # at column g * UNITS + jj; z (B, 4 * UNITS): the dot products, in the same columns
    tid = cuda.threadIdx.x
    group = tid // UNITS  # this thread's batch rows: group * ROWS + r, r < ROWS...
    jj = tid % UNITS  # ...and its unit
    batch = h.shape[0]
    acc = cuda.local.array((4, ROWS), float32)  # z of gates i, f, c, o for each of its rows
    for r in range(ROWS):
        for g in range(4):
            acc[g, r] = float32(0.0)
    for k in range(h.shape[1]):
        u_i = u[k, jj]  # the unit's 4 weights at this k, loaded once...
        u_f = u[k, UNITS + jj]
        u_c = u[k, 2 * UNITS + jj]
        u_o = u[k, 3 * UNITS + jj]
        for r in range(ROWS):  # ...each feeds ROWS FMAs, one per batch row
            b = group * ROWS + r
            if b < batch:  # the last group may have fewer rows
                x = h[b, k]
                acc[0, r] += x * u_i
                acc[1, r] += x * u_f
                acc[2, r] += x * u_c
                acc[3, r] += x * u_o
    for r in range(ROWS):
        b = group * ROWS + r
        if b < batch:
            for g in range(4):
                z[b, g * UNITS + jj] = acc[g, r]


def dots_inputs(batch: int, seed: int, held: bool = False):
    def make() -> dict:
        rng = np.random.default_rng(seed)
        z = rng.standard_normal((batch, 4 * UNITS)) if held else np.full((batch, 4 * UNITS), np.nan)
        return {"h": rng.standard_normal((batch, K)).astype(np.float32),
                "u": rng.standard_normal((K, 4 * UNITS)).astype(np.float32), "z": z.astype(np.float32)}

    return make


def dots(inputs: dict, ks=slice(None)) -> np.ndarray:
    """h @ u in float64, over the k of ``ks`` only."""
    return inputs["h"][:, ks].astype(np.float64) @ inputs["u"][ks].astype(np.float64)


def nan_in_both(evidence):
    """NaN everywhere, even in the probe whose z held numbers: the sums themselves are NaN."""
    odd, held = evidence.probe(ODD), evidence.probe(HELD)
    if odd.error is not None or held.error is not None or odd.order_dependent():
        return None
    if np.isnan(odd.outputs["z"]).all() and np.isnan(held.outputs["z"]).all():
        return (f"every element of z is NaN, even where z held numbers before the launch (probes: {ODD}; {HELD}): "
                "the sums started from NaN, which is what a local array holds at first on the simulator")
    return None


#: INTERLEAVED[g * UNITS + jj] = 4 * jj + g: where gate g of unit jj sits when the gates are interleaved.
INTERLEAVED = np.array([4 * jj + g for g in range(4) for jj in range(UNITS)])


def columns_interleaved(evidence):
    """z equals h @ u with its columns permuted between g * UNITS + jj and 4 * jj + g (either way)."""
    result = evidence.probe(ODD)
    if result.error is not None:
        return None
    right = dots(result.inputs)
    for permuted in (right[:, INTERLEAVED], right[:, np.argsort(INTERLEAVED)]):
        if locate.where_wrong(result.outputs["z"], permuted, AXES) is None:
            return (f"z holds the right sums in the wrong columns, moved between g * UNITS + jj and 4 * jj + g: "
                    f"{result.wrong(evidence.exercise)}")
    return None


EXERCISE = KernelExercise(
    name="rows_per_thread", notebook="09", difficulty="medium",
    title=("the kernel gate_dots(h, u, z): z[b, g*UNITS + jj] = sum over k of h[b, k] * u[k, g*UNITS + jj]; "
           "each thread one unit jj and ROWS batch rows, each weight loaded once per k feeding ROWS FMAs"),
    hints=(
        ("A thread owns one unit and ROWS batch rows. At one k, which values does it need, how many "
         "times is each one used, and where do its 4 x ROWS running sums stay until the end?"),
        ('Give each thread a row group and a unit (the quotient and remainder of its index by '
         "UNITS). The point is reuse: at each k, load each of the unit's 4 weights once and use it "
         "for every one of the thread's rows. Where do the 4 x ROWS sums live until the end, and "
         'which rows of the last group do not exist?'),
        ("group, jj = tid // UNITS, tid % UNITS; acc[g, r] = 0 for every g and r; for k in "
         "range(h.shape[1]): w_g = u[k, g * UNITS + jj] for g = 0..3 (4 variables); for r in "
         "range(ROWS): b = group * ROWS + r; if b < h.shape[0]: x = h[b, k]; acc[g, r] += x * w_g "
         "for each g; after the loop over k: for r in range(ROWS): b = group * ROWS + r; if b < "
         "h.shape[0]: z[b, g * UNITS + jj] = acc[g, r] for g = 0..3"),
    ),
    solution=lambda: gate_dots,
    source=("fastlstm_lib/course/exercises/ex09_rows_per_thread.py (kernels/persistent/v1_layer.py's dot_quad\n"
            "# does the same from shared memory, 4 neighbouring k at a time)"),
    launch=lambda kernel, arrays: kernel[1, blocks_for(arrays["h"].shape[0], ROWS) * UNITS](
        arrays["h"], arrays["u"], arrays["z"]),
    expected=lambda inputs: {"z": dots(inputs)},
    outputs={"z": AXES},
    probes=(Probe(ODD, dots_inputs(BATCH, seed=19)), Probe(HELD, dots_inputs(HELD_BATCH, seed=20, held=True), "again")),
    catalog=(
        Mistake("unguarded_last_group", "the rows past the last batch row are not guarded",
                "the last group has fewer than ROWS rows: a row b = group * ROWS + r exists only if b < h.shape[0], "
                "both where h is read and where z is written",
                symptoms.past_edge(ODD, "z")),
        Mistake("one_row_per_thread", "each thread does one batch row, not ROWS",
                "the check launches one thread per unit and group of ROWS rows: each thread loops over its rows "
                "group * ROWS + r, r < ROWS, and each weight it loads feeds one FMA per row",
                symptoms.written_only(ODD, "z", lambda written: (written.all(axis=1) == written.any(axis=1)).all()
                                     and written.all(axis=1).sum() == GROUPS)),
        Mistake("sums_not_zeroed", "the 4 x ROWS sums are not set to zero before the loop over k",
                "a local array holds whatever was there (NaN on the simulator): set every acc[g, r] to 0.0 first",
                nan_in_both, stage="again"),
        Mistake("added_to_z", "the sums are added to z instead of written into it",
                "z is an output: write it (`z[...] = acc[g, r]`); what it held before the launch does not count",
                symptoms.equals(HELD, "z", lambda inputs: inputs["z"] + dots(inputs), "its old values plus the sums"), stage="again"),
        Mistake("last_k_only", "each k replaces the sums instead of adding to them",
                "add into the sums (`acc[g, r] += ...`), and set them to zero once, before the loop over k, not in it",
                symptoms.equals(ODD, "z", lambda inputs: dots(inputs, slice(K - 1, K)), "the last k's products alone")),
        Mistake("gate_columns_interleaved", "the gate columns are taken as 4 * jj + g, not g * UNITS + jj",
                "the gates are side by side in blocks of UNITS columns (i, then f, c, o, as in Keras): gate g of unit "
                "jj is column g * UNITS + jj, in u and in z alike",
                columns_interleaved),
    ),
)
