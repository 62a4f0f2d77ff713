"""Choose between a real GPU and Numba's CUDA simulator, *before* numba is imported.

Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the
decision has to be made here, with nothing but ctypes: we ask the CUDA driver library
directly whether it loads, initialises and sees at least one device.

Overrides (environment variables):
- ``NUMBA_ENABLE_CUDASIM=1``: the simulator, whatever hardware is present.
- ``FASTLSTM_SIMULATOR=1``: the same, for people who'd rather not touch Numba's variable.
"""

from __future__ import annotations

import ctypes
import os
import sys

_MESSAGE = (
    "fastlstm_lib: {why}; using Numba's CUDA simulator: kernels run on the CPU, slowly, "
    "problem sizes shrink and timings mean nothing."
)


SIMULATOR_SWITCH_INTERVAL_S = 2e-4


def _driver_sees_a_gpu() -> bool:
    """True when the CUDA driver loads, initialises and reports at least one device."""
    names = {"win32": ["nvcuda.dll"], "darwin": []}.get(sys.platform, ["libcuda.so.1", "libcuda.so"])
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return False
            count = ctypes.c_int(0)
            if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return False
            return count.value > 0
        except AttributeError:  # not a real driver library
            return False
    return False


def choose_backend() -> tuple[bool, str | None]:
    """Decide once per process. Returns (simulator?, reason or None)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return True, "NUMBA_ENABLE_CUDASIM is set"
    if os.environ.get("FASTLSTM_SIMULATOR", "0") not in ("", "0"):
        return True, "FASTLSTM_SIMULATOR is set"
    if _driver_sees_a_gpu():
        return False, None
    return True, "no CUDA driver or GPU found"


def switch_to_simulator_if_needed() -> bool:
    """Turn the simulator on when there is no usable GPU; say so in one line. Returns simulator?"""
    simulator, why = choose_backend()
    if not simulator:
        return False
    if "numba.cuda" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"):
        # Too late: numba.cuda was imported first and chose the real driver.
        print(
            "fastlstm_lib: no usable GPU, but numba.cuda was imported before fastlstm_lib, so the "
            "simulator can't be switched on; import fastlstm_lib first (or set "
            "NUMBA_ENABLE_CUDASIM=1).",
            file=sys.stderr,
        )
        return False
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The simulator runs each CUDA thread as a Python thread, and its block manager busy-polls
    # them at every cuda.syncthreads(). With Python's default 5 ms GIL switch interval a tiled
    # GEMM spends most of its time waiting for the GIL; 0.2 ms makes it ~6x faster.
    sys.setswitchinterval(min(sys.getswitchinterval(), SIMULATOR_SWITCH_INTERVAL_S))
    print(_MESSAGE.format(why=why), file=sys.stderr)
    return True


SIMULATOR = switch_to_simulator_if_needed()
