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


def written_part(evidence):
    """(rows, units) of the odd probe's z written (and right, the rest NaN, whole rows x units), or None."""
    result = evidence.probe(ODD)
    if result.error is not None or result.order_dependent():
        return None
    z, expected = result.outputs["z"], result.expected["z"]
    nan = np.isnan(z)
    if not nan.any() or nan.all() or locate.wrong_mask(z, expected)[~nan].any():
        return None
    done = ~nan.reshape(BATCH, 4, UNITS)
    rows, units = done.any(axis=(1, 2)), done.any(axis=(0, 1))
    if not (done == (rows[:, None, None] & units)).all():
        return None
    return np.flatnonzero(rows), np.flatnonzero(units)


def only_written(rows=None, units=None):
    """z is right at rows and units that pass ``rows(found)``/``units(found)`` (None: all), unwritten elsewhere."""

    def detect(evidence):
        part = written_part(evidence)
        if part is None:
            return None
        for found, extent, test in ((part[0], BATCH, rows), (part[1], UNITS, units)):
            if not (test(found) if test else found.size == extent):
                return None
        lost_rows = np.setdiff1d(np.arange(BATCH), part[0])
        if lost_rows.size:
            return (f"z: only {locate.spans(part[0], BATCH, 'batch row')} are written (and right); "
                    f"{locate.spans(lost_rows, BATCH, 'batch row')} never (probe: {ODD})")
        lost_units = np.setdiff1d(np.arange(UNITS), part[1])
        return (f"z: only the columns of {locate.spans(part[1], UNITS, 'unit')} are written (and right), in every "
                f"batch row; those of {locate.spans(lost_units, UNITS, 'unit')} never (probe: {ODD})")

    return detect


def nan_in_both(evidence):
    """NaN everywhere, even in the probe whose z held numbers: the sums themselves are NaN."""
    odd, held = evidence.probe(ODD), evidence.probe(HELD)
    if odd.error is not None or held.error is not None or odd.order_dependent():
        return None
    if np.isnan(odd.outputs["z"]).all() and np.isnan(held.outputs["z"]).all():
        return (f"every element of z is NaN, even where z held numbers before the launch (probes: {ODD}; {HELD}): "
                "the sums started from NaN, which is what a local array holds at first on the simulator")
    return None


def k_stops_early(evidence):
    """z equals the sums over the first m < K values of k."""
    result = evidence.probe(ODD)
    if result.error is not None:
        return None
    for m in range(1, K):
        if locate.where_wrong(result.outputs["z"], dots(result.inputs, slice(0, m)), AXES) is None:
            return f"z equals the sums over k = 0..{m - 1} alone, not 0..{K - 1} (probe: {ODD})"
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


def one_h_row_per_thread(evidence):
    """Each row of z holds the sums of another batch row, the same one for all the rows of a thread."""
    result = evidence.probe(ODD)
    if result.error is not None or not np.isfinite(result.outputs["z"]).all():
        return None
    right = dots(result.inputs)
    source = []
    for b in range(BATCH):
        same = [m for m in range(BATCH) if locate.where_wrong(result.outputs["z"][b], right[m], AXES[1:]) is None]
        if not same:
            return None
        source.append(same[0])
    groups = [{source[b] for b in range(g, min(g + ROWS, BATCH))} for g in range(0, BATCH, ROWS)]
    if source == list(range(BATCH)) or any(len(s) != 1 for s in groups):
        return None
    held = "; ".join(f"{locate.spans(range(g, min(g + ROWS, BATCH)), BATCH, 'batch row')} those of row {s.pop()}"
                     for g, s in zip(range(0, BATCH, ROWS), groups))
    return f"z: the rows of each thread all hold the sums of one batch row: {held} (probe: {ODD})"


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
                "IndexError on the simulator, a write into the NaN padding after z on a GPU",
                symptoms.past_edge(ODD, "z")),
        Mistake("one_row_per_thread", "each thread does one batch row, not ROWS",
                "the check launches one thread per unit and group of ROWS rows: each thread loops over its rows "
                "group * ROWS + r, r < ROWS, and each weight it loads feeds one FMA per row",
                "only one batch row per group of ROWS is written; the rest of z is never written",
                only_written(rows=lambda found: found.size == GROUPS)),
        Mistake("rows_overlap", "a thread's rows start at its group number, not group * ROWS",
                "group g owns rows g * ROWS .. g * ROWS + ROWS - 1: b = group * ROWS + r (with group + r, neighbouring "
                "groups share rows and the last rows belong to nobody)",
                "the first rows are written, the last ones never",
                only_written(rows=lambda found: np.array_equal(found, np.arange(GROUPS + ROWS - 1)))),
        Mistake("thread_index_swapped", "the thread index is split the wrong way round",
                "consecutive threads take consecutive units: jj = tid % UNITS, group = tid // UNITS",
                "only the first units are written, in every batch row",
                only_written(units=lambda found: np.array_equal(found, np.arange(GROUPS)))),
        Mistake("sums_not_zeroed", "the 4 x ROWS sums are not set to zero before the loop over k",
                "a local array holds whatever was there (NaN on the simulator): set every acc[g, r] to 0.0 first",
                "z is NaN everywhere, even where it held numbers before the launch",
                nan_in_both, stage="again"),
        Mistake("added_to_z", "the sums are added to z instead of written into it",
                "z is an output: write it (`z[...] = acc[g, r]`); what it held before the launch does not count",
                "z is NaN where it started as NaN, and its old values plus the sums where it held numbers",
                symptoms.equals(HELD, "z", lambda inputs: inputs["z"] + dots(inputs), "its old values plus the sums"), stage="again"),
        Mistake("k_stops_early", "the loop over k stops early",
                "the sums run over every k: range(h.shape[1]), the hidden size (h.shape[0] is the batch)",
                "z equals the sums over the first values of k only", k_stops_early),
        Mistake("last_k_only", "each k replaces the sums instead of adding to them",
                "add into the sums (`acc[g, r] += ...`), and set them to zero once, before the loop over k, not in it",
                "z equals the products of the last k alone",
                symptoms.equals(ODD, "z", lambda inputs: dots(inputs, slice(K - 1, K)), "the last k's products alone")),
        Mistake("gate_columns_interleaved", "the gate columns are taken as 4 * jj + g, not g * UNITS + jj",
                "the gates are side by side in blocks of UNITS columns (i, then f, c, o, as in Keras): gate g of unit "
                "jj is column g * UNITS + jj, in u and in z alike",
                "z holds the right sums in the wrong columns",
                columns_interleaved),
        Mistake("one_h_row_per_thread", "the rows of a thread all read the same row of h",
                "each row has its own h: inside the row loop read h[b, k], with b = group * ROWS + r",
                "each row of z holds the sums of another batch row, the same one for every row of a thread",
                one_h_row_per_thread),
    ),
)
