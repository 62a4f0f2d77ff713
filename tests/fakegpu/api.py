"""The driver's functions for devices, contexts and memory.

Each is registered under its CUDA driver API name with its C signature (``registry.entry``) and
does what the driver does, on the fake device: one device, one primary context, device memory
as host buffers. Streams and events are in ``streams.py``; modules and launches in ``launch.py``.
"""

from __future__ import annotations

import ctypes
from ctypes import c_int, c_size_t, c_ubyte, c_uint, c_ulonglong, c_void_p

from .registry import P, DriverError, entry, put
from .store import FAKE_OPERATION_MS

CONTEXT = 0xC0DE0  # the one primary context's handle
_ERROR_TEXT = {}


@entry("cuInit", c_uint)
def cu_init(state, flags):
    state.log("init")


@entry("cuDriverGetVersion", P(c_int))
def driver_version(state, out):
    put(out, state.driver_version)


@entry("cuGetErrorName", c_int, P(c_void_p), aliases=("cuGetErrorString",))
def error_name(state, code, out):
    from cuda.bindings.driver import CUresult

    text = _ERROR_TEXT.setdefault(code, ctypes.create_string_buffer(CUresult(code).name.encode()))
    put(out, ctypes.addressof(text))  # the driver's strings are static: keep ours alive


@entry("cuDeviceGetCount", P(c_int))
def device_count(state, out):
    put(out, 1)


@entry("cuDeviceGet", P(c_int), c_int)
def device_get(state, out, ordinal):
    if ordinal != 0:
        raise DriverError("CUDA_ERROR_INVALID_DEVICE", f"device {ordinal}: the fake has one GPU")
    put(out, 0)


@entry("cuDeviceGetName", c_void_p, c_int, c_int)
def device_name(state, buffer, length, device):
    name = state.device.name.encode()[:length - 1] + b"\0"
    ctypes.memmove(buffer, name, len(name))


@entry("cuDeviceGetUuid", c_void_p, c_int, aliases=("cuDeviceGetUuid_v2",))
def device_uuid(state, out, device):
    ctypes.memmove(out, state.device.short_name.encode().ljust(16, b"-")[:16], 16)


@entry("cuDeviceGetPCIBusId", c_void_p, c_int, c_int)
def pci_bus_id(state, buffer, length, device):
    text = b"0000:01:00.0\0"[:length]
    ctypes.memmove(buffer, text, len(text))


@entry("cuDeviceTotalMem", P(c_size_t), c_int)
def total_memory(state, out, device):
    put(out, state.device.total_memory)


@entry("cuDeviceGetAttribute", P(c_int), c_int, c_int)
def device_attribute(state, out, attribute, device):
    from cuda.bindings.driver import CUdevice_attribute

    name = CUdevice_attribute(attribute).name.removeprefix("CU_DEVICE_ATTRIBUTE_")
    put(out, state.device.attribute(name))


# ---------------------------------------------------------------------------------- contexts

def _current(state):
    return getattr(state.current, "stack", [])


@entry("cuDevicePrimaryCtxRetain", P(c_void_p), c_int)
def primary_retain(state, out, device):
    put(out, CONTEXT)


@entry("cuDevicePrimaryCtxRelease", c_int, aliases=("cuDevicePrimaryCtxReset",))
def primary_release(state, device):
    pass


@entry("cuDevicePrimaryCtxGetState", c_int, P(c_uint), P(c_int))
def primary_state(state, device, flags, active):
    put(flags, 0)
    put(active, 1)


@entry("cuCtxGetCurrent", P(c_void_p))
def context_current(state, out):
    stack = _current(state)
    put(out, stack[-1] if stack else None)


@entry("cuCtxSetCurrent", c_void_p)
def context_set(state, context):
    stack = _current(state)
    state.current.stack = (stack[:-1] if stack else []) + ([context] if context else [])


@entry("cuCtxPushCurrent", c_void_p)
def context_push(state, context):
    state.current.stack = _current(state) + [context]


@entry("cuCtxPopCurrent", P(c_void_p))
def context_pop(state, out):
    stack = _current(state)
    if not stack:
        raise DriverError("CUDA_ERROR_INVALID_CONTEXT", "no current context to pop")
    if out:
        put(out, stack[-1])
    state.current.stack = stack[:-1]


@entry("cuCtxGetDevice", P(c_int))
def context_device(state, out):
    put(out, 0)


@entry("cuCtxGetApiVersion", c_void_p, P(c_uint))
def context_api_version(state, context, out):
    put(out, 12000)


@entry("cuCtxGetId", c_void_p, P(c_ulonglong), aliases=("cuStreamGetId",))
def context_id(state, handle, out):
    put(out, int(handle or 0))


@entry("cuCtxGetFlags", P(c_uint))
def context_flags(state, out):
    put(out, 0)


@entry("cuCtxGetStreamPriorityRange", P(c_int), P(c_int))
def priority_range(state, least, greatest):
    put(least, 0)
    put(greatest, -5)


