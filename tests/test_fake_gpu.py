"""Every GPU path, proven without a GPU: numba-cuda's real host path on the fake GPU.

For each of a T4, an A100, an L4, an H100 and an M40 (``fake_gpu_runs.GPUS``), a fresh Python
runs ``python -m fakegpu.tour`` (``tests/fakegpu``) with ``FASTLSTM_FAKE_GPU`` set: every forward step
at odd sizes and at the article's size, every backward step, ``FastLSTM`` forward and backward,
``fl.bench``, ``fl.profile``, the clocks, the persistent limits and the doctor. Kernels are
compiled for that GPU's architecture with the CUDA compilers from pip and every launch is
checked as the driver would; values are not computed (the simulator checks them).

Pinned here, among others, the defects a first GPU run would have met (issue 19): the device
attribute CUDA calls MAX_THREADS_PER_MULTIPROCESSOR, the >48 KiB shared-memory opt-in,
NumbaPerformanceWarning on every small grid, an M40 offered persistent plans, and
``bench_steps`` raising on a T4 instead of skipping the persistent step. Plus the fake itself:
it refuses what a driver refuses (``test_the_fake_refuses_what_a_driver_refuses``).
"""

import subprocess
import sys
import textwrap

import pytest

import fakegpu
import fastlstm_lib as fl
from fake_gpu_runs import GPUS, result

from conftest import needs_fake_gpu

pytestmark = [needs_fake_gpu, pytest.mark.tools]  # make test-tools; Linux, numba-cuda and a C compiler: skipped, saying which is missing

#: The "tf32" GEMM policy's tour items, refused below compute capability 8.0 (the T4, the M40); the
#: A100, L4 and H100 run them, and they fail unless the pass launches GEMM version 9 (tf32_gemm).
TF32_ITEMS = {**{f"forward {name} article tf32": "need compute capability 8.0" for name in ("wavefront", "persistent")},
              "kernel gemm 9: tf32_gemm": "exist from compute capability 8.0"}  # the runner skips it, saying why
#: What a GPU legitimately cannot run, by the library's own reasons.
EXPECTED_SKIPS = {
    "T4": {"forward persistent article": "does not fit", "bench persistent article": "does not fit",
           "profile persistent article": "does not fit",
           "kernel persistent 1: persistent_layer": "does not fit",  # Colab's GPU: 64 KiB of shared memory per block
           **TF32_ITEMS},
    # (The L4's 99 KiB per block holds 9 units of 4 rows per thread: 57 blocks, which it runs. Persistent
    # version 2, U in registers, runs on the T4 too: 40 blocks of 13 units, 6 rows staged at a time.)
    "M40": {name: "cannot launch a cooperative grid" for name in
            ("forward persistent odd", "forward persistent article", "bench persistent article",
             "profile persistent article", "persistent_limits", "graph persistent odd",
             "kernel persistent 1: persistent_layer", "kernel persistent 2: persistent_registers",
             "kernel persistent 3: persistent_light_barrier")} | TF32_ITEMS,
}


