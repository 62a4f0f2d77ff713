"""Every CUDA kernel of the library compiles for every GPU architecture of the course (sm_52 to
sm_90) without a GPU, and data/kernel_resources.csv says what the compiler made of each (the
compile matrix: tools/compile_matrix/, on the path through conftest.py).

The compilers are pip test dependencies (CUDA 13 for sm_75 and newer, CUDA 12 for sm_52), so on
Linux nothing here skips; elsewhere there are no such wheels, and the module skips, saying so.
Cold (an empty .cache/compile_matrix/) the matrix takes about 1.5 minutes on two cores; warm, it
compiles only the kernels whose key changed (nothing changed: about a second).
"""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import compile_matrix as cm
from compile_matrix import keys
from compile_matrix.sass import (Instruction, ffma_after_load, int64_multiplies_divides, load_use_distance, loop_ffma_chain,
                                 main_loop_mix, parse_nvdisasm, reads, staged_loads, staging_per_float, writes)
from compile_matrix.toolkits import ARCHS, arch_name, assemble, resources, tool
from fastlstm_lib.kernels.gemm import GPU_LARGE
from fastlstm_lib.kernels.persistent import MAX_REGISTERS
from fastlstm_lib.kernels.persistent.registers import MAX_REGISTERS as V2_MAX_REGISTERS
from fastlstm_lib.kernels.versions import every

from conftest import needs_compile_matrix

pytestmark = [needs_compile_matrix, pytest.mark.tools]  # make test-tools; pip's CUDA compilers (nvidia-* wheels) and numba-cuda: Linux only

ARCH_NAMES = [arch_name(cc) for cc in ARCHS]
#: Spill bytes (stores, and loads) the persistent kernel may have at its register cap, per
#: architecture. It spilled 40-92 bytes on sm_52, 4-112 on sm_75 and sm_80, 32-36 on sm_89 and
#: sm_90, before its indices went unsigned and its load loops counted rounds; now none.
PERSISTENT_SPILL_BOUND = {"sm_52": 0, "sm_75": 0, "sm_80": 0, "sm_89": 0, "sm_90": 0}
#: Every compiled row: the builds of every kernel version's spec (tests/test_kernel_specs.py holds
#: that every kernel has a spec).
KERNELS = {build.row for spec in every() for build in spec.builds()}


@pytest.fixture(scope="module")
def rows():
    """The committed table, as ``cm.build`` returns it (test_the_table_is_current checks it is current)."""
    return cm.committed_rows()


def test_the_table_is_current():
    """Built from today's sources and compilers (the key each file records), and a fresh build of one
    architecture, the H100's, reproduces its rows and listings: the compilers really give the table."""
    assert cm.stale(cm.TABLE, cm.LISTINGS) == {}, f"stale: run `{cm.COMMAND}`"
    fresh = cm.build(archs=[(9, 0)])
    committed = [row for row in cm.committed_rows() if row["arch"] == "sm_90"]
    assert [{k: v for k, v in row.items() if k != "sass"} for row in fresh] == \
        [{k: v for k, v in row.items() if k != "sass"} for row in committed], f"stale: run `{cm.COMMAND}`"
    listings = cm.listings(fresh)
    assert {(path.stem.split(".")[0], path.stem.split(".")[1]) for path in listings} == {
        listed for listed in cm.LISTED if listed[1] == "sm_90"}
    for path, text in listings.items():
        assert path.read_text() == text, f"{path} is stale: run `{cm.COMMAND}`"


def test_every_kernel_is_built_for_every_architecture_it_exists_for(rows):
    """Every architecture, but for a kernel whose ``Build`` names a ``min_cc``: the TF32 tensor-core
    GEMM (TF32 ``mma.sync`` exists from sm_80 on: ptxas refuses it for sm_75), which the worker
    never tries below it (``jobs.inventory``)."""
    where = cm.built_archs()
    assert set(where) == KERNELS
    assert sorted((row["kernel"], row["arch"]) for row in rows) == sorted(
        (kernel, arch_name(cc)) for kernel in KERNELS for cc in where[kernel])
    assert {kernel for kernel in KERNELS if len(where[kernel]) < len(ARCHS)} == {"tf32_gemm"}
    assert where["tf32_gemm"] == [(8, 0), (8, 9), (9, 0)]
    from compile_matrix.jobs import inventory

    assert "tf32_gemm" in inventory((9, 0), ["tf32_gemm"])
    with pytest.raises(ValueError, match=r"kernels \['tf32_gemm'\] are built by no spec"):
        inventory((7, 5), ["tf32_gemm"])  # the worker never tries it there
    assert "sm_80+ (TF32 mma.sync)" in {row["what"] for row in rows if row["kernel"] == "tf32_gemm"}.pop()


