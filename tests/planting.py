"""Every typical mistake of the exercises' catalogs, planted on purpose in the library's solution:
how tests/test_exercises.py shows that each exercise's check recognises each mistake by its own
symptom (the package holds the catalogs and their detectors, not the broken solutions).

A mistake is planted by replacing snippets of the solution's source (``replaced``): for a kernel
exercise the solution's kernel, recompiled; for a step exercise one method of a subclass of the
solution's step. ``PLANTS[name][mistake]`` makes it, each time it is called; ``planted(name,
mistake)`` calls it. A snippet no longer in the solution's source raises ValueError: the solution
changed, and the planted mistake must follow it.
"""

from __future__ import annotations

import functools
import inspect
import textwrap

from numba import cuda

from fastlstm_lib.course import exercises
from fastlstm_lib.steps.step02_baseline import Baseline


def replaced(function, *edits):
    """``function`` recompiled with each (old, new) snippet of its source replaced (once each).

    Globals and closure variables (a kernel factory's constants) are kept. A snippet that is not
    in the source raises ValueError.
    """
    function = getattr(function, "py_func", function)
    source = textwrap.dedent(inspect.getsource(function))
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))
    for old, new in edits:
        if old not in source:
            raise ValueError(f"cannot plant a mistake in {function.__name__}: {old!r} is not in its source")
        source = source.replace(old, new, 1)
    namespace = dict(function.__globals__)
    if function.__closure__:
        namespace.update(zip(function.__code__.co_freevars, (cell.cell_contents for cell in function.__closure__)))
    exec(compile(source, f"<planted {function.__name__}>", "exec"), namespace)
    return namespace[function.__name__]


def plant(name: str, *edits, method: str | None = None):
    """What makes exercise ``name``'s solution with the snippets replaced: in its kernel (``method``
    None), or in ``method`` of a subclass of its step. The solution is built when it is called."""

    def make():
        solution = exercises.get(name).solution()
        if method is None:  # a kernel, recompiled; a plain function (a_fragment) as it is
            function = replaced(solution, *edits)
            return cuda.jit(function) if hasattr(solution, "py_func") else function
        return type("Planted", (solution,), {method: replaced(getattr(solution, method), *edits)})

    return make


def with_method(name: str, method: str, function):
    """What makes a subclass of exercise ``name``'s solution step with ``method`` set to ``function``."""
    return lambda: type("Planted", (exercises.get(name).solution(),), {method: function})


# ---- 00 global_index ----------------------------------------------------------------------------

global_index = functools.partial(plant, "global_index")

GLOBAL_INDEX = {
    "unguarded_tail": global_index(("    if i < out.size:", "    if True:")),
    "same_elements_every_block": global_index(("i = cuda.grid(1)", "i = cuda.threadIdx.x")),
    "block_size_missing": global_index(("i = cuda.grid(1)", "i = cuda.blockIdx.x + cuda.threadIdx.x")),
    "thread_index_missing": global_index(("i = cuda.grid(1)", "i = cuda.blockIdx.x * cuda.blockDim.x")),
    "local_number_written": global_index(("out[i] = i", "out[i] = cuda.threadIdx.x")),
}

# ---- 02 add_bias --------------------------------------------------------------------------------

add_bias = functools.partial(plant, "add_bias")

ADD_BIAS = {
    "unguarded_tail": add_bias(("    if i < out.size:\n", "    if True:\n")),
    "same_elements_every_block": add_bias(("i = cuda.grid(1)", "i = cuda.threadIdx.x")),
    "bias_missing": add_bias(("a[r, c] + bias[c]", "a[r, c]")),
    "bias_along_rows": add_bias(("bias[c]", "bias[r]")),
}

# ---- 03 gate_products ---------------------------------------------------------------------------

GATE_PRODUCTS = {
    "no_transpose": plant("gate_products", ("transpose_b=weights.transposed", "transpose_b=False"),
                          method="input_gemm"),
    "per_gate_gemms": with_method("gate_products", "gate_products", Baseline.gate_products),
}

# ---- 04 side_stream -----------------------------------------------------------------------------

side_stream = functools.partial(plant, "side_stream", method="run_layer")
RECORD = "state.input_done[t].record(state.side)"
WAIT = "state.input_done[t].wait(state.stream)"