@pytest.mark.parametrize("gpu", GPUS)
def test_every_path_runs_on_the_fake_gpu(gpu):
    report = result(gpu)
    assert report["gpu"] == gpu
    assert set(TF32_ITEMS) <= set(report["items"])  # the tf32 policy's items ran (ok, or skipped naming why)
    assert report["errors"] == [], "the fake driver itself failed"
    assert report["refused"] == [], "the driver would refuse these launches or calls"
    assert report["unmodelled_attributes"] == [], "the library asks for attributes the fake does not model"
    assert not [w for w in report["warnings"] if "NumbaPerformanceWarning" in w], report["warnings"]
    expected = EXPECTED_SKIPS.get(gpu, {})
    for name, item in report["items"].items():
        if not isinstance(item, dict):
            continue
        outcome = item["outcome"]
        if name in expected:
            assert outcome.startswith("skipped") and expected[name] in outcome, (name, outcome)
        elif name == "kernel gemm 0: cublas":  # the yardstick: nothing of cuBLAS runs on a fake GPU
            assert outcome.startswith("skipped") and "needs a real GPU" in outcome, (name, outcome)
        elif name == "bench_steps odd" and gpu == "M40":  # the persistent step skipped, with its reason
            assert outcome.startswith("skipped") and "cooperative" in outcome, (name, outcome)
        else:
            assert outcome == "ok", (name, outcome)
    assert report["launches"] > 30_000  # the article-sized passes really went through the launch path
    # Every step and a backward pass captured into a CUDA Graph and launched, the capture rules kept
    # (the fake refuses what a driver refuses during a capture: see tests/fakegpu/graphs.py).
    steps = len(fl.steps.names()) - (gpu == "M40")
    assert report["graphs"]["captured"] == steps + 1 and report["graphs"]["launched"] >= 3 * (steps + 1)
    doctor = report["items"]["doctor report"]  # the doctor's fresh Python asked the same fake driver
    assert "GPU: " in doctor and "a test kernel compiled" in doctor, doctor


def test_h100_opts_the_persistent_kernel_in_to_more_than_48_kib():
    report = result("H100")
    persistent = report["kernels"]["persistent_layer"]
    assert persistent["cooperative"] and persistent["max_dynamic_shared"] > 48 * 1024, persistent
    assert any(o["attribute"] == "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES" and
               o["value"] >= persistent["max_dynamic_shared"] for o in report["opt_ins"]), report["opt_ins"]


def test_the_m40_never_launches_a_cooperative_grid():
    report = result("M40")
    assert "persistent_layer" not in report["kernels"]
    assert all(not k["cooperative"] for k in report["kernels"].values())


#: What a refused driver call answered, by its CUresult's name (both snippets below use it).
REFUSED = textwrap.dedent('''
    import re

    def refused(call):  # cuda.core raises CUDAError("CUDA_ERROR_...: ...") for a refused launch
        try:
            call()
        except Exception as error:
            found = re.search(r"CUDA_ERROR_[A-Z_]+", str(error))
            return found.group(0) if found else repr(error)[:300]
        return "launched"
''')

REFUSALS = REFUSED + textwrap.dedent('''
    import numpy as np
    import fastlstm_lib as fl
    import fakegpu
    from fastlstm_lib.kernels import persistent as kp, persistent as pp
    from numba import cuda, float32
    import re


    @cuda.jit
    def dynamic(out):
        buffer = cuda.shared.array(0, float32)
        buffer[cuda.threadIdx.x] = 1.0
        out[0] = buffer[0]

    out = cuda.device_array(1, np.float32)
    print("threads", refused(lambda: dynamic[1, 1025, 0, 4](out)))
    print("shared", refused(lambda: dynamic[1, 32, 0, 60 * 1024](out)))
    print("grid_sync", fl.DEVICE.stand_in)
    plan = pp.plan(64, 1, chip="H100", single_block=False)  # planned for another GPU: only the driver stands in the way
    kernel = kp.persistent_layer_kernel(*plan.kernel_key)
    arrays = (cuda.device_array((2, 1, 256), np.float32), cuda.device_array((64, 256), np.float32),
              cuda.device_array(256, np.float32), cuda.device_array((2, 1, 64), np.float32))
    print("cooperative", refused(lambda: kernel[100000, plan.threads, 0, plan.shared_bytes](*arrays)))
    print("refusals", len(fakegpu.state().refused))
''')


# A cooperative grid too large, or on a GPU without cooperative launch, is refused by cuda.core
# before the driver, from what the driver answered: the occupancy query and the device attribute.
@pytest.mark.parametrize("gpu, cooperative", [("T4", "exceeds the limit (640)"),  # 16 per SM x 40 SMs
                                              ("M40", "cooperative kernels are not supported")])