@entry("cuCtxSynchronize")
def context_synchronize(state):
    from .graphs import refuse_sync

    refuse_sync(state)
    state.log("synchronize")


# ---------------------------------------------------------------------------------- memory

@entry("cuMemGetInfo", P(c_size_t), P(c_size_t))
def memory_info(state, free, total):
    used = sum(buffer.nbytes for buffer in state.memory.values())
    put(free, state.device.total_memory - used)
    put(total, state.device.total_memory)


@entry("cuMemAlloc", P(c_ulonglong), c_size_t)
def memory_allocate(state, out, size):
    used = sum(buffer.nbytes for buffer in state.memory.values())
    if used + size > state.device.total_memory:
        raise DriverError("CUDA_ERROR_OUT_OF_MEMORY", f"{size} B more than the {state.device.total_memory} B GPU holds")
    put(out, state.allocate(size, state.memory))
    state.log("alloc", bytes=size)


@entry("cuMemFree", c_ulonglong)
def memory_free(state, pointer):
    if state.memory.pop(pointer, None) is None:
        raise DriverError("CUDA_ERROR_INVALID_VALUE", f"cuMemFree of {pointer:#x}, not an allocation")


@entry("cuMemHostAlloc", P(c_void_p), c_size_t, c_uint)
def host_allocate(state, out, size, flags):
    put(out, state.allocate(size, state.host_memory))


@entry("cuMemFreeHost", c_void_p)
def host_free(state, pointer):
    state.host_memory.pop(pointer, None)


@entry("cuMemHostGetDevicePointer", P(c_ulonglong), c_void_p, c_uint)
def host_device_pointer(state, out, pointer, flags):
    put(out, pointer)


@entry("cuMemHostRegister", c_void_p, c_size_t, c_uint)
def host_register(state, pointer, size, flags):
    state.log("host_register", bytes=size)


@entry("cuMemHostUnregister", c_void_p)
def host_unregister(state, pointer):
    pass


@entry("cuMemGetAddressRange", P(c_ulonglong), P(c_size_t), c_ulonglong)
def address_range(state, base_out, size_out, pointer):
    base, buffer = state.find(pointer)
    if base is None:
        raise DriverError("CUDA_ERROR_NOT_FOUND", f"{pointer:#x} is not device memory")
    put(base_out, base)
    put(size_out, buffer.nbytes)


@entry("cuPointerGetAttribute", c_void_p, c_int, c_ulonglong)
def pointer_attribute(state, out, attribute, pointer):
    from cuda.bindings.driver import CUpointer_attribute as A

    on_device = state.find(pointer)[0] is not None
    values = {A.CU_POINTER_ATTRIBUTE_DEVICE_POINTER: (c_ulonglong, pointer),
              A.CU_POINTER_ATTRIBUTE_CONTEXT: (c_void_p, CONTEXT),
              A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE: (c_uint, 2 if on_device else 1),
              A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: (c_int, 0),
              A.CU_POINTER_ATTRIBUTE_IS_MANAGED: (c_int, 0)}
    kind, value = values.get(int(attribute), (c_int, 0))
    ctypes.cast(out, P(kind))[0] = value


def _not_in_capture(state, stream) -> None:
    """A copy or memset during a capture: on the default stream, refused as a launch there is
    (``graphs.capture_of``); on a capturing stream it would become a graph node, which the fake
    does not model (the library never does it)."""
    from .graphs import capture_of

    if capture_of(state, stream) is not None:
        raise DriverError("CUDA_ERROR_NOT_SUPPORTED", "copies inside a stream capture are not modelled by the fake")


def _copy(state, api, destination, source, size, stream=None):
    _not_in_capture(state, stream)
    ctypes.memmove(destination, source, size)
    state.clock_ms += FAKE_OPERATION_MS
    state.log("copy", kind=api, bytes=size, stream=stream)


for _name, _types in (("HtoD", (c_ulonglong, c_void_p)), ("DtoH", (c_void_p, c_ulonglong)),
                      ("DtoD", (c_ulonglong, c_ulonglong)), ("", (c_ulonglong, c_ulonglong))):
    entry(f"cuMemcpy{_name}", *_types, c_size_t)(
        lambda state, d, s, n, _api=_name or "default": _copy(state, _api, d, s, n))
    entry(f"cuMemcpy{_name}Async", *_types, c_size_t, c_void_p)(
        lambda state, d, s, n, stream, _api=_name or "default": _copy(state, _api, d, s, n, stream))


@entry("cuMemsetD8", c_ulonglong, c_ubyte, c_size_t)
def memset(state, pointer, value, count, stream=None):
    _not_in_capture(state, stream)
    ctypes.memset(pointer, value, count)
    state.clock_ms += FAKE_OPERATION_MS
    state.log("memset", bytes=count, stream=stream)


entry("cuMemsetD8Async", c_ulonglong, c_ubyte, c_size_t, c_void_p)(memset)
