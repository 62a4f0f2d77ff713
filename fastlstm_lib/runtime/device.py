"""What we are running on: ``DEVICE``, the one object the kernels, steps and runners ask (do
kernels compute values here, do times mean anything, are kernels compiled for a real chip, must
launches stay small), and ``device_info()``, recorded with every measurement.

``runtime.simulator`` chooses the backend at import; only this module reads its flags. A CUDA
driver that compiles and launches kernels but runs none (a stand-in, such as a test double of the
driver) says so with ``declare_stand_in``; the package knows no particular one.
"""

from __future__ import annotations

import dataclasses
import functools
import platform

import numpy as np
import numba
from numba import cuda

from . import numba_compat, simulator


@dataclasses.dataclass
class Device:
    """The machine the kernels run on: ``kind`` "gpu" (numba-cuda on a CUDA driver) or "simulator"
    (every CUDA thread a Python thread); ``stand_in``: None, or the name of a driver that compiles
    and launches kernels but runs none (``declare_stand_in``)."""

    kind: str
    stand_in: str | None = None

    def __post_init__(self):
        if self.kind not in ("gpu", "simulator"):
            raise ValueError(f"kind must be 'gpu' or 'simulator', got {self.kind!r}")
        if self.stand_in is not None and self.kind != "gpu":
            raise ValueError(f"stand_in names a CUDA driver; the simulator has none, got stand_in={self.stand_in!r}")

    @property
    def computes(self) -> bool:
        """Whether kernels compute values here (a GPU, the simulator), so results can be checked."""
        return self.stand_in is None

    @property
    def timed(self) -> bool:
        """Whether times mean anything here: only on a real GPU."""
        return self.kind == "gpu" and self.computes

    @property
    def compiled(self) -> bool:
        """Whether kernels are compiled to a chip's machine code (a GPU, a stand-in driver): register caps,
        aligned shared arrays, vector-load intrinsics, cooperative launches and cuBLAS exist."""
        return self.kind != "simulator"

    @property
    def small(self) -> bool:
        """Whether launches must stay small: every CUDA thread is a Python thread (the simulator),
        so tiles, blocks and problem sizes shrink and blocks run one at a time."""
        return self.kind == "simulator"

    @property
    def shared_alignment(self) -> int | None:
        """Byte alignment for shared arrays that vector loads read (None: the simulator takes none)."""
        return 16 if self.compiled else None

    @property
    def poison(self) -> float:
        """What outputs are filled with before a run: NaN where kernels compute (a result never
        written shows), 0 where nothing runs (a stand-in driver: nothing is read back to compare)."""
        return np.nan if self.computes else 0.0

    @property
    def timing(self) -> str:
        """How times are measured here and what they mean, in words (recorded with every result)."""
        if self.stand_in is not None:
            return f"{self.stand_in}: nothing runs, times are meaningless"
        return {"simulator": "wall clock on the CUDA simulator: meaningless", "gpu": "CUDA events"}[self.kind]

    def compile_options(self, **options) -> dict:
        """``options`` (e.g. ``max_registers``) where kernels are compiled for a chip; none on the simulator."""
        return options if self.compiled else {}

    def announce(self) -> None:
        """Say once, at the first Numba work, that the simulator stands in for a GPU (no-op elsewhere)."""
        simulator.announce()


#: The device this process runs on, chosen once at ``import fastlstm_lib``.
DEVICE = Device("simulator") if simulator.SIMULATOR else Device("gpu")


def declare_stand_in(name: str) -> None:
    """Mark this process's driver as a stand-in named ``name`` (e.g. "fake H100"): no value is
    compared and no time kept. Said by the stand-in itself when it loads, before any kernel work;
    ``DEVICE`` changes in place, so every module that imported it sees it."""
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a non-empty str naming the stand-in driver, got {name!r}")
    if DEVICE.kind != "gpu":
        raise ValueError(f"a stand-in replaces a CUDA driver, but this process runs on the {DEVICE.kind}")
    if DEVICE.stand_in not in (None, name):
        raise ValueError(f"this process already runs on the stand-in {DEVICE.stand_in!r}, not {name!r}")
    DEVICE.stand_in = name


def device_info() -> dict:
    """Device name, simulator or not, compute capability, SM count and software versions, and which
    Numba CUDA runs the kernels (``numba_cuda_in_use``: "numba-cuda 0.30.4", or "numba 0.68.1's
    built-in simulator" where numba-cuda is not installed, as on macOS)."""
    DEVICE.announce()
    info = {
        "name": "Numba CUDA simulator (CPU)",
        "simulator": DEVICE.small,
        "compute_capability": None,
        "multiprocessors": None,
        "cuda_driver": None,
        "numba": numba.__version__,
        "numba_cuda": numba_compat.NUMBA_CUDA_VERSION,
        "numba_cuda_in_use": numba_compat.describe(DEVICE.small),
        "numpy": np.__version__,
        "python": platform.python_version(),
        "host": platform.machine(),
    }
    if DEVICE.kind == "simulator":
        return info
    if DEVICE.stand_in is not None:  # say so wherever the device is shown
        info["stand_in"] = f"{DEVICE.stand_in}: kernels compiled and launches checked, nothing runs"
    info["name"], capability = gpu_identity()
    info["compute_capability"] = "{}.{}".format(*capability)
    info["multiprocessors"] = multiprocessors()
    try:
        info["cuda_driver"] = "{}.{}".format(*cuda.cudadrv.driver.driver.get_version())
    except Exception:  # informational only; never fail a measurement over it
        pass
    return info


def is_simulator() -> bool:
    """Whether Numba's CUDA simulator stands in for a GPU (what the notebooks ask)."""
    return DEVICE.kind == "simulator"


@functools.lru_cache(maxsize=1)
def multiprocessors() -> int:
    """SMs of the current GPU (1 on the simulator, whose blocks run one at a time)."""
    return 1 if DEVICE.small else int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


@functools.lru_cache(maxsize=1)
def gpu_identity() -> tuple[str | None, tuple[int, int] | None]:
    """(name, compute capability (major, minor)) of the current GPU; (None, None) on the simulator."""
    if DEVICE.small:
        return None, None
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    return name, tuple(int(part) for part in device.compute_capability)