def test_the_fake_refuses_what_a_driver_refuses(gpu, cooperative):
    done = subprocess.run([sys.executable, "-c", REFUSALS], capture_output=True, text=True, timeout=600,
                          env=fakegpu.child_environment(gpu))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert lines["threads"] == "CUDA_ERROR_INVALID_VALUE"  # 1025 threads per block
    assert lines["shared"] == "CUDA_ERROR_INVALID_VALUE"  # 60 KiB of dynamic shared memory without the opt-in
    assert lines["grid_sync"] == f"fake {gpu}"  # the package was told: a stand-in driver
    assert cooperative in lines["cooperative"], lines["cooperative"]
    assert lines["refusals"] == "2"  # the first two, by the fake driver itself


PTX = """
.version 8.0
.target sm_75
.address_size 64
.visible .entry probe(.param .u64 out)
{
    .shared .align 4 .b8 scratch[1000];
    .reg .b64 %rd<3>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.shared.f32 %f1, [scratch];
    st.global.f32 [%rd2], %f1;
    ret;
}
"""


def test_the_fake_reads_a_cubin_as_ptxas_reports_it(tmp_path):
    """Registers and static shared memory read from the ELF equal ptxas's own report."""
    import re

    from fakegpu import cubin, toolchain

    (tmp_path / "probe.ptx").write_text(PTX)
    done = subprocess.run([toolchain.ptxas((7, 5)), "-arch=sm_75", "-v", str(tmp_path / "probe.ptx"),
                           "-o", str(tmp_path / "probe.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    registers = int(re.search(r"Used (\d+) registers", done.stderr).group(1))
    shared = int(re.search(r"(\d+) bytes smem", done.stderr).group(1))
    found = cubin.kernels((tmp_path / "probe.cubin").read_bytes())
    assert list(found) == ["probe"]
    assert (found["probe"].registers, found["probe"].static_shared_bytes, found["probe"].grid_sync) == \
        (registers, shared, False)
    assert shared == 1000


CAPTURE_RULES = REFUSED + textwrap.dedent('''
    import re
    import numpy as np
    import fastlstm_lib as fl
    from numba import cuda
    from numba.cuda.cudadrv.driver import binding, driver
    from fastlstm_lib.runtime import graphs


    @cuda.jit
    def touch(out):
        out[0] = 1.0

    out = cuda.device_array(1, np.float32)
    mode = binding.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL

    def captured(body, origin=None):
        origin = origin or graphs._capture_stream()
        driver.cuStreamBeginCapture(origin.handle, mode)
        try:
            return refused(lambda: body(origin))
        finally:
            try:
                driver.cuStreamEndCapture(origin.handle)
            except Exception:
                pass

    print("legacy", captured(lambda origin: touch[1, 1, 0](out), cuda.stream()))  # a blocking stream captured
    print("legacy_beside_non_blocking", captured(lambda origin: touch[1, 1, 0](out)))
    print("sync", captured(lambda origin: origin.synchronize()))
    outside = cuda.event(timing=False)
    outside.record(0)
    print("isolation", captured(lambda origin: outside.wait(origin)))

    def unjoined(origin):
        other, fork = graphs._capture_stream(), cuda.event(timing=False)
        fork.record(origin)
        fork.wait(other)
        touch[1, 1, other](out)
        driver.cuStreamEndCapture(origin.handle)
    print("unjoined", captured(unjoined))
    print("legacy_begin", refused(lambda: driver.cuStreamBeginCapture(cuda.default_stream().handle, mode)))
''')


def test_the_fake_keeps_the_capture_rules_a_driver_keeps():
    """During a stream capture a driver refuses the legacy stream (when a blocking stream is captured),
    synchronising, waiting on an event from outside the capture and ending with a stream not joined
    back; so does the fake."""
    done = subprocess.run([sys.executable, "-c", CAPTURE_RULES], capture_output=True, text=True, timeout=600,
                          env=fakegpu.child_environment("T4"))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert lines == {"legacy": "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "legacy_beside_non_blocking": "launched", "sync": "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
                     "isolation": "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "unjoined": "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
                     "legacy_begin": "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"}, lines
