"""What CUDA looks like from a fresh Python: run as a script by the doctor, prints one JSON object.

A file, not ``-m fastlstm_lib...``: importing fastlstm_lib would switch Numba to its simulator when
there is no GPU. The doctor starts it without the simulator variables, so it sees the hardware even
when the notebook forced the simulator. Each question is asked on its own; on a GPU it runs a plain
kernel (the whole course) and one with a grid barrier (notebook 09's persistent kernel, libcudadevrt).
"""

import ctypes.util
import json
import os
import sys

#: ``--stand-in``: the doctor's process runs on a stand-in driver that launches kernels but computes
#: nothing (``fastlstm_lib.runtime.device.declare_stand_in``), loaded with the package: import it
#: too, and count a kernel that launched as passing.
STAND_IN = "--stand-in" in sys.argv[1:]
if STAND_IN:
    import fastlstm_lib  # noqa: F401


def ask(facts, key, question):
    try:
        facts[key] = question()
    except Exception as error:  # every failure is a fact to report, not a crash
        facts[key] = {"error": f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"}


def library_found(name):
    from numba.cuda.cudadrv import libs

    libs.open_cudalib(name)  # raises if it cannot be loaded
    return True


def cudadevrt_found():
    from numba.cuda.cudadrv import libs

    return os.path.isfile(libs.get_cudalib("cudadevrt", static=True))


def device():
    from numba import cuda

    gpu = cuda.get_current_device()
    name = gpu.name.decode() if isinstance(gpu.name, bytes) else str(gpu.name)
    return {"name": name, "compute_capability": "{}.{}".format(*gpu.compute_capability),
            "multiprocessors": int(gpu.MULTIPROCESSOR_COUNT),
            "cooperative_launch": bool(gpu.COOPERATIVE_LAUNCH),  # a grid barrier needs it
            "driver": "{}.{}".format(*cuda.cudadrv.driver.driver.get_version())}


def plain_kernel(launch_only: bool = STAND_IN):
    """Whether a plain kernel computes the right values (``launch_only``: whether it launched)."""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def add_one(values):
        i = cuda.grid(1)
        if i < values.size:
            values[i] += 1.0

    values = cuda.to_device(np.arange(40, dtype=np.float32))
    add_one[2, 32](values)
    return bool((values.copy_to_host() == np.arange(40, dtype=np.float32) + 1).all()) or launch_only


def grid_barrier_kernel(launch_only: bool = STAND_IN):
    import numpy as np
    from numba import cuda

    @cuda.jit
    def shift(values, out):
        i = cuda.grid(1)
        grid = cuda.cg.this_grid()
        values[i] = i
        grid.sync()
        out[i] = values[(i + 1) % values.size]

    values = cuda.device_array(64, dtype=np.float32)
    out = cuda.device_array(64, dtype=np.float32)
    shift[2, 32](values, out)
    return bool((out.copy_to_host() == (np.arange(64) + 1) % 64).all()) or launch_only


def main():
    facts = {"driver_library": ctypes.util.find_library("cuda") is not None or os.path.exists("/usr/lib/wsl/lib")}
    ask(facts, "numba_cuda", lambda: __import__("numba.cuda").cuda.is_available())
    for name in ("nvvm", "nvrtc"):
        ask(facts, name, lambda name=name: library_found(name))
    ask(facts, "cudadevrt", cudadevrt_found)
    if facts["numba_cuda"] is True:
        ask(facts, "device", device)
        ask(facts, "plain_kernel", plain_kernel)
        ask(facts, "grid_barrier", grid_barrier_kernel)
    json.dump(facts, sys.stdout)


if __name__ == "__main__":
    main()
