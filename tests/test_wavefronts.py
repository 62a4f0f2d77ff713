"""Shared-memory wavefronts measured on the simulator (tools/compile_matrix/wavefronts.py, the compile
matrix's ``loop_shared_wavefronts_per_ffma``): the bank rules on lanes' addresses, scratch kernels of
known patterns (tests/wavefront_kernels.py), and the blocked GEMMs' main loops, version 7's and 8's
equal to the model of their thread layouts (tests/test_gemm_warptiled.py: 0.375 and 0.25 per FFMA).

The measurements run in a process of their own on Numba's simulator (``in_simulator``), GPU or not;
no compiler is needed (the SASS counts they are checked against are the committed table's).
"""

from pathlib import Path

import pytest

from compile_matrix import wavefronts as w
from fastlstm_lib.course.sass import TABLE, read_table
from fastlstm_lib.kernels.gemm import GPU_LARGE

from test_gemm_warptiled import kernel10_thread, lds128_words, v7_thread, v8_thread, wavefronts_per_ffma
from test_gemm_warptiled import lds128_wavefronts as model_lds128
from wavefront_kernels import EXPECTED

pytestmark = pytest.mark.tools  # make test-tools

TESTS = Path(__file__).resolve().parent
#: Shared wavefronts per FFMA of every measured row, by the rules: versions 3 (LDS.32 of words that
#: lanes share or that lie in distinct banks: one wavefront per load, tm + tn loads per tm x tn FFMA),
#: 5 and 6 (64-bit loads at 4 x 4 per thread, a wavefront per half-warp; 128-bit at 8 x 8: A's
#: quarter-warp words shared by neighbouring lanes, 2, B's 8 distinct, 4; scalar at 2 x 2), 7 and 8.
PER_FFMA = {"exact_gemm": 0.5, "exact_gemm_t": 1.0, "exact_gemm_wide": 0.25,
            "vector_gemm": 0.5, "vector_gemm_wide": 0.1875, "vector_gemm_small": 1.0,
            "split_gemm_small": 1.0, "split_gemm": 0.5, "split_gemm_wide": 0.1875,
            "recurrent_gemm": 0.375, "warptiled_gemm": 0.25}


@pytest.fixture(scope="module")
def gemms():
    """Every measured GEMM row's ``measure_row``, on the simulator."""
    return w.in_simulator("compile_matrix.wavefronts:measure_rows")


def test_the_32_bit_rule_counts_distinct_words_on_the_busiest_bank():
    assert w.wavefronts(1, {lane: lane for lane in range(32)}) == 1
    assert w.wavefronts(1, {lane: 0 for lane in range(32)}) == 1  # a broadcast
    assert w.wavefronts(1, {lane: 2 * lane for lane in range(32)}) == 2
    assert w.wavefronts(1, {lane: 32 * lane for lane in range(32)}) == 32
    assert w.wavefronts(1, {0: 5, 1: 37, 2: 5}) == 2  # part of a warp: 5 and 37 share bank 5


