"""What every persistent version's kernel and launch share: the block's dynamic shared buffer
(``dynamic_shared``), and a kernel compiled for a cooperative launch (``compile_cooperative``) with
more than 48 KiB of dynamic shared memory allowed where its plan needs it (``allow_dynamic_shared``).
"""

from __future__ import annotations

from numba import cuda, float32

from ...runtime.device import DEVICE
from .layout import STATIC_SHARED_BYTES


if not DEVICE.compiled:
    @cuda.jit(device=True)
    def dynamic_shared():
        """The block's dynamic shared buffer (the simulator's takes no alignment)."""
        return cuda.shared.array(0, float32)
else:
    @cuda.jit(device=True, inline="always")
    def dynamic_shared():
        """The block's dynamic shared buffer, 16-byte aligned: what lets the compiler turn
        ``VECTOR`` neighbouring float loads into one 128-bit load (LDS.128)."""
        return cuda.shared.array(0, float32, alignment=16)


def allow_dynamic_shared(kernel, shared_bytes: int) -> None:
    """Let a compiled kernel launch with ``shared_bytes`` of dynamic shared memory.

    By default a kernel may use 48 KiB of shared memory in all, static included; more needs the
    kernel attribute MAX_DYNAMIC_SHARED_SIZE_BYTES first, up to what the chip allows one block.
    numba-cuda has no public call for it (numba-cuda issue #94), so we make the driver call it
    makes itself for the carveout (``CudaPythonFunction.set_shared_memory_carveout``):
    ``cuKernelSetAttribute`` on the kernel handle, for the current device.
    """
    if shared_bytes <= 0:
        return
    from cuda.bindings.driver import CUfunction_attribute
    from numba.cuda.cudadrv.driver import driver

    function = kernel._codelibrary.get_cufunc()
    if shared_bytes + function.attrs.shared <= STATIC_SHARED_BYTES:
        return
    attribute = CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attribute, shared_bytes, function.handle, function.device.id)


def compile_cooperative(kernel, signature: tuple, shared_bytes: int):
    """A persistent kernel compiled for ``signature`` and opted in to ``shared_bytes`` of dynamic
    shared memory. A missing CUDA device runtime (the grid barrier links it) gets a clear message."""
    try:
        compiled_kernel = kernel.compile(signature)
    except Exception as error:
        if "cudadevrt" not in str(error):
            raise
        raise RuntimeError(
            "the persistent kernel's grid barrier needs the CUDA device runtime (libcudadevrt.a), which "
            "Numba did not find: install the CUDA toolkit, or `pip install \"numba-cuda[cu12]\"` (or [cu13]); "
            "`python -c 'from numba import cuda; cuda.cudadrv.libs.test()'` shows where Numba looks. "
            f"({error})"
        ) from error
    allow_dynamic_shared(compiled_kernel, shared_bytes)
    return compiled_kernel
