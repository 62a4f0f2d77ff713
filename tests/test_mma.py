"""The tensor-core pieces (fastlstm_lib/kernels/mma, issue 68): TF32 rounding, the fragment
layout, the simulator's stand-in for ``mma.sync.m16n8k8`` against float64, and the real
instruction in the SASS for sm_80 and sm_90."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastlstm_lib as fl
from fastlstm_lib.kernels import mma
from conftest import needs_compile_matrix

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

simulator_only = pytest.mark.skipif(fl.DEVICE.kind != "simulator", reason="runs the stand-in on the simulator")


def bits(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float32).view(np.uint32)


# --- TF32 rounding --------------------------------------------------------------------------

@pytest.mark.parametrize("x, expected", [
    (1.0, 1.0),
    (1 + 2**-11, 1 + 2**-10),                   # a tie (half of TF32's last place): away from zero
    (-(1 + 2**-11), -(1 + 2**-10)),             # ... for negatives too
    (1 + 3 * 2**-11, 1 + 2 * 2**-10),           # a tie above an odd last bit: away, not to even
    (1 + 2**-11 - 2**-23, 1.0),                 # just under the tie: down
    (1 + 2**-10 + 2**-12, 1 + 2**-10),          # under half: down
    (2.0 - 2**-23, 2.0),                        # rounding carries into the exponent
    (np.float32(3.4028235e38), np.inf),         # the largest float32 rounds up to infinity
    (np.inf, np.inf), (-np.inf, -np.inf),
    (np.float32(2**-149), 0.0),                 # the smallest subnormal: under half of 2**-136
    (np.float32(2**-137), np.float32(2**-136)),  # a subnormal tie: away from zero
    (-0.0, -0.0),
])
def test_round_tf32_edge_cases(x, expected):
    got = mma.round_tf32(np.array([x], np.float32))
    assert bits(got)[0] == bits(expected)  # bit for bit: signed zeros and infinities included
    assert bits(got)[0] & 0x1FFF == 0 or not np.isfinite(got[0])


def test_round_tf32_nan_and_what_the_ptxas_expansion_does_to_a_low_nan():
    got = mma.round_tf32(np.array([np.nan, -np.nan], np.float32))
    assert np.isnan(got).all()
    low_payload = np.array([0x7F800001], np.uint32).view(np.float32)  # a NaN only in the dropped bits
    assert mma.round_tf32(low_payload)[0] == np.inf  # cleared like any other value: tf32 module docstring


def test_round_tf32_matches_a_float64_reference_on_random_floats():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(10_000) * np.exp2(rng.integers(-30, 30, 10_000))).astype(np.float32)
    mantissa, exponent = np.frexp(x.astype(np.float64))  # |mantissa| in [0.5, 1): 11 bits kept
    scaled = np.abs(mantissa) * 2**11
    expected = np.sign(mantissa) * np.floor(scaled + 0.5) / 2**11 * np.exp2(exponent)  # half away from zero
    assert np.array_equal(mma.round_tf32(x), expected.astype(np.float32))
    assert np.abs(mma.round_tf32(x) / x - 1).max() <= 2**-11  # half of TF32's 2**-10 spacing


def test_round_and_truncate_scalars_and_arrays():
    assert mma.round_tf32(1 + 2**-11) == np.float32(1 + 2**-10)
    assert isinstance(mma.round_tf32(1.0), np.float32)
    assert mma.truncate_tf32(1 + 2**-11 + 2**-20) == np.float32(1.0)
    rounded = mma.round_tf32(np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4))
    assert rounded.shape == (3, 4) and np.array_equal(mma.truncate_tf32(rounded), rounded)
    assert np.isnan(mma.truncate_tf32(np.array([np.nan], np.float32))).all()


def test_tf32_helpers_reject_bad_arguments():
    with pytest.raises(TypeError, match="values must have dtype float32, got float64"):
        mma.round_tf32(np.ones(3))
    with pytest.raises(TypeError, match="values must be a float32 NumPy array or a real number, got str"):
        mma.truncate_tf32("1.0")
    with pytest.raises(TypeError, match="values must be a float32 NumPy array or a real number, got bool"):
        mma.round_tf32(True)


# --- the fragment layout --------------------------------------------------------------------

def test_each_operand_element_is_held_by_exactly_one_lane_register():
    for operand, ((rows, cols), registers) in mma.layout.OPERANDS.items():
        lane_rows, lane_cols = mma.table(operand)
        assert lane_rows.shape == (32, registers)
        held = np.zeros((rows, cols), int)
        np.add.at(held, (lane_rows, lane_cols), 1)
        assert (held == 1).all(), operand


def test_the_layout_is_the_ptx_isas():
    """Spot checks against the PTX ISA's m16n8k8 figures (.tf32 A and B, .f32 C/D)."""
    assert [mma.element("a", 5, r) for r in range(4)] == [(1, 1), (9, 1), (1, 5), (9, 5)]
    assert [mma.element("b", 5, r) for r in range(2)] == [(1, 1), (5, 1)]
    assert [mma.element("c", 5, r) for r in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert [mma.element("a", 31, r) for r in range(4)] == [(7, 3), (15, 3), (7, 7), (15, 7)]
    assert mma.element("b", 31, 1) == (7, 7) and mma.element("c", 31, 3) == (15, 7)


def test_the_package_docstring_draws_the_layout():
    for operand in "abc":
        drawing = "\n".join("    " + line for line in mma.draw(operand).splitlines())
        assert drawing in mma.__doc__, operand


def test_layout_helpers_reject_bad_arguments():
    with pytest.raises(ValueError, match=r"operand must be one of \['a', 'b', 'c'\], got 'd'"):
        mma.element("d", 0, 0)
    with pytest.raises(ValueError, match="lane must be in 0..31, got 32"):
        mma.element("a", 32, 0)
    with pytest.raises(TypeError, match="lane must be an int >= 0, got float 1.0"):
        mma.element("a", 1.0, 0)
    with pytest.raises(ValueError, match="register must be in 0..1 for b, got 2"):
        mma.element("b", 0, 2)
    with pytest.raises(ValueError, match="operand must be one of"):
        mma.table("D")
    with pytest.raises(ValueError, match="operand must be one of"):
        mma.draw(3)


# --- the stand-in on the simulator ----------------------------------------------------------

def run(kernel, a, b, d_shape, block):
    from numba import cuda

    d = np.full(d_shape, np.nan, np.float32)
    cuda.jit(kernel)[1, block](a, b, d)
    return d


def check_product(d, a, b, times=1):
    """D equals times x (float64 product of the TF32-rounded inputs) within float32 accumulation.

    Tolerance: the products of TF32 values are exact; what remains is adding K of them (and C)
    in float32. The tensor core's accumulation is about float32's (the stand-in's is float64 then
    one rounding), so each element is within a few float32 ulps of sum_k |a_ik| |b_kj|: we allow
    (K + 1) x 2**-23 of that (one half-ulp-ish rounding per addition, doubled for the hardware's
    unspecified order and rounding mode), plus nothing absolute: a zero row gives exactly 0. The
    TF32 rounding of the inputs themselves (2**-11 relative, ~250x more) is *in* the reference,
    so an input loaded unrounded, or by the wrong layout, fails it."""
    a64, b64 = mma.round_tf32(a).astype(np.float64), mma.round_tf32(b).astype(np.float64)
    expected = times * (a64 @ b64)
    scale = times * (np.abs(a64) @ np.abs(b64))
    tolerance = (a.shape[1] + 1) * 2.0**-23 * scale
    assert not np.isnan(d).any()
    assert (np.abs(d - expected) <= tolerance).all(), np.abs(d - expected).max()
    # ... and the TF32 rounding is visible: against the unrounded float64 product it is far off.
    return np.abs(d - times * (a.astype(np.float64) @ b.astype(np.float64))).max()


def odd(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@simulator_only
def test_one_warp_at_odd_sizes_equals_float64_of_tf32_inputs():
    a, b = odd((13, 5), 1), odd((5, 7), 2)  # 13 x 7 x 5, zero-padded to one 16 x 8 x 8 tile
    unrounded_error = check_product(run(mma_kernels().tile_product, a, b, (13, 7), 32), a, b)
    assert unrounded_error > 1e-5  # TF32's 10-bit mantissa shows (FP32 would be ~1e-7)


@simulator_only
def test_four_warps_in_a_2d_block_with_barriers_between_steps():
    a, b = odd((29, 11), 3), odd((11, 13), 4)  # 2 x 2 tiles of D, 2 steps of K, all padded
    kernels = mma_kernels()
    check_product(run(kernels.tile_product, a, b, (29, 13), (64, 2)), a, b)
    check_product(run(kernels.synced_tile_product, a, b, (29, 13), (32, 2, 2)), a, b)


@simulator_only
def test_warps_may_call_mma_different_numbers_of_times():
    a, b = odd((15, 7), 5), odd((7, 6), 6)
    d = run(mma_kernels().repeated_product, a, b, (48, 8), 96)  # 3 warps: 1, 2 and 3 mma each
    for warp in range(3):
        check_product(d[16 * warp:16 * warp + 15, :6], a, b, times=warp + 1)
        assert (d[16 * warp + 15] == 0).all() and (d[16 * warp:16 * warp + 16, 6:] == 0).all()  # the padding


@simulator_only
def test_the_stand_in_ignores_the_low_bits_of_unrounded_inputs():
    out = run(mma_kernels().unrounded_product, np.zeros((1, 1), np.float32), np.zeros((1, 1), np.float32), (1, 32), 32)
    assert (out == 8.0).all()  # 8 products of 1.0 x 1.0: TF32 reads 1 + 2**-11 + 2**-20 as 1.0


@simulator_only
def test_a_divergent_mma_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match="only 31 of the 32 lanes of warp 0 reached it"):
        run(mma_kernels().divergent_product, odd((1, 1), 7), odd((1, 1), 8), (1, 8), 32)


@simulator_only
def test_partial_warps_and_calls_outside_a_kernel_are_refused():
    with pytest.raises(ValueError, match="needs whole warps: the block has 48 threads"):
        run(mma_kernels().tile_product, odd((13, 5), 1), odd((5, 7), 2), (13, 7), 48)
    with pytest.raises(RuntimeError, match="call it from a kernel's threads"):
        mma.mma_tf32_m16n8k8(*[0.0] * 10)


def test_kernels_get_the_intrinsics_where_they_are_compiled():
    from fastlstm_lib.kernels.mma import standin

    chosen = mma.mma_tf32_m16n8k8 is standin.mma_tf32_m16n8k8
    assert chosen == (not fl.DEVICE.compiled)


def mma_kernels():
    sys.path.insert(0, str(TESTS))
    import mma_kernels

    return mma_kernels


# --- the real instruction -------------------------------------------------------------------

@needs_compile_matrix
@pytest.mark.tools
@pytest.mark.parametrize("cc", ["8.0", "9.0"])
def test_the_tile_kernel_compiles_to_hmma_and_no_ffma(cc):
    """tests/mma_kernels.py's tile_product, compiled without the simulator (as the compile matrix's
    worker compiles: numba.cuda first, simulator off): one HMMA.1688.F32.TF32 per mma, no FFMA,
    FMUL or FADD (the product is the tensor core's), no spills."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("NUMBA_FORCE_CUDA_CC", "FASTLSTM_SIMULATOR", "FASTLSTM_FAKE_GPU")}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tools"), str(TESTS), str(ROOT)])
    worker = "import sys, numba.cuda, mma_kernels; mma_kernels.compile_main(sys.argv[1:])"  # numba.cuda first
    done = subprocess.run([sys.executable, "-c", worker, cc], capture_output=True, text=True, timeout=600,
                          env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert any(line.startswith("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") for line in found["ptx"])
    mmas = sum(line.startswith("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") for line in found["ptx"])
    assert sum(line.startswith("cvt.rna.tf32.f32") for line in found["ptx"]) == 6 * mmas  # NVVM unrolls the k loop
    opcodes = found["opcodes"]
    assert opcodes.count("HMMA.1688.F32.TF32") == mmas, opcodes  # one tensor-core instruction per mma
    assert not [op for op in opcodes if op.split(".")[0] in ("FFMA", "FMUL", "FADD")], opcodes
    assert found["resources"]["spill_stores"] == found["resources"]["spill_loads"] == 0