def test_the_tf32_gemm_multiplies_on_tensor_cores(rows):
    """Issue 68's version 9 (kernels/gemm/v9_tf32.py) wherever it is built: its main loop (a trip of
    two slabs of 32) issues 64 HMMA.1688.F32.TF32, 8 per k-step of 8 per warp, and no FFMA (the
    product is the tensor cores'; TF32 rounding is FSETP, an integer add and a LOP3 per value
    stored); 16 fragment loads per 8 HMMA, 128-bit global loads (4 of A and 4 of B per slab), no
    spills, at most 128 registers (4 blocks of 128 threads an SM)."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_80", "sm_89", "sm_90"):
        v9 = table[("tf32_gemm", arch)]
        assert v9["loop_hmma"] == 64 and v9["loop_ffma"] == 0, v9
        assert v9["loop_shared_loads"] == 2 * v9["loop_hmma"] and v9["loop_global_loads"] == 16, v9
        assert v9["loop_barriers"] == 2 and v9["registers"] <= 128, v9
        assert (v9["spill_stores"], v9["spill_loads"], v9["stack_frame"], v9["loop_local"]) == (0, 0, 0, 0), v9
    assert all(row["loop_hmma"] in (0, "") for row in rows if row["kernel"] != "tf32_gemm")


def test_no_kernel_but_the_persistent_one_touches_local_memory(rows):
    """Register-blocked accumulators and every other variable live in registers, on every chip."""
    for row in rows:
        if not row["kernel"].startswith("persistent"):
            assert (row["spill_stores"], row["spill_loads"], row["stack_frame"]) == (0, 0, 0), row


def test_the_persistent_kernel_spills_within_its_bound_at_its_register_cap(rows):
    caps = {build.row: build.max_registers for spec in every() for build in spec.builds()}
    for row in rows:
        if row["kernel"].startswith("persistent"):
            bound = PERSISTENT_SPILL_BOUND[row["arch"]]
            assert caps[row["kernel"]] in (MAX_REGISTERS, V2_MAX_REGISTERS), row
            assert row["max_registers"] == caps[row["kernel"]] and row["registers"] <= caps[row["kernel"]], row
            assert row["spill_stores"] <= bound and row["spill_loads"] <= bound, row


def test_the_persistent_kernel_stages_h_with_many_loads_in_flight(rows):
    """Issue 43: every step, the persistent kernel copies h_{t-1} from L2 to shared memory. One
    load then its store, element after element, waited out one L2 round trip per element (1 load
    in flight: 128 round trips in a row per step at batch 64); now each thread issues
    ``STAGE_LOADS`` (8) loads before its first store, all 16 of its elements at batch 1, on every
    architecture with a disassembler."""
    from fastlstm_lib.kernels.persistent.layout import STAGE_LOADS

    for row in rows:
        if row["kernel"].startswith("persistent_b") and row["arch"] != "sm_52":
            assert row["staged_loads"] >= STAGE_LOADS == 8, row


def test_the_prefetching_gemm_keeps_a_slab_of_loads_in_flight(rows):
    """Version 2 (compiled for any stride) loads an element of the slab and stores it to shared
    memory before loading the next (1 in flight); version 4 issues all of its next slab's loads (4
    of A and 4 of B per thread in the 128 x 128 patch) before this slab's FFMAs, with the same slab
    of 512 FFMAs. (Version 3 for C-contiguous arrays gets the 8 from ptxas, but before the FFMAs
    that wait for them, not during.)"""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_90"):
        assert table[("blocked_gemm", arch)]["staged_loads"] == 1
        prefetch = table[("prefetch_gemm_wide", arch)]
        assert prefetch["staged_loads"] == 8 and prefetch["slab_ffma"] == 512, prefetch
        assert (prefetch["spill_stores"], prefetch["spill_loads"]) == (0, 0), prefetch


def test_the_vector_gemm_spends_its_slab_on_ffma(rows):
    """Issue 43's goal for the widest GEMM (version 5, 128 x 128 patch, compiled as launched): 85%+
    of a slab's instructions FFMA, at most one shared-memory load per 8 FFMA (128-bit loads: 4 per
    64 FFMA), the slab's 4 + 4 elements per thread in one 128-bit global load each, no spills, and
    at most 128 registers, so that an SM of 64K registers holds two of its 256-thread blocks."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_80", "sm_89", "sm_90"):
        vector = table[("vector_gemm_wide", arch)]
        assert vector["slab_ffma"] == 512 and vector["slab_ffma"] / vector["slab_instructions"] >= 0.85, vector
        assert vector["loop_shared_loads"] * 8 <= vector["loop_ffma"], vector
        assert vector["loop_global_loads"] == 2, vector
        assert (vector["spill_stores"], vector["spill_loads"]) == (0, 0) and vector["registers"] <= 128, vector


