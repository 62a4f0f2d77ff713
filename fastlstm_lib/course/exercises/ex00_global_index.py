"""Exercise (notebook 00): a first kernel, ``global_index(out)``: each thread writes its number in
the grid, ``cuda.grid(1)``, into that element of ``out``; 3 blocks of 8 threads over 20 elements,
so the last 4 threads must write nothing. ``picture`` draws which thread wrote where.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .base import Mistake
from .kernel_runs import KernelExercise, Probe
from . import schedule, symptoms

BLOCKS, THREADS, SIZE = 3, 8, 20  # 24 threads, 20 elements: the last 4 threads have none
GRID = f"{SIZE} elements, {BLOCKS} blocks of {THREADS} threads"


@cuda.jit
def global_index(out):
    """Each thread writes its own number in the grid into its element of out."""
    i = cuda.grid(1)  # blockIdx.x * blockDim.x + threadIdx.x: this thread's number in the whole grid
    if i < out.size:  # 24 threads for 20 elements: the last 4 have none
        out[i] = i


def launch(kernel, arrays: dict) -> None:
    kernel[BLOCKS, THREADS](arrays["out"])


def grid_inputs() -> dict:
    return {"out": np.full(SIZE, np.nan, dtype=np.float32)}


def expected(inputs: dict) -> dict:
    return {"out": np.arange(inputs["out"].size, dtype=np.float64)}


# ---- the picture --------------------------------------------------------------------------------


def run_for_picture(kernel):
    """(the buffer, one cell per thread, after ``kernel`` ran on out at its start; the error or None;
    the (thread, element) writes: watched on the simulator, read from the values on a GPU)."""
    whole = cuda.to_device(np.full(BLOCKS * THREADS, np.nan, dtype=np.float32))
    writes, error = [], None
    try:
        if schedule.available():
            with schedule.ordered_threads("ascending"):
                launch(kernel, {"out": watched(whole, writes)})
        else:
            launch(kernel, {"out": whole[:SIZE]})
        cuda.synchronize()
    except Exception as raised:  # an unguarded thread on the simulator: what was written before it stays
        error = raised
    values = whole.copy_to_host()
    if not schedule.available():
        writes = [(int(v), n) for n, v in enumerate(values)
                  if np.isfinite(v) and float(v).is_integer() and 0 <= v < len(values)]
    return values, error, writes


def watched(whole, writes: list):
    """Out on the simulator, an array that appends (thread, element) to ``writes`` before each write."""
    import threading

    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    class Watched(FakeCUDAArray):
        def __setitem__(self, index, value):
            thread = threading.current_thread()
            element = index[0] if isinstance(index, tuple) else index
            writes.append((thread.blockIdx.x * THREADS + thread.threadIdx.x, int(element)))
            return super().__setitem__(index, value)

    return Watched(whole._ary[:SIZE])


def picture(kernel, verdict):
    """The grid's threads above out, a line from each thread to what it wrote; unwritten elements red,
    writes past the end in dashed cells. A stub draws the solution's picture, greyed."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    attempted = verdict.status != "not attempted"
    if attempted and not hasattr(kernel, "py_func"):
        kernel = cuda.jit(kernel)
    values, error, writes = run_for_picture(kernel if attempted else global_index)
    writer = {element: thread for thread, element in writes}  # the last thread to write each element
    colors = ("tab:blue", "tab:orange", "tab:green")
    fade = 1.0 if attempted else 0.3
    text_fade = max(fade, 0.5)
    fig, ax = plt.subplots(figsize=(10, 3.4))
    for n in range(BLOCKS * THREADS):  # the threads, in their blocks; those past the end lighter
        ax.add_patch(Rectangle((n, 2), 0.92, 0.9, facecolor=colors[n // THREADS],
                               alpha=fade * (0.35 if n >= SIZE else 0.85), edgecolor="black", linewidth=0.5))
        ax.text(n + 0.46, 2.45, str(n), ha="center", va="center", fontsize=8, alpha=text_fade)
    for block in range(BLOCKS):
        ax.text(block * THREADS + THREADS / 2, 3.15, f"block {block} (blockIdx.x = {block})", ha="center",
                va="bottom", fontsize=8)
    for n, value in enumerate(values):  # out, then the cells past its end
        inside, wrote = n < SIZE, writer.get(n)
        if wrote is not None and 0 <= wrote < BLOCKS * THREADS:
            face = colors[wrote // THREADS]
        else:
            face = "tab:red" if inside else "white"
        label = "NaN" if inside and np.isnan(value) else ("" if np.isnan(value) else f"{value:g}")
        if not inside and n in writer and np.isnan(value):
            label = "raised"  # the simulator stops the write past the end with an IndexError
        ax.add_patch(Rectangle((n, 0), 0.92, 0.9, facecolor=face, alpha=fade * 0.85,
                               edgecolor="black" if inside else "tab:red", linewidth=0.5 if inside else 1.2,
                               linestyle="-" if inside else "--"))
        ax.text(n + 0.46, 0.45, label, ha="center", va="center", fontsize=8 if len(label) < 4 else 6,
                alpha=text_fade)
    for thread, element in sorted(set(writes)):  # who touched what
        if 0 <= element < BLOCKS * THREADS and 0 <= thread < BLOCKS * THREADS:
            ax.plot([thread + 0.46, element + 0.46], [1.98, 0.92], color="dimgray", linewidth=0.7, alpha=fade)
    ax.text(SIZE + (BLOCKS * THREADS - SIZE) / 2, -0.3, "past the end of out", ha="center", va="top", fontsize=8,
            color="tab:red")
    ax.set_xlim(-0.2, BLOCKS * THREADS + 0.1)
    ax.set_ylim(-0.8, 3.6)
    ax.set_yticks([0.45, 2.45], ["out: the number\nwritten there", "threads: each one's\ncuda.grid(1)"])
    ax.set_xticks([0.46, 5.46, 10.46, 15.46, 19.46], ["0", "5", "10", "15", "19"])
    how = "" if schedule.available() else " (on a GPU: the thread whose number the element holds)"
    ax.set_xlabel(f"element of out; a line from each thread to what it wrote{how}; red: never written")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    if not attempted:
        title = "global_index: not attempted yet. Once your kernel is right, it draws this: thread n writes out[n]"
    elif verdict.passed:
        title = f"global_index: passed. Thread n wrote out[n]; threads {SIZE}..{BLOCKS * THREADS - 1} wrote nothing"
    else:
        title = f"global_index: not right yet ({verdict.mistake})"
        if error is not None:
            title += f": {type(error).__name__}"
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig


EXERCISE = KernelExercise(
    name="global_index", notebook="00", difficulty="easy",
    title="the kernel global_index(out): each thread writes its number in the whole grid into out at that number",
    hints=(
        ("Which of the numbers a thread can read tells it apart from every other thread of the grid, and "
         "not just of its block? And what should the threads past the end of out do?"),
        ("Take the thread's number in the whole grid (its block's number times the block's size, plus its "
         "place in the block: Numba has one call for it); a thread whose number is an element of out writes "
         "the number there, the others do nothing."),
        "i = cuda.grid(1); then, only when i < out.size: out[i] = i",
    ),
    solution=lambda: global_index, source="fastlstm_lib/course/exercises/ex00_global_index.py",
    launch=launch, expected=expected, outputs={"out": ("element",)},
    probes=(Probe(GRID, grid_inputs),), picture=picture,
    catalog=(
        Mistake(
            "unguarded_tail", "the threads past the last element are not guarded",
            f"{BLOCKS} x {THREADS} = {BLOCKS * THREADS} threads for {SIZE} elements: only a thread with an element "
            "writes, `if i < out.size:`",
            symptoms.past_edge(GRID, "out")),
        Mistake(
            "same_elements_every_block", "every block writes the same elements",
            "cuda.threadIdx.x numbers the threads of one block only (0 to 7 in each); cuda.grid(1) "
            "(= blockIdx.x * blockDim.x + threadIdx.x) numbers them across the grid",
            symptoms.written_only(GRID, "out", symptoms.first(THREADS))),
        Mistake(
            "block_size_missing", "the block's number is not multiplied by the block's size",
            "block b starts at thread b * blockDim.x of the grid, not at b: cuda.grid(1) does the sum for you",
            symptoms.written_only(GRID, "out", symptoms.first(BLOCKS - 1 + THREADS))),
        Mistake(
            "thread_index_missing", "the thread's place in its block is left out",
            "blockIdx.x * blockDim.x is where a block starts; each of its threads adds its own threadIdx.x "
            "(cuda.grid(1) does both)",
            symptoms.written_only(GRID, "out", lambda written: list(np.flatnonzero(written)) ==
                                  list(range(0, SIZE, THREADS)))),
        Mistake(
            "local_number_written", "each thread writes its number within its block, not in the grid",
            "write the same number you index out with: the grid-wide one",
            symptoms.equals(GRID, "out", lambda inputs: np.arange(SIZE, dtype=np.float64) % THREADS,
                            "each thread's threadIdx.x")),
    ),
)
