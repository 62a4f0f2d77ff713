"""Exercise (notebook 02): the point-wise kernel ``add_bias(a, bias, out)``, one thread per element;
the solution is the baseline's ``kernels/pointwise._add_bias``."""

from __future__ import annotations

import numpy as np

from ...kernels import pointwise
from ...kernels.geometry import POINTWISE_THREADS
from .base import Mistake
from .kernel_runs import KernelExercise, Probe, pointwise_launch
from . import symptoms

ROWS = 3
#: Columns: odd, and enough that ROWS x COLS needs a second, partly used block of threads.
COLS = POINTWISE_THREADS // ROWS + (3 if (POINTWISE_THREADS // ROWS) % 2 == 0 else 4)
ODD = f"{ROWS} x {COLS}: a block of {POINTWISE_THREADS} threads and part of a second"


def odd_inputs() -> dict:
    rng = np.random.default_rng(2)
    return {"a": rng.standard_normal((ROWS, COLS)).astype(np.float32),
            "bias": rng.standard_normal(COLS).astype(np.float32),
            "out": np.full((ROWS, COLS), np.nan, dtype=np.float32)}


def expected(inputs: dict) -> dict:
    return {"out": inputs["a"].astype(np.float64) + inputs["bias"]}


EXERCISE = KernelExercise(
    name="add_bias", notebook="02", difficulty="easy",
    title="the kernel add_bias(a, bias, out): out[r, c] = a[r, c] + bias[c], one thread per element of out",
    hints=(
        ('One thread per element of out: how does a thread find which element is its own, and '
         'what does a thread with no element do?'),
        ('cuda.grid(1) numbers the threads of the whole grid, and the grid has more threads than '
         'out has elements: what must the extra ones do? And which index of out does the bias '
         'depend on, and how does a thread get it from its number?'),
        ('i = cuda.grid(1); if i < out.size: r, c = i // out.shape[1], i % out.shape[1]; out[r, '
         'c] = a[r, c] + bias[c]'),
    ),
    solution=lambda: pointwise._add_bias, source="fastlstm_lib/kernels/pointwise/v1_elementwise.py",
    launch=pointwise_launch("out", "a", "bias", "out"), expected=expected, outputs={"out": ("row", "column")},
    probes=(Probe(ODD, odd_inputs),),
    catalog=(
        Mistake(
            "unguarded_tail", "threads past the last element are not guarded",
            "the grid has more threads than elements (whole blocks): wrap the body in `if i < out.size:`",
            symptoms.past_edge(ODD, "out")),
        Mistake(
            "same_elements_every_block", "every block computes the same elements",
            "cuda.threadIdx.x numbers the threads of one block only; cuda.grid(1) (= blockIdx.x * blockDim.x + "
            "threadIdx.x) numbers them across the grid",
            symptoms.written_only(ODD, "out", symptoms.first(POINTWISE_THREADS))),
        Mistake(
            "bias_missing", "the bias is not added",
            "out[r, c] = a[r, c] + bias[c]",
            symptoms.equals(ODD, "out", lambda inputs: inputs["a"].astype(np.float64), "a, without the bias")),
        Mistake(
            "bias_along_rows", "the bias is indexed by the row instead of the column",
            "one bias value per column (per gate unit): bias[c], not bias[r]",
            symptoms.equals(ODD, "out", lambda inputs: inputs["a"].astype(np.float64) + inputs["bias"][:ROWS, None],
                            "a + bias[row]")),
    ),
)