def test_the_recurrent_gemm_meets_the_kernel_issues_machine_code_targets(rows):
    """Issue 57's targets for version 7 (the recurrent GEMM as step 08 launches it under the "fast"
    policy), from the sm_90 machine code, and the same wherever it is disassembled: 70%+ of a slab
    FFMA, at most one shared load per 4 FFMA (it makes one per 8: 128-bit), at least half of a
    slab's FFMAs issued after the next slab's first global load (version 6's 32 x 32 slab, which
    step 08 ran before, issues none), 16 accumulators per thread, no spills."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_80", "sm_89", "sm_90"):
        v7, v6 = table[("recurrent_gemm", arch)], table[("split_gemm_small", arch)]
        assert v7["slab_ffma"] == 128 and v7["slab_ffma"] / v7["slab_instructions"] >= 0.70, v7
        assert v7["loop_shared_loads"] * 8 <= v7["loop_ffma"], v7
        assert 2 * v7["slab_ffma_after_load"] >= v7["slab_ffma"] > v6["slab_ffma_after_load"], (v7, v6)
        assert (v7["spill_stores"], v7["spill_loads"], v7["stack_frame"]) == (0, 0, 0), v7


def test_the_warp_tiled_gemm_keeps_version_7s_machine_code_targets(rows):
    """Issue 67's version 8 (kernels/gemm/v8_warptiled.py), beside version 7 wherever it is
    disassembled: the same slab of 128 FFMA at 75%+ (76% on sm_80 and sm_90), one 128-bit shared
    load per 8 FFMA (its warp tile takes them from 6 shared wavefronts per warp per k to 4:
    tests/test_gemm_warptiled.py), at least half of a slab's FFMAs after the next slab's first
    global load, more instructions between a global load and its use than version 7 (the next slab
    loaded a slab earlier), at most 4 registers more than version 7 (the second set of the next
    slab's 4 floats) and on sm_90 at most 64 (4 blocks of 256 threads an SM), no spills."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_80", "sm_89", "sm_90"):
        v8, v7 = table[("warptiled_gemm", arch)], table[("recurrent_gemm", arch)]
        assert v8["slab_ffma"] == 128 and v8["slab_ffma"] / v8["slab_instructions"] >= 0.75, v8
        assert v8["loop_shared_loads"] * 8 <= v8["loop_ffma"], v8
        assert 2 * v8["slab_ffma_after_load"] >= v8["slab_ffma"], v8
        assert v8["load_use_distance"] > v7["load_use_distance"], (v8, v7)
        assert v8["registers"] <= v7["registers"] + 4 and (arch != "sm_90" or v8["registers"] <= 64), (v8, v7)
        assert (v8["spill_stores"], v8["spill_loads"], v8["stack_frame"]) == (0, 0, 0), v8


def test_the_warp_tiled_gemm_needs_at_most_one_shared_wavefront_per_4_ffma(rows):
    """Issue 67's target, from the column measured on the simulator (``compile_matrix.wavefronts``): version
    8's main loop at most 1 shared-memory wavefront per 4 FFMA (0.25), version 7's, its baseline, 0.375
    (tests/test_wavefronts.py: the model of their layouts says the same), on every architecture; the
    column empty where the kernel is no blocked GEMM it measures."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ARCH_NAMES:
        v8, v7 = table[("warptiled_gemm", arch)], table[("recurrent_gemm", arch)]
        assert v8[cm.WAVEFRONTS] <= 1 / 4 < v7[cm.WAVEFRONTS] == 0.375, (v8, v7)
        assert table[("tiled_gemm", arch)][cm.WAVEFRONTS] == "" and table[("lstm_cell", arch)][cm.WAVEFRONTS] == ""


def test_the_persistent_step_with_u_in_registers_meets_the_kernel_issues_machine_code_targets(rows):
    """Issue 57's targets for persistent version 2 at batch 4 and 64 (the H100 plans), wherever it
    is disassembled: at most 5 instructions per float of h staged (version 1: tens, its 64-bit
    index arithmetic per round), one 128-bit shared load of h per 16 FFMA in the dot product (U in
    registers; version 1: 8 per 64), no 64-bit multiply, division or remainder in the kernel, no
    local memory at all (U stays in registers: the grid barrier between steps is inline)."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_80", "sm_89", "sm_90"):
        for batch in (4, 64):
            v2, v1 = table[(f"persistent_registers_b{batch}", arch)], table[(f"persistent_b{batch}", arch)]
            assert 0 < v2["staging_instructions_per_float"] <= 5 < v1["staging_instructions_per_float"], (v2, v1)
            assert v2["loop_shared_loads"] * 16 <= v2["loop_ffma"] and v2["loop_ffma"] >= 64, v2
            assert v2["int64_multiplies_divides"] == 0 < v1["int64_multiplies_divides"], (v2, v1)
            assert (v2["spill_stores"], v2["spill_loads"], v2["stack_frame"], v2["loop_local"]) == (0, 0, 0, 0), v2
            # 128-bit pieces in flight per thread: all 4 of a step's at batch 4, 8 of 64 at batch 64
            assert v2["staged_loads"] == {4: 4, 64: 8}[batch], v2


