"""The driver's functions for modules, kernels, links, occupancy and launches.

A library is loaded from the image the driver is handed: a cubin as nvJitLink linked it (CUDA
13, sm_75 and newer), or PTX, which the real driver compiles with its JIT; here ptxas does that
part (CUDA 12's for sm_52, where CUDA 13 has no backend). Either way the kernel's registers,
local and static shared memory come from the compiled cubin (``cubin.kernels``), as the driver
reports them. Every launch is checked by ``FakeDevice.check_launch`` and recorded, never run.
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import subprocess
import tempfile
from ctypes import c_char_p, c_int, c_size_t, c_uint, c_void_p

from . import cubin, toolchain
from .registry import P, DriverError, entry, put
from .store import FAKE_OPERATION_MS, Kernel

STATIC_SHARED_LIMIT = 48 * 1024


def _arch(state) -> str:
    major, minor = state.device.compute_capability
    return f"sm_{major}{minor}"


def _compile_ptx(state, ptx: bytes, max_registers: int | None = None) -> bytes:
    """What the driver's JIT does with PTX: ptxas for this GPU's architecture."""
    with tempfile.TemporaryDirectory() as work:
        source, target = os.path.join(work, "k.ptx"), os.path.join(work, "k.cubin")
        with open(source, "wb") as out:
            out.write(ptx.rstrip(b"\0"))
        command = [toolchain.ptxas(state.device.compute_capability), f"-arch={_arch(state)}", source, "-o", target]
        if max_registers:
            command += ["--maxrregcount", str(max_registers)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise DriverError("CUDA_ERROR_INVALID_PTX", done.stderr.strip()[-800:])
        with open(target, "rb") as compiled:
            return compiled.read()


def _image(state, pointer: int) -> bytes:
    head = ctypes.string_at(pointer, 4)
    if head == b"\x7fELF":
        return ctypes.string_at(pointer, cubin.image_size(pointer))
    text = ctypes.string_at(pointer)  # PTX: a NUL-terminated string
    if b".version" not in text[:4096]:
        raise DriverError("CUDA_ERROR_INVALID_IMAGE", "neither a cubin nor PTX (fatbins are not modelled)")
    return _compile_ptx(state, text)


def _load(state, data: bytes, api: str) -> int:
    library = state.handle()
    found = {}
    flags = int.from_bytes(data[0x30:0x34], "little")  # e_flags: the SM version, in byte 0 or 1 by ABI
    if int(_arch(state)[3:]) not in (flags & 0xFF, (flags >> 8) & 0xFF):
        raise DriverError("CUDA_ERROR_NO_BINARY_FOR_GPU",
                          f"a cubin (e_flags {flags:#x}) not for {state.device.short_name} ({_arch(state)})")
    for name, resources in cubin.kernels(data).items():
        handle = state.handle()
        state.kernels[handle] = Kernel(**dataclasses.asdict(resources), library=library, arch=_arch(state),
                                       max_dynamic_shared=STATIC_SHARED_LIMIT - resources.static_shared_bytes)
        found[name] = handle
    state.libraries[library] = found
    state.log("module_load", api=api, kernels=[state.kernels[h].short_name for h in found.values()],
              bytes=len(data))
    return library


@entry("cuLibraryLoadData", P(c_void_p), c_void_p, c_void_p, c_void_p, c_uint, c_void_p, c_void_p, c_uint)
def library_load(state, out, code, options, values, count, library_options, library_values, library_count):
    put(out, _load(state, _image(state, code), "cuLibraryLoadData"))


@entry("cuModuleLoadData", P(c_void_p), c_void_p)
def module_load(state, out, code):
    put(out, _load(state, _image(state, code), "cuModuleLoadData"))


@entry("cuLibraryUnload", c_void_p, aliases=("cuModuleUnload",))
def library_unload(state, library):
    state.libraries.pop(library, None)


@entry("cuLibraryGetKernel", P(c_void_p), c_void_p, c_char_p, aliases=("cuModuleGetFunction",))
def library_kernel(state, out, library, name):
    handle = state.libraries.get(library, {}).get(name.decode())
    if handle is None:
        raise DriverError("CUDA_ERROR_NOT_FOUND", f"no kernel {name.decode()!r} in that library")
    put(out, handle)


@entry("cuLibraryGetModule", P(c_void_p), c_void_p)
def library_module(state, out, library):
    put(out, library)


@entry("cuKernelGetFunction", P(c_void_p), c_void_p)
def kernel_function(state, out, kernel):
    put(out, kernel)  # one handle serves as both the CUkernel and its CUfunction


def _kernel(state, handle) -> Kernel:
    kernel = state.kernels.get(handle)
    if kernel is None:
        raise DriverError("CUDA_ERROR_INVALID_HANDLE", f"{handle!r} is not a loaded kernel")
    return kernel


def _attribute(state, kernel: Kernel, attribute: int) -> int:
    from cuda.bindings.driver import CUfunction_attribute as F

    major, minor = state.device.compute_capability
    values = {F.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: state.device.max_threads_per_block(kernel.registers),
              F.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: kernel.static_shared_bytes,
              F.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: kernel.const_bytes,
              F.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: kernel.local_bytes,
              F.CU_FUNC_ATTRIBUTE_NUM_REGS: kernel.registers,
              F.CU_FUNC_ATTRIBUTE_PTX_VERSION: major * 10 + minor,
              F.CU_FUNC_ATTRIBUTE_BINARY_VERSION: major * 10 + minor,
              F.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: kernel.max_dynamic_shared}
    return values.get(int(attribute), 0)


@entry("cuKernelGetAttribute", P(c_int), c_int, c_void_p, c_int)
def kernel_get_attribute(state, out, attribute, kernel, device):
    put(out, _attribute(state, _kernel(state, kernel), attribute))


@entry("cuFuncGetAttribute", P(c_int), c_int, c_void_p)
def function_get_attribute(state, out, attribute, function):
    put(out, _attribute(state, _kernel(state, function), attribute))


def _set_attribute(state, kernel: Kernel, attribute: int, value: int) -> None:
    from cuda.bindings.driver import CUfunction_attribute as F

    state.log("set_attribute", kernel=kernel.short_name, attribute=F(attribute).name, value=value)
    if attribute == F.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        most = state.device.attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") - kernel.static_shared_bytes
        if not 0 <= value <= most:
            raise DriverError("CUDA_ERROR_INVALID_VALUE", f"MAX_DYNAMIC_SHARED_SIZE_BYTES = {value} outside "
                              f"0..{most} on {state.device.short_name}")
        kernel.max_dynamic_shared = value


@entry("cuKernelSetAttribute", c_int, c_int, c_void_p, c_int)
def kernel_set_attribute(state, attribute, value, kernel, device):
    _set_attribute(state, _kernel(state, kernel), attribute, value)


@entry("cuFuncSetAttribute", c_void_p, c_int, c_int)
def function_set_attribute(state, function, attribute, value):
    _set_attribute(state, _kernel(state, function), attribute, value)


@entry("cuKernelSetCacheConfig", c_void_p, c_int, c_int)
def kernel_cache_config(state, kernel, config, device):
    _kernel(state, kernel)


@entry("cuFuncSetCacheConfig", c_void_p, c_int)
def function_cache_config(state, function, config):
    _kernel(state, function)


@entry("cuOccupancyMaxActiveBlocksPerMultiprocessor", P(c_int), c_void_p, c_int, c_size_t)
def occupancy(state, out, function, threads, dynamic_shared, flags=0):
    kernel = _kernel(state, function)
    put(out, state.device.occupancy(kernel, threads, dynamic_shared))
    state.log("occupancy", kernel=kernel.short_name, threads=threads, dynamic_shared=dynamic_shared)


entry("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", P(c_int), c_void_p, c_int, c_size_t, c_uint)(occupancy)


# ---------------------------------------------------------------------------------- launches

class LaunchAttribute(ctypes.Structure):
    _fields_ = [("id", c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", c_uint * 3), ("block", c_uint * 3), ("shared", c_uint), ("stream", c_void_p),
                ("attributes", P(LaunchAttribute)), ("count", c_uint)]


def launch(state, function, grid, block, shared, stream, cooperative, api):
    from .device import LaunchRefused
    from .graphs import captured_launch

    kernel = _kernel(state, function)
    try:
        state.device.check_launch(kernel, grid, block, shared, cooperative)
    except LaunchRefused as refused:
        raise DriverError(refused.code, f"{kernel.short_name}: {refused.why}") from None
    details = dict(kernel=kernel.short_name, grid=grid, block=block, dynamic_shared=shared,
                   static_shared=kernel.static_shared_bytes, registers=kernel.registers, cooperative=cooperative,
                   stream=stream, api=api)
    if captured_launch(state, stream, details):  # a node of a graph being captured: it does not run now
        return
    state.clock_ms += FAKE_OPERATION_MS
    state.log("launch", **details)


@entry("cuLaunchKernelEx", P(LaunchConfig), c_void_p, c_void_p, c_void_p)
def launch_ex(state, config, function, parameters, extra):
    from cuda.bindings.driver import CUlaunchAttributeID

    cfg = config[0]
    cooperative = False
    for i in range(cfg.count):
        attribute = cfg.attributes[i]
        if attribute.id == CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            cooperative = int.from_bytes(attribute.value[:4], "little") != 0
    launch(state, function, tuple(cfg.grid), tuple(cfg.block), cfg.shared, cfg.stream, cooperative, "cuLaunchKernelEx")


@entry("cuLaunchKernel", c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p, c_void_p, c_void_p)
def launch_plain(state, function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra):
    launch(state, function, (gx, gy, gz), (bx, by, bz), shared, stream, False, "cuLaunchKernel")


@entry("cuLaunchCooperativeKernel", c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_void_p, c_void_p)
def launch_cooperative(state, function, gx, gy, gz, bx, by, bz, shared, stream, parameters):
    launch(state, function, (gx, gy, gz), (bx, by, bz), shared, stream, True, "cuLaunchCooperativeKernel")