SIDE_STREAM = {
    "event_on_wrong_stream": side_stream((RECORD, "state.input_done[t].record(state.stream)")),
    "missing_wait": side_stream((WAIT, "pass")),
    "wait_on_wrong_stream": side_stream((WAIT, "state.input_done[t].wait(state.side)")),
    "layer_input_unordered": side_stream(("state.layer_ready.wait(state.side)", "pass")),
    "slot_reused": side_stream(("state.x_seq[t], state.side)", "state.x_seq[0], state.side)"),
                               ("self.cell_update(state, weights, state.x_seq[t],",
                                "self.cell_update(state, weights, state.x_seq[0],")),
}

# ---- 05 fused_cell ------------------------------------------------------------------------------

fused_cell = functools.partial(plant, "fused_cell")
CELL_BIAS = ("+ bias[j]", "+ bias[hidden + j]", "+ bias[2 * hidden + j]", "+ bias[3 * hidden + j]")
H_GATES = ("+ h_gates[r, j] ", "+ h_gates[r, hidden + j] ", "+ h_gates[r, 2 * hidden + j] ",
           "+ h_gates[r, 3 * hidden + j] ")

FUSED_CELL = {
    "unguarded_tail": fused_cell(("    if i < c.size:\n", "    if True:\n")),
    "same_elements_every_block": fused_cell(("i = cuda.grid(1)", "i = cuda.threadIdx.x")),
    "c_not_stored": fused_cell(("        c[r, j] = c_new\n", "")),
    "gate_order": fused_cell(("sigmoidf(z_f) * c[r, j] + sigmoidf(z_i)", "sigmoidf(z_i) * c[r, j] + sigmoidf(z_f)")),
    "bias_missing": fused_cell(*((line, "") for line in CELL_BIAS)),
    "bias_twice": fused_cell(*((line, line + " " + line) for line in CELL_BIAS)),
    "recurrent_product_ignored": fused_cell(*((line, "") for line in H_GATES)),
    "forget_gate_ignored": fused_cell(("sigmoidf(z_f) * c[r, j] + ", "")),
    "candidate_sigmoid": fused_cell(("math.tanh(z_c)", "sigmoidf(z_c)")),
    "h_without_tanh": fused_cell(("sigmoidf(z_o) * math.tanh(c_new)", "sigmoidf(z_o) * c_new")),
    "h_from_old_c": fused_cell(("        c[r, j] = c_new\n        h[r, j] = sigmoidf(z_o) * math.tanh(c_new)",
                                "        h[r, j] = sigmoidf(z_o) * math.tanh(c[r, j])\n        c[r, j] = c_new")),
}

# ---- 06 upload ----------------------------------------------------------------------------------

upload = functools.partial(plant, "upload", method="upload_weights")
UPLOAD_KERNEL = "kernel=cuda.to_device(layer.kernel)"

UPLOAD = {
    "host_arrays": upload((UPLOAD_KERNEL, "kernel=layer.kernel")),
    "still_transposed": with_method("upload", "upload_weights", Baseline.upload_weights),
    "transposed_flag_kept": upload(("transposed=False", "transposed=True")),
    "uploads_w": upload((UPLOAD_KERNEL, "kernel=cuda.to_device(layer.kernel.T.copy())")),
    "column_major": upload((UPLOAD_KERNEL, "kernel=cuda.to_device(layer.kernel.T.copy().T)")),
}

# ---- 07 input_chunks ----------------------------------------------------------------------------

input_chunks = functools.partial(plant, "input_chunks", method="run_layer")
CHUNK_GEMM = "self.input_gemm(weights, rows(xs[t0:t1]), rows(state.x_seq[t0:t1]), state.side)"
CHUNK_WAIT = "        done.wait(state.stream)\n"  # indented as in the dedented method

INPUT_CHUNKS = {
    "per_step_input_gemms": input_chunks((CHUNK_GEMM, "for t in range(t0, t1):\n            self.input_gemm(weights, "
                                                      "xs[t], state.x_seq[t], state.side)")),
    "chunk_event_not_waited": input_chunks((CHUNK_WAIT, "")),
    "wait_before_record": input_chunks((CHUNK_WAIT, ""),
                                       (CHUNK_GEMM, "done.wait(state.stream)\n        " + CHUNK_GEMM)),
    "state_reset_per_chunk": input_chunks(("    h_prev = state.h_zero\n", ""),
                                          (CHUNK_WAIT, CHUNK_WAIT + "        h_prev = state.h_zero\n")),
    "h_from_current_step": input_chunks(("self.recurrent_gemm(state, weights, h_prev)",
                                         "self.recurrent_gemm(state, weights, h_prev if t == 0 else hs[t])")),
}

