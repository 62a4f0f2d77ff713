"""Every kernel compiles for a real GPU (sm_90, an H100) and keeps its accumulators in registers.

Where the CUDA toolkit's ptxas is on the PATH too, the PTX is assembled for sm_90 as the driver
would: no kernel spills, except the persistent one within its register cap (MAX_REGISTERS),
which makes its occupancy predictable.

The simulator runs kernels as Python, so it accepts code that Numba's GPU compiler would reject
(a shared-array shape that is not a constant, say). This test compiles every kernel to PTX
without needing a GPU: only NVVM (the CUDA toolkit's libnvvm) and NVRTC, which a machine without
a GPU usually lacks. Then it skips, and says what to install
(`pip install nvidia-cuda-nvrtc`, with the CUDA toolkit for libnvvm).
"""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from fastlstm_lib.kernels.persistent import MAX_REGISTERS

SCRIPT = textwrap.dedent('''
    import sys, types
    fake = types.ModuleType("fastlstm_lib.simulator")
    fake.SIMULATOR = False  # compile for a GPU, although this machine has none
    fake.announce = lambda: None
    sys.modules["fastlstm_lib.simulator"] = fake
    import fastlstm_lib
    from numba import cuda, float32, boolean
    import numba.cuda.dispatcher as dispatcher
    # Device functions ask the current GPU for its compute capability: say an H100's.
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    from fastlstm_lib.kernels import gemm as g, persistent_plan as p, pointwise as pw, pointwise_backward as pwb
    try:
        cuda.compile_ptx(pw._sigmoid.py_func, (float32[:, :], float32[:, :]), cc=(9, 0))
    except Exception as error:
        print("SKIP", type(error).__name__, str(error).splitlines()[0][:200])
        sys.exit(0)
    A2, C3, C2, C1 = float32[:, :], float32[:, :, ::1], float32[:, ::1], float32[::1]
    jobs = {
        "blocked_gemm": (g.blocked_gemm_kernel(g.GPU_LARGE, False), (A2, A2, A2, boolean)),
        "blocked_gemm_t": (g.blocked_gemm_kernel(g.GPU_SMALL, True), (A2, A2, A2, boolean)),
        "blocked_gemm_t_strided": (g.blocked_gemm_kernel(g.GPU_LARGE, True, True), (A2, A2, A2, boolean)),
        "tiled_gemm": (g.tiled_gemm_kernel(16), (A2, A2, A2, boolean)),
        "lstm_cell": (pw._lstm_cell, (A2, A2, float32[:], A2, A2)),
        # Training (notebooks 40-42): the transposed-A GEMM of the weight gradients, the cells.
        "blocked_gemm_ta": (g.blocked_gemm_kernel(g.GPU_LARGE, False, False, True), (A2, A2, A2, boolean)),
        "blocked_gemm_ta_tb": (g.blocked_gemm_kernel(g.GPU_SMALL, True, False, True), (A2, A2, A2, boolean)),
        "lstm_cell_train": (pwb._lstm_cell_train, (A2, A2, float32[:], A2, A2, A2, A2)),
        "lstm_cell_backward": (pwb._lstm_cell_backward, (A2, A2, A2, A2, A2, A2, A2)),
        "sigmoid_backward": (pwb._sigmoid_backward, (A2, A2, A2)),
        "tanh_backward": (pwb._tanh_backward, (A2, A2, A2)),
    }
    for batch in (1, 4, 64):
        plan = p.plan(512, batch, chip="H100", single_block=False, target_threads=256)
        jobs[f"persistent_b{batch}"] = (plan.kernel(), (C3, C2, C1, C3))
    for name, (kernel, signature) in jobs.items():
        ptx, _ = cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0))
        open(f"{sys.argv[1]}/{name}.ptx", "w").write(ptx)
        print(name, "local", ptx.count("ld.local") + ptx.count("st.local"))
''')


def assemble(ptx_path, max_registers=None):
    """(registers, spill-store bytes) of one kernel, from ptxas's report for sm_90."""
    command = ["ptxas", "-c", "-arch=sm_90", "-v", str(ptx_path), "-o", str(ptx_path.with_suffix(".o"))]
    if max_registers:
        command += ["--maxrregcount", str(max_registers)]
    report = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    registers = int(re.search(r"Used (\d+) registers", report.stderr).group(1))
    spills = int(re.search(r"(\d+) bytes spill stores", report.stderr).group(1))
    return registers, spills


def test_kernels_compile_for_sm90_without_local_memory(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    if done.stdout.startswith("SKIP"):
        pytest.skip("no NVVM/NVRTC to compile GPU code here: " + done.stdout.strip())
    lines = dict(line.rsplit(" local ", 1) for line in done.stdout.strip().splitlines())
    assert set(lines) == {"blocked_gemm", "blocked_gemm_t", "blocked_gemm_t_strided", "tiled_gemm", "lstm_cell",
                          "persistent_b1", "persistent_b4", "persistent_b64", "blocked_gemm_ta", "blocked_gemm_ta_tb",
                          "lstm_cell_train", "lstm_cell_backward", "sigmoid_backward", "tanh_backward"}
    # Register-blocked accumulators and the persistent kernel's c must live in registers.
    assert all(count == "0" for count in lines.values()), lines
    if shutil.which("ptxas") is None:
        return
    for name in lines:
        persistent = name.startswith("persistent")
        registers, spills = assemble(tmp_path / f"{name}.ptx", MAX_REGISTERS if persistent else None)
        if persistent:
            assert registers <= MAX_REGISTERS and spills <= 64, (name, registers, spills)
        else:
            assert spills == 0, (name, registers, spills)