def test_staging_per_float_counts_the_copy_loop_per_float_stored():
    """A copy loop of 2 instructions besides a 128-bit load and its store: 4 per 4 floats; a store
    of something not loaded from global memory is no staging."""
    def code(*lines):
        return [Instruction(16 * n, opcode, target, operands) for n, (opcode, target, operands) in enumerate(lines)]

    loop = code(("IADD3", None, "R2, R2, 0x10, RZ"), ("LDG.E.128", None, "R4, desc[UR4][R2.64]"),
                ("STS.128", None, "[R8], R4"), ("ISETP.NE.AND", None, "P0, PT, R2, R9, PT"), ("BRA", 0, ""))
    assert staging_per_float(loop) == 1.25
    # the next chunk's load and store among a multiply's shared loads and FFMAs: 3 instructions of its own
    interleaved = code(("LDG.E.128", None, "R4, desc[UR4][R2.64]"), ("LDS.128", None, "R12, [R10]"),
                       *[("FFMA", None, f"R{20 + n}, R12, R13, R{20 + n}") for n in range(8)],
                       ("IADD3", None, "R8, R8, 0x10, RZ"), ("STS.128", None, "[R8], R4"))
    assert staging_per_float(interleaved) == 0.75
    assert staging_per_float(code(("MOV", None, "R4, RZ"), ("STS", None, "[R8], R4"))) == 0
    assert staging_per_float(None) == ""


def test_int64_multiplies_divides_counts_wide_multiplies_and_divisions():
    ptx = "\tmul.lo.s64 \t%rd1, %rd2, 4224;\n\tmul.wide.u32 \t%rd3, %r1, 4;\n\tdiv.u32 \t%r2, %r3, %r4;\n\trem.s64 %rd5, %rd6, %rd7;\n"
    assert int64_multiplies_divides(ptx) == 3
    assert int64_multiplies_divides("\tmul.lo.s32 \t%r1, %r2, 3;\n\tdiv.rn.f32 \t%f1, %f2, %f3;\n") == 0


