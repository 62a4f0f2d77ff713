"""What CUDA looks like from a fresh Python: run as a script by the doctor, prints one JSON object.

A file, not ``-m fastlstm_lib...``: importing fastlstm_lib would switch Numba to its simulator when
there is no GPU. The doctor starts it without the simulator variables, so it sees the hardware even
when the notebook forced the simulator. Each question is asked on its own; on a GPU it compiles and
runs a plain kernel (what the whole course needs) and checks its values.
"""

import ctypes.util
import json
import os
import sys


def ask(facts, key, question):
    try:
        facts[key] = question()
    except Exception as error:  # every failure is a fact to report, not a crash
        facts[key] = {"error": f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"}


def library_found(name):
    from numba.cuda.cudadrv import libs

    libs.open_cudalib(name)  # raises if it cannot be loaded
    return True


def device():
    from numba import cuda

    gpu = cuda.get_current_device()
    name = gpu.name.decode() if isinstance(gpu.name, bytes) else str(gpu.name)
    return {"name": name, "compute_capability": "{}.{}".format(*gpu.compute_capability),
            "multiprocessors": int(gpu.MULTIPROCESSOR_COUNT),
            "driver": "{}.{}".format(*cuda.cudadrv.driver.driver.get_version())}


def values_computed():
    """False only on a stand-in driver that launches kernels but computes nothing: one loaded in this
    Python before the probe (as the tests' fake GPU is, from sitecustomize) says so in fastlstm_lib's device."""
    device = sys.modules.get("fastlstm_lib.runtime.device")
    return device is None or device.DEVICE.computes


def plain_kernel():
    """Compile and run a kernel that adds one to 0, 1, ... 39, and check the values read back
    (``right_values``; reading them waits for the kernel, so a launch that failed raises here)."""
    import numpy as np
    from numba import cuda

    @cuda.jit
    def add_one(values):
        i = cuda.grid(1)
        if i < values.size:
            values[i] += 1.0

    values = cuda.to_device(np.arange(40, dtype=np.float32))
    add_one[2, 32](values)
    return right_values(values.copy_to_host())


def right_values(got):
    """True when ``got`` is 1, 2, ... 40, or on a driver that computes nothing; else RuntimeError."""
    import numpy as np

    if values_computed() and not (got == np.arange(40, dtype=np.float32) + 1).all():
        raise RuntimeError("the kernel ran but computed wrong values")
    return True


def main():
    facts = {"driver_library": ctypes.util.find_library("cuda") is not None or os.path.exists("/usr/lib/wsl/lib")}
    ask(facts, "numba_cuda", lambda: __import__("numba.cuda").cuda.is_available())
    for name in ("nvvm", "nvrtc"):
        ask(facts, name, lambda name=name: library_found(name))
    if facts["numba_cuda"] is True:
        ask(facts, "device", device)
        ask(facts, "plain_kernel", plain_kernel)
    json.dump(facts, sys.stdout)


if __name__ == "__main__":
    main()
