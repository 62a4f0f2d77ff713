"""Every kernel compiles for a real GPU (sm_90, an H100) and keeps its accumulators in registers.

The simulator runs kernels as Python, so it accepts code that Numba's GPU compiler would reject
(a shared-array shape that is not a constant, say). This test compiles every kernel to PTX
without needing a GPU: only NVVM (the CUDA toolkit's libnvvm) and NVRTC, which a machine without
a GPU usually lacks. Then it skips, and says what to install
(`pip install nvidia-cuda-nvrtc`, with the CUDA toolkit for libnvvm).
"""

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import sys, types
    fake = types.ModuleType("fastlstm_lib._device")
    fake.SIMULATOR = False  # compile for a GPU, although this machine has none
    sys.modules["fastlstm_lib._device"] = fake
    import fastlstm_lib
    from numba import cuda, float32, boolean
    import numba.cuda.dispatcher as dispatcher
    # Device functions ask the current GPU for its compute capability: say an H100's.
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    from fastlstm_lib.kernels import gemm as g, persistent as p, pointwise as pw
    try:
        cuda.compile_ptx(pw._sigmoid.py_func, (float32[:, :], float32[:, :]), cc=(9, 0))
    except Exception as error:
        print("SKIP", type(error).__name__, str(error).splitlines()[0][:200])
        sys.exit(0)
    A2, C3, C2, C1 = float32[:, :], float32[:, :, ::1], float32[:, ::1], float32[::1]
    jobs = {
        "blocked_gemm": (g.blocked_gemm_kernel(g.LARGE, False), (A2, A2, A2, boolean)),
        "blocked_gemm_t": (g.blocked_gemm_kernel(g.SMALL, True), (A2, A2, A2, boolean)),
        "tiled_gemm": (g.tiled_gemm_kernel(16), (A2, A2, A2, boolean)),
        "lstm_cell": (pw._lstm_cell, (A2, A2, float32[:], A2, A2)),
    }
    for batch in (1, 4, 64):
        plan = p.plan(512, batch, max_blocks=lambda _: 132, single_block=False, target_threads=256)
        jobs[f"persistent_b{batch}"] = (plan.kernel(), (C3, C2, C1, C3))
    for name, (kernel, signature) in jobs.items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))
        print(name, "local", ptx.count("ld.local") + ptx.count("st.local"))
''')


def test_kernels_compile_for_sm90_without_local_memory():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "NUMBA_ENABLE_CUDASIM": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    if done.stdout.startswith("SKIP"):
        pytest.skip("no NVVM/NVRTC to compile GPU code here: " + done.stdout.strip())
    lines = dict(line.rsplit(" local ", 1) for line in done.stdout.strip().splitlines())
    assert set(lines) == {"blocked_gemm", "blocked_gemm_t", "tiled_gemm", "lstm_cell",
                          "persistent_b1", "persistent_b4", "persistent_b64"}
    # Register-blocked accumulators and the persistent kernel's c must live in registers.
    assert all(count == "0" for count in lines.values()), lines