def test_the_64_and_128_bit_rules_take_half_and_quarter_warps():
    assert w.wavefronts(2, {lane: 2 * lane for lane in range(32)}) == 2  # 32 words per half-warp, 32 banks
    assert w.wavefronts(2, {lane: 0 for lane in range(32)}) == 2  # a pass per half-warp, no packing
    assert w.wavefronts(4, {lane: 4 * lane for lane in range(32)}) == 4
    assert w.wavefronts(4, {lane: 4 * (lane // 16) for lane in range(32)}) == 2  # halved: lanes l, l^1 alike
    assert w.wavefronts(4, {lane: 32 * lane for lane in range(8)}) == 8  # 8 words on one bank quad


def test_the_128_bit_rule_is_the_models():
    """``lds128_wavefronts`` on the words of the model's layouts (``lds128_words``: versions 7 and 8, kernel
    10's plain order; every warp, two rows of k, A and B) gives what the model's rule gives: 2 of A and 4 of
    B per warp for version 7, 2 and 2 for version 8."""
    for layout in (v7_thread, v8_thread, kernel10_thread):
        for warp in range(GPU_LARGE.threads // 32):
            for k in (0, 1):
                for operand in "ab":
                    words = lds128_words(layout, GPU_LARGE, warp, operand, k)
                    assert w.lds128_wavefronts(words) == model_lds128(words), (layout, warp, k, operand)
    for layout, want in ((v7_thread, (2, 4)), (v8_thread, (2, 2))):
        got = tuple(w.lds128_wavefronts(lds128_words(layout, GPU_LARGE, 0, operand)) for operand in "ab")
        assert got == want, (layout, got)


def test_neighbouring_reads_at_one_site_are_one_aligned_vector_access():
    a, b = ("f", 1, 0), ("f", 2, 1)
    reads = [(a, 4), (a, 5), (a, 6), (a, 7), (b, 8), (b, 9), (a, 2), (a, 3), (a, 4), (a, 5), (a, 9)]
    assert w.vector_accesses(reads) == [(a, 4, 4), (b, 8, 2), (a, 2, 2), (a, 4, 2), (a, 9, 1)]
    assert w.vector_accesses([(a, 1), (a, 2), (a, 3), (a, 4)]) == [(a, 1, 1), (a, 2, 2), (a, 4, 1)]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="width"):
        w.wavefronts(3, {0: 0})
    with pytest.raises(ValueError, match="lanes"):
        w.wavefronts(1, {32: 0})
    with pytest.raises(ValueError, match="call"):
        w.in_simulator("no_function_named")
    with pytest.raises(ValueError, match="row must be one of"):
        w.measure_row("tiled_gemm")  # version 1: not a measured row


def test_scratch_kernels_of_known_patterns_get_their_wavefronts():
    """Each kernel of tests/wavefront_kernels.py over two warps: one shared load per warp, its wavefronts
    by the rules (a conflict-free read 1, 2-way 2, 32-way 32, a broadcast 1, rows of a view in one bank 2,
    64-bit 2, an LDS.128 of 8 distinct words per quarter-warp 4, of one word per half-warp 2)."""
    got = w.in_simulator("wavefront_kernels:known", "2", path=[TESTS])
    assert {name: (found["loads"], found["wavefronts"]) for name, found in got.items()} == {
        name: (2 * loads, 2 * waves) for name, (loads, waves) in EXPECTED.items()}


def test_versions_7_and_8_measure_the_models_wavefronts(gemms):
    """Issue 67: measured on the simulator at the recurrent GEMM's blocking, version 7 0.375 shared wavefronts
    per FFMA and version 8 0.25 (at most one per 4 FFMA), as the model of their layouts says."""
    assert gemms["recurrent_gemm"]["per_ffma"] == wavefronts_per_ffma(v7_thread)[-1] == 0.375
    assert gemms["warptiled_gemm"]["per_ffma"] == wavefronts_per_ffma(v8_thread)[-1] == 0.25


def test_every_blocked_gemm_row_is_measured(gemms):
    assert set(gemms) == set(w.gemm_builds()) == set(PER_FFMA)
    assert {row: found["per_ffma"] for row, found in gemms.items()} == PER_FFMA


def test_the_accesses_are_the_machine_codes_shared_loads(gemms):
    """The measured accesses per FFMA (a thread's neighbouring reads merged: ``vector_accesses``) equal the
    compiled main loop's shared loads per FFMA (the committed sm_90 rows): the widths assumed are the compiler's."""
    table = {row["kernel"]: row for row in read_table(TABLE) if row["arch"] == "sm_90"}
    for row, found in gemms.items():
        assert found["loads"] * int(table[row]["loop_ffma"]) == found["ffma"] * int(table[row]["loop_shared_loads"]), \
            (row, found, table[row]["loop_shared_loads"], table[row]["loop_ffma"])