def test_ffma_after_load_counts_what_overlaps_the_next_slabs_loads():
    def code(*opcodes):
        return [Instruction(16 * n, opcode, None) for n, opcode in enumerate(opcodes)]

    # loaded, stored, waited for, then computed: nothing overlaps; a prefetch before the FFMAs: all
    assert ffma_after_load(code("LDG", "STS", "BAR", "FFMA", "FFMA", "BAR")) == 0
    assert ffma_after_load(code("BAR", "LDG", "FFMA", "FFMA", "STS", "FFMA", "BAR")) == 3
    assert ffma_after_load(code("FFMA", "BAR", "STS", "BAR", "FFMA", "LDG", "FFMA")) == 2  # the loop is a cycle


def test_staged_loads_counts_the_loads_a_shared_store_ends():
    operands = {"LDG.E": "R4, desc[UR4][R2.64]", "STS": "[R8], R4", "STG.E": "desc[UR4][R2.64], R4", "FFMA": "R9, R6, R7, R9"}

    def code(*opcodes, jumps=()):
        return [Instruction(16 * n, opcode, jumps[n] if n < len(jumps) else None, operands.get(opcode, ""))
                for n, opcode in enumerate(opcodes)]

    assert staged_loads(code("LDG.E", "STS", "LDG.E", "STS")) == 1  # one element at a time
    assert staged_loads(code("LDG.E", "LDG.E", "IMAD", "BSSY", "LDG.E", "STS", "STS", "STS")) == 3
    assert staged_loads(code("LDG.E", "LDG.E", "FFMA", "BAR.SYNC", "STS")) == 2  # in flight across a barrier
    assert staged_loads(code("LDG.E", "LDG.E", "BRA", "STS")) == 0  # so does a jump...
    assert staged_loads(code("BRA", "LDG.E", "LDG.E", "LDG.E", "STS", jumps=(32,))) == 2  # ...and where one lands
    assert staged_loads(code("LDG.E", "LDG.E", "FFMA", "STG.E")) == 0  # no copy to shared memory
    zero = [Instruction(0, "LDG.E", None, "R4, desc[UR4][R2.64]"), Instruction(16, "STS", None, "[R8], RZ")]
    assert staged_loads(zero) == 0  # loads kept in registers, and a store of something else: no copy
    assert staged_loads(None) == ""


def test_operands_say_what_an_instruction_reads_and_writes():
    def one(opcode, operands):
        return Instruction(0, opcode, None, operands)

    assert writes(one("LDG.E.128", "R24, desc[UR8][R86.64]")) == {24, 25, 26, 27}
    assert reads(one("LDG.E.128", "R24, desc[UR8][R86.64]")) == {86, 87}
    assert writes(one("STS.128", "[R6], R28")) == set() and reads(one("STS.128", "[R6], R28")) == {6, 28, 29, 30, 31}
    assert writes(one("FFMA", "R8, R26.reuse, R20, R8")) == {8} and reads(one("FFMA", "R8, R26.reuse, R20, R8")) == {8, 20, 26}
    assert writes(one("ISETP.GE.AND", "P0, PT, R3, R9, PT")) == set() and reads(one("ISETP.GE.AND", "P0, PT, R3, R9, PT")) == {3, 9}
    assert writes(one("IMAD.WIDE", "R8, R3, UR4, R8")) == {8, 9}


def test_latency_columns_count_chains_and_load_distances():
    def loop(*lines):  # a loop: its last instruction branches back to the first
        code = [Instruction(16 * n, opcode, None, operands) for n, (opcode, operands) in enumerate(lines)]
        return code + [Instruction(16 * len(lines), "BRA", 0, "")]

    # two accumulators, each added to twice a trip: a chain of 2; the load used 3 instructions on
    two_chains = loop(("LDG.E", "R2, desc[UR4][R10.64]"), ("LDS", "R4, [R12]"), ("FFMA", "R8, R4, R4, R8"),
                      ("FFMA", "R9, R4, R4, R9"), ("STS", "[R12], R2"), ("FFMA", "R8, R4, R4, R8"),
                      ("FFMA", "R9, R4, R4, R9"))
    assert loop_ffma_chain(two_chains) == 2 and load_use_distance(two_chains) == 4
    # the next trip's load issued late: its use is reached only around the loop
    late = loop(("STS", "[R12], R2"), ("FFMA", "R8, R4, R4, R8"), ("FFMA", "R8, R4, R4, R8"), ("LDG.E", "R2, [R10.64]"))
    assert load_use_distance(late) == 2 and loop_ffma_chain(late) == 2
    assert loop_ffma_chain(None) == "" and load_use_distance(None) == ""