# ---- 08 diagonals -------------------------------------------------------------------------------

diagonals = functools.partial(plant, "diagonals", method="run")
DIAGONALS = ("    for diagonal in range(layers + chunks - 1):\n"
             "        for layer in range(max(0, diagonal - chunks + 1), min(layers, diagonal + 1)):\n"
             "            self.run_chunk(state, layer, diagonal - layer, inputs[layer], outputs[layer])")


def layer_major(order: str) -> str:
    """The diagonal loop of Wavefront.run written layer by layer, the layers in ``order``."""
    return (f"    for layer in {order}:\n        for k in range(chunks):\n"
            "            self.run_chunk(state, layer, k, inputs[layer], outputs[layer])")


DIAGONALS_PLANTS = {
    "chunk_out_of_range": diagonals(("range(max(0, diagonal - chunks + 1), min(layers, diagonal + 1))",
                                     "range(min(layers, diagonal + 1))")),
    "top_layer_first": diagonals((DIAGONALS, layer_major("reversed(range(layers))"))),
    "layer_by_layer": diagonals((DIAGONALS, layer_major("range(layers)"))),
    "previous_run_not_awaited": diagonals(("other.chunk_done[-1].wait(lane.stream)", "pass")),
}

# ---- 09 grid_step -------------------------------------------------------------------------------

grid_step = functools.partial(plant, "grid_step")
LAYER_BIAS = ("+ bias_i\n", "+ bias_f\n", "+ bias_c\n", "+ bias_o\n")

GRID_STEP = {
    "missing_grid_barrier": grid_step(("grid.sync()", "pass")),
    "no_first_step_case": grid_step(("if t > 0:", "if True:")),
    "reads_current_step": grid_step(("hs[t - 1, row, uint64(k0) + kk]", "hs[t, row, uint64(k0) + kk]")),
    "c_reset_each_step": grid_step(("    for t in range(hs.shape[0]):\n",
                                    "    for t in range(hs.shape[0]):\n        for m in range(mine):\n"
                                    "            c[m] = float32(0.0)\n")),
    "gate_order": grid_step(("sigmoidf(z_f) * c[m] + sigmoidf(z_i)", "sigmoidf(z_i) * c[m] + sigmoidf(z_f)")),
    "bias_twice": grid_step(*((line, line.rstrip("\n") + " " + line.strip() + "\n") for line in LAYER_BIAS)),
}

# ---- 09 rows_per_thread -------------------------------------------------------------------------

rows_per_thread = functools.partial(plant, "rows_per_thread")
ZEROING = "    for r in range(ROWS):\n        for g in range(4):\n            acc[g, r] = float32(0.0)\n"

ROWS_PER_THREAD = {
    "unguarded_last_group": rows_per_thread(("if b < batch:", "if True:"), ("if b < batch:", "if True:")),
    "one_row_per_thread": rows_per_thread(("for r in range(ROWS):  # ...each", "for r in range(1):  # ...each"),
                                          ("for r in range(ROWS):\n        b", "for r in range(1):\n        b")),
    "sums_not_zeroed": rows_per_thread((ZEROING, "")),
    "added_to_z": rows_per_thread(("z[b, g * UNITS + jj] = acc[g, r]", "z[b, g * UNITS + jj] += acc[g, r]")),
    "last_k_only": rows_per_thread(*((f"acc[{g}, r] += x", f"acc[{g}, r] = x") for g in range(4))),
    "gate_columns_interleaved": rows_per_thread(("u[k, jj]", "u[k, 4 * jj]"), ("u[k, UNITS + jj]", "u[k, 4 * jj + 1]"),
                                                ("u[k, 2 * UNITS + jj]", "u[k, 4 * jj + 2]"),
                                                ("u[k, 3 * UNITS + jj]", "u[k, 4 * jj + 3]")),
}

# ---- 12 tile_loads ------------------------------------------------------------------------------