def test_the_latency_columns_of_the_gemms(rows):
    """Every unrolled slab adds bk = 8 products to each accumulator (a chain of 8); version 2's k loop,
    one per trip. Version 5's 128 x 128 patch issues its next slab's loads hundreds of instructions
    before their use; version 3's loads are used within a few."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_90"):
        assert table[("blocked_gemm", arch)]["loop_ffma_chain"] == 1
        assert table[("exact_gemm", arch)]["loop_ffma_chain"] == 8
        assert table[("vector_gemm_wide", arch)]["load_use_distance"] >= 200
        assert table[("exact_gemm", arch)]["load_use_distance"] <= 16


def test_register_blocking_shows_in_the_main_loop(rows):
    """Per k, a thread of the 4 x 4 blocked GEMM loads 4 + 4 values from shared memory and does
    16 FFMAs, touching no global memory: the point of register blocking (notebook 03)."""
    blocking = GPU_LARGE.tm * GPU_LARGE.tn, GPU_LARGE.tm + GPU_LARGE.tn
    for row in rows:
        if row["kernel"] in ("blocked_gemm", "blocked_gemm_ta") and row["arch"] != "sm_52":
            assert (row["loop_ffma"], row["loop_shared_loads"], row["loop_global_loads"]) == (*blocking, 0), row


#: The blocked GEMM versions' kernels (2-8), whose rows are named ``<kernel>`` or ``<kernel>_<blocking or layout>``.
BLOCKED = ("blocked", "exact", "prefetch", "vector", "split", "recurrent", "warptiled")


def test_a_gemm_slab_counts_its_inner_loops_by_their_trips(rows):
    """A slab of K does bk x tm x tn FFMAs per thread, whatever loop structure the compiler made:
    8 x 4 x 4 for the 64 x 64 patch, 8 x 2 x 2 for the 32 x 32 one, 8 x 8 x 8 for the 128 x 128
    one; and its instructions include the cooperative loads the main loop leaves out (the timeline
    model's issue efficiency). The exact-tile kernels unroll everything: the slab is the loop."""
    for row in rows:
        if not row["kernel"].split("_gemm")[0] in BLOCKED:
            assert row["slab_instructions"] == "" and row["slab_ffma"] == "", row
        elif row["arch"] != "sm_52":
            per_thread = 64 if "8x8" in row["what"] else 4 if "2x2" in row["what"] else 16
            assert row["slab_ffma"] == 8 * per_thread, row
            if "exact" in row["what"]:  # the loop is whole slabs: one, or version 7's two
                slabs = row["loop_ffma"] // row["slab_ffma"]
                assert abs(slabs * row["slab_instructions"] - row["loop_instructions"]) < slabs, row
            else:  # the k loop is an inner loop there: the slab holds 8 of it and the loads
                assert row["slab_instructions"] >= row["loop_instructions"], row
                if per_thread == 16:
                    assert row["slab_instructions"] > 8 * row["loop_instructions"], row


def test_the_exact_tile_kernels_spend_their_slab_on_ffma(rows):
    """Issue 23's goal for the GEMM that gemm() launches at the article's size (the 128 x 128
    exact-tile patch): FFMA at least 70% of a slab's instructions on sm_75 and sm_90, at most 0.25
    shared-memory loads per FFMA, no spills; and each exact variant beats its checked twin."""
    table = {(row["kernel"], row["arch"]): row for row in rows}
    for arch in ("sm_75", "sm_90"):
        wide = table[("exact_gemm_wide", arch)]
        assert wide["slab_ffma"] / wide["slab_instructions"] >= 0.70, wide
        assert wide["loop_shared_loads"] / wide["loop_ffma"] <= 0.25, wide
        assert (wide["spill_stores"], wide["spill_loads"]) == (0, 0), wide
        for checked, exact in (("blocked_gemm", "exact_gemm"), ("blocked_gemm_t", "exact_gemm_t")):
            share = {name: table[(name, arch)]["slab_ffma"] / table[(name, arch)]["slab_instructions"]
                     for name in (checked, exact)}
            assert share[exact] > 2 * share[checked], share


def test_the_check_says_which_kernels_are_stale(rows, tmp_path, capsys):
    """Each row and listing records its kernel's key; ``--check`` names the kernels whose rows or
    listings record another (or are missing), and only those."""
    today = keys.kernel_keys()
    rows = [{**row, "key": today[row["kernel"]]} for row in rows]  # as built today
    current = tmp_path / "current.csv"
    current.write_text(cm.render(rows))
    listings = cm.listings(rows, tmp_path / "kernel_sass")
    for path, text in listings.items():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert {cm.recorded_key(path) for path in listings if path.name.startswith("exact_gemm.")} == {today["exact_gemm"]}
    assert cm.stale(current, tmp_path / "kernel_sass") == {}
    assert cm.main(["--check", "--out", str(current)]) == 0
    stale = tmp_path / "stale.csv"  # one kernel's rows built from other sources or compilers
    stale.write_text(cm.render([{**row, "key": "0123456789abcdef"} if row["kernel"] == "add" else row for row in rows]))
    assert cm.stale(stale, tmp_path / "kernel_sass") == {"add": [str(stale)]}
    missing = tmp_path / "missing.csv"  # a kernel built today that the table lacks
    missing.write_text(cm.render([row for row in rows if row["kernel"] != "column_sum"]))
    assert list(cm.stale(missing, tmp_path / "kernel_sass")) == ["column_sum"]
    (tmp_path / "kernel_sass" / "blocked_gemm.sm_90.sass").write_text("stale\n")  # a current table, a stale listing
    assert cm.stale(current, tmp_path / "kernel_sass") == {"blocked_gemm": [str(tmp_path / "kernel_sass" / "blocked_gemm.sm_90.sass")]}
    assert cm.main(["--check", "--out", str(current)]) == 1
    assert cm.main(["--check", "--out", str(stale)]) == 1
    err = capsys.readouterr().err
    assert cm.COMMAND in err and "  blocked_gemm: " in err and "  add: " in err and "exact_gemm" not in err


def _changed(before: dict, after: dict) -> set:
    return {row for row in after if before.get(row) != after[row]}


def test_a_kernels_key_changes_with_its_own_sources_only(tmp_path):
    """Keys (compile_matrix.keys) in a copy of the project: the same as here (they depend on the
    files alone); a new version file (v99_scratch.py) adds its own key and changes no other; an
    edit of one version file changes the keys of its rows only, and only their listings' key
    lines; a module the versions share (gemm/tiles.py) changes its importers', the chip data
    (data/gpus.csv) the persistent kernels'."""
    for pattern in ("fastlstm_lib/**/*.py", "data/gpus.csv", *keys.MATRIX):
        for path in cm.ROOT.glob(pattern):
            (tmp_path / path.relative_to(cm.ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, tmp_path / path.relative_to(cm.ROOT))
    files = {row: tmp_path / path.relative_to(cm.ROOT) for row, path in keys.owners().items()}
    before = keys.kernel_keys(files, tmp_path)
    assert before == keys.kernel_keys()
    gemm = tmp_path / "fastlstm_lib" / "kernels" / "gemm"
    exact = keys.kernel_files(gemm / "v3_exact.py", tmp_path)
    assert gemm / "tiles.py" in exact and gemm / "slab.py" in exact and gemm / "__init__.py" not in exact
    assert tmp_path / "data" / "gpus.csv" in keys.kernel_files(files["persistent_b4"], tmp_path)

    scratch = gemm / "v99_scratch.py"
    scratch.write_text('"""A scratch version."""\n\nfrom ..spec import Build\nfrom .v4_prefetch import slab_parts\n')
    added = keys.kernel_keys({**files, "scratch_gemm": scratch}, tmp_path)
    assert _changed(before, added) == {"scratch_gemm"} and added["scratch_gemm"] not in before.values()
    assert gemm / "v4_prefetch.py" in keys.kernel_files(scratch, tmp_path)

    def edited(path):
        original = path.read_bytes()
        path.write_bytes(original + b"\n# edited\n")
        try:
            return keys.kernel_keys(files, tmp_path)
        finally:
            path.write_bytes(original)

    after = edited(gemm / "v3_exact.py")
    assert _changed(before, after) == {row for row, path in files.items() if path.name == "v3_exact.py"} == {
        "exact_gemm", "exact_gemm_t", "exact_gemm_wide"}
    listed = [{"kernel": kernel, "arch": arch, "what": "", "loop_instructions": 1, "sass": "FFMA R1, R2, R3, R1 ;\n"}
              for kernel, arch in sorted(cm.LISTED)]
    old = cm.listings([{**row, "key": before[row["kernel"]]} for row in listed])
    new = cm.listings([{**row, "key": after[row["kernel"]]} for row in listed])
    assert {path.name for path in old if old[path] != new[path]} == {
        f"{kernel}.{arch}.sass" for kernel, arch in cm.LISTED if kernel.startswith("exact_gemm")}
    assert _changed(before, edited(gemm / "tiles.py")) == {
        row for row, path in files.items() if path.parent == gemm}
    assert _changed(before, edited(tmp_path / "data" / "gpus.csv")) == {
        row for row in files if row.startswith("persistent")}


def test_ptxas_reports_and_disassemblies_are_read():
    report = ("ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n"
              "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
              "ptxas info    : Used 128 registers, used 1 barriers, 2048 bytes smem\nptxas info    : Compile time = 1 ms\n")
    assert resources(report, "k") == {"registers": 128, "spill_stores": 4, "spill_loads": 4, "stack_frame": 8,
                                      "static_shared": 2048}
    listing = """\t.section\t.text.k,"ax",@progbits
\t.sectioninfo\t@"SHI_REGISTERS=8"
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
        /*0010*/                   LDS R2, [R0] ;
        /*0020*/                   FFMA R3, R2, R2, R3 ;
        /*0030*/                   IADD3 R0, R0, 0x4, RZ ;
        /*0040*/               @P0 BRA `(.L_x_1) ;
        /*0050*/                   EXIT ;
.L_x_2:
        /*0060*/                   BRA `(.L_x_2);
"""
    code = parse_nvdisasm(listing, "k")
    assert code[4] == Instruction(0x40, "BRA", 0x10, "`(.L_x_1)")
    assert code[2] == Instruction(0x20, "FFMA", None, "R3, R2, R2, R3")
    assert main_loop_mix(code) == {"instructions": 7, "loop_instructions": 4, "loop_ffma": 1, "loop_hmma": 0, "loop_shared_loads": 1,
                                   "loop_global_loads": 0, "loop_local": 0, "loop_integer": 1, "loop_barriers": 0}
    with pytest.raises(ValueError, match="'other'"):
        parse_nvdisasm(listing, "other")


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match="cc must be one of"):
        assemble(tmp_path / "k.ptx", (6, 1), tmp_path / "k.cubin", relocatable=False, max_registers=None)
    with pytest.raises(ValueError, match="max_registers"):
        assemble(tmp_path / "k.ptx", (9, 0), tmp_path / "k.cubin", relocatable=False, max_registers=-1)
    with pytest.raises(ValueError, match="toolkit/name"):
        tool("11", "ptxas")
    with pytest.raises(ValueError, match="workers"):
        cm.build(workers=0)
    with pytest.raises(ValueError, match="archs"):
        cm.build(archs=[(7, 0)])
    with pytest.raises(ValueError, match="rows"):
        cm.render([])
    with pytest.raises(ValueError, match="files"):
        keys.kernel_keys({})


def test_the_library_reads_the_matrix_without_importing_it():
    """The library never imports the compile matrix (a tool: it may import the library, not the
    reverse): no module of fastlstm_lib names it, and reading its table and listings (the timeline
    model, notebook 12's SASS) loads none of it, even with tools/ on the path."""
    importers = []
    for path in (Path(cm.ROOT) / "fastlstm_lib").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any("compile_matrix" in name for name in names):
                importers.append(str(path.relative_to(cm.ROOT)))
    assert not importers, importers
    probe = ("import sys, fastlstm_lib, fastlstm_lib.course.sass, fastlstm_lib.course.timeline.blocks as blocks; blocks._resources(); "
             "fastlstm_lib.course.sass.purposes('blocked_gemm', 'sm_90'); "
             "print(sorted(m for m in sys.modules if 'compile_matrix' in m))")
    env = {**os.environ, "PYTHONPATH": str(cm.TOOLS)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-2000:]