tile_loads = functools.partial(plant, "tile_loads")
LOAD_A = "a_tile[ty, tx] = a[row, a_col] if (row < m and a_col < k_total) else float32(0.0)"
LOAD_B = "b_tile[ty, tx] = b[b_row, col] if (b_row < k_total and col < n) else float32(0.0)"

TILE_LOADS = {
    "unguarded_load": tile_loads((LOAD_A, "a_tile[ty, tx] = a[row, a_col]"), (LOAD_B, "b_tile[ty, tx] = b[b_row, col]")),
    "missing_sync_after_loads": tile_loads(("        cuda.syncthreads()\n        for kk in range(tile):",
                                            "        for kk in range(tile):")),
    "missing_sync_before_next_loads": tile_loads(("        cuda.syncthreads()  # nobody overwrites",
                                                  "        pass  # nobody overwrites")),
    "wrong_load_index": tile_loads(("a_tile[ty, tx] = a[row, a_col]", "a_tile[tx, ty] = a[row, a_col]")),
    "edge_not_zeroed": tile_loads((LOAD_A, "if row < m and a_col < k_total:\n                a_tile[ty, tx] = a[row, a_col]"),
                                  (LOAD_B, "if b_row < k_total and col < n:\n                b_tile[ty, tx] = b[b_row, col]")),
}

# ---- 14 a_fragment ------------------------------------------------------------------------------

a_fragment = functools.partial(plant, "a_fragment")
ROW = "row = group + 8 * (i % 2)"
COL = "col = tig + 4 * (i // 2)"

A_FRAGMENT = {
    "rows_and_columns_swapped": a_fragment(("return row, col", "return col, row")),
    "group_and_tig_swapped": a_fragment(("group = lane // 4", "group = lane % 4"), ("tig = lane % 4", "tig = lane // 4")),
    "registers_in_other_order": a_fragment((ROW, "row = group + 8 * (i // 2)"), (COL, "col = tig + 4 * (i % 2)")),
}

# ---- 41 column_sum ------------------------------------------------------------------------------

column_sum = functools.partial(plant, "column_sum")
STRIDE = "range(ty, rows, row_threads)"
WRITE = """        if accumulate:
            out[col] += partial[0, tx]
        else:
            out[col] = partial[0, tx]"""  # the source as ``replaced`` reads it: dedented by the factory's 4

COLUMN_SUM = {
    "rows_and_columns_swapped": column_sum(("acc += a[r, col]", "acc += a[col, r]")),
    "accumulate_always": column_sum((WRITE, "        out[col] += partial[0, tx]")),
    "same_columns_every_block": column_sum(("col = cuda.blockIdx.x * COLUMNS + tx", "col = tx")),
    "unguarded_column_edge": column_sum(("if col < cols:  # the last tile", "if True:  # the last tile"),
                                        ("if ty == 0 and col < cols:", "if ty == 0:")),
    "missing_sync_before_tree": column_sum(
        ("    cuda.syncthreads()  # every partial sum is stored before any is read\n", "")),
    "every_thread_writes": column_sum(("if ty == 0 and col < cols:", "if col < cols:")),
    "missing_sync_in_tree": column_sum(("        cuda.syncthreads()  # this level is done before the next one reads it\n",
                                        "")),
    "tree_drops_partial_sums": column_sum(("while half > 0:", "while half > 1:")),
    "stride_skips_rows": column_sum((STRIDE, "range(ty, rows, COLUMNS)")),
    "accumulate_ignored": column_sum((WRITE, "        out[col] = partial[0, tx]")),
}

#: exercise -> {mistake: what makes the solution with it}, in the catalogs' order.
PLANTS = {"global_index": GLOBAL_INDEX, "add_bias": ADD_BIAS, "gate_products": GATE_PRODUCTS, "side_stream": SIDE_STREAM, "fused_cell": FUSED_CELL,
          "upload": UPLOAD, "input_chunks": INPUT_CHUNKS, "diagonals": DIAGONALS_PLANTS, "grid_step": GRID_STEP,
          "rows_per_thread": ROWS_PER_THREAD, "tile_loads": TILE_LOADS, "a_fragment": A_FRAGMENT,
          "column_sum": COLUMN_SUM}


def planted(name: str, mistake: str):
    """Exercise ``name``'s solution with ``mistake`` of its catalog planted in it."""
    return PLANTS[name][mistake]()
