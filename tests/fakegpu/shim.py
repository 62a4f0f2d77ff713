"""The fake ``libcuda.so.1``: a few lines of C, built once with the machine's C compiler.

cuda.bindings (which numba-cuda and cuda.core both call) loads the CUDA driver library by name
and then asks it for every entry point through ``cuGetProcAddress_v2``. This library answers
that question by asking Python (``set_resolver``), so each driver function the fake implements
is a ctypes callback (``api.py``, ``launch.py``) behind a small C stub, and the rest stay "not
found", as on a driver that lacks them. It is loaded with RTLD_GLOBAL under the soname ``libcuda.so.1`` before anything asks for
the driver, so every later ``dlopen("libcuda.so.1")`` in the process gets this one.

``cuInit``, ``cuDeviceGetCount`` and ``cuDriverGetVersion`` are exported by name as well, for
code that looks them up directly (``fastlstm_lib.runtime.simulator``'s ctypes probe does).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = r"""
/* Every entry point handed out is a C stub that forwards to its Python implementation while the
   interpreter lives. After fakecuda_shutdown() (Python's exit) a stub answers CUDA_SUCCESS without
   calling Python: cuda.core's C++ destructors free streams and modules after Python is gone.
   Driver functions take integer and pointer arguments only (no floats by value), so forwarding 12
   integer-class arguments serves every signature on x86-64 and AArch64 Linux. The stubs must not
   be compiled as tail calls: a sibling call would write 12 arguments' worth of stack into a
   caller's frame that holds fewer (hence -fno-optimize-sibling-calls). */
#include <time.h>
typedef void* (*resolver_t)(const char*, int, unsigned long long);
typedef long A;
typedef int (*target_t)(A, A, A, A, A, A, A, A, A, A, A, A);
#define SLOTS 256
static resolver_t resolver = 0;
static target_t targets[SLOTS];
static int used = 0;
static volatile int alive = 1;
static long long spent_ns = 0;      /* CPU time inside the fake (ctypes and Python included) */
static __thread int depth = 0;      /* a driver call made from inside one is counted once */
void fakecuda_set_resolver(resolver_t r) { resolver = r; }
void fakecuda_shutdown(void) { alive = 0; }
long long fakecuda_spent_ns(void) { return spent_ns; }

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
#define STUB(k) static int stub_##k(A a, A b, A c, A d, A e, A f, A g, A h, A i, A j, A l, A m) { \
    long long start; int result; \
    if (!alive) return 0; \
    if (depth++) { result = targets[k](a, b, c, d, e, f, g, h, i, j, l, m); depth--; return result; } \
    start = now_ns(); \
    result = targets[k](a, b, c, d, e, f, g, h, i, j, l, m); \
    spent_ns += now_ns() - start; depth--; \
    return result; }
#define STUB8(k) STUB(k##0) STUB(k##1) STUB(k##2) STUB(k##3) STUB(k##4) STUB(k##5) STUB(k##6) STUB(k##7)
#define STUB64(k) STUB8(k##0) STUB8(k##1) STUB8(k##2) STUB8(k##3) STUB8(k##4) STUB8(k##5) STUB8(k##6) STUB8(k##7)
STUB64(00) STUB64(01) STUB64(02) STUB64(03)  /* octal tokens: stub_0107 is slot 0107 = 71 */
#define REF(k) (void*)stub_##k,
#define REF8(k) REF(k##0) REF(k##1) REF(k##2) REF(k##3) REF(k##4) REF(k##5) REF(k##6) REF(k##7)
#define REF64(k) REF8(k##0) REF8(k##1) REF8(k##2) REF8(k##3) REF8(k##4) REF8(k##5) REF8(k##6) REF8(k##7)
static void* stubs[SLOTS] = { REF64(00) REF64(01) REF64(02) REF64(03) };

static void* stub_for(void* target) {
    int k;
    if (!target) return 0;
    for (k = 0; k < used; k++) if (targets[k] == (target_t)target) return stubs[k];
    if (used == SLOTS) return 0;
    targets[used] = (target_t)target;
    return stubs[used++];
}
int cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags, int* status) {
    void* p = stub_for(resolver ? resolver(symbol, version, flags) : 0);
    *pfn = p;
    if (status) *status = p ? 0 : 1;   /* CU_GET_PROC_ADDRESS_SUCCESS, ..._SYMBOL_NOT_FOUND */
    return p ? 0 : 500;                /* CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND */
}
int cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, 0);
}
typedef int (*u_t)(unsigned);
typedef int (*p_t)(int*);
int cuInit(unsigned flags) { u_t f = (u_t)stub_for(resolver ? resolver("cuInit", 2000, 0) : 0); return f ? f(flags) : 3; }
int cuDeviceGetCount(int* n) { p_t f = (p_t)stub_for(resolver ? resolver("cuDeviceGetCount", 2000, 0) : 0); return f ? f(n) : 3; }
int cuDriverGetVersion(int* v) { p_t f = (p_t)stub_for(resolver ? resolver("cuDriverGetVersion", 2020, 0) : 0); return f ? f(v) : 3; }
"""

RESOLVER = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_ulonglong)


class ShimUnavailable(RuntimeError):
    """The fake driver library cannot be built or loaded on this machine (it needs Linux and a C compiler)."""


def cache_dir() -> Path:
    """Where the built library is kept: ``fakegpu/`` in the project's cache folder ($FASTLSTM_CACHE,
    else ~/.cache/fastlstm: ``fastlstm_lib.course.kept.cache_root``)."""
    from fastlstm_lib.course.kept import cache_root

    return cache_root() / "fakegpu"


def build() -> Path:
    """The path of the built library, compiling it first if this source has not been built yet."""
    if not sys.platform.startswith("linux"):
        raise ShimUnavailable(f"the fake GPU replaces libcuda.so.1, so it needs Linux (this is {sys.platform})")
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise ShimUnavailable("the fake GPU's driver library needs a C compiler (cc or gcc) on the PATH")
    flags = ["-shared", "-fPIC", "-O2", "-fno-optimize-sibling-calls", "-Wl,-soname,libcuda.so.1"]
    digest = hashlib.sha256((SOURCE + " ".join(flags)).encode()).hexdigest()[:16]
    target = cache_dir() / digest / "libcuda.so.1"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        source = Path(work) / "fakecuda.c"
        source.write_text(SOURCE)
        built = Path(work) / "libcuda.so.1"
        done = subprocess.run([compiler, *flags, "-o", str(built), str(source)], capture_output=True, text=True)
        if done.returncode != 0:
            raise ShimUnavailable(f"building the fake driver library failed: {done.stderr.strip()[-500:]}")
        os.replace(built, target)  # atomic: parallel test processes may build it at once
    return target


_loaded = None


def driver_cpu_seconds() -> float:
    """CPU seconds this process has spent inside the fake driver, as its C stubs measure them
    (the ctypes crossing and the Python behind each call included): what a host-time
    measurement takes out, so that it counts Python's and numba-cuda's cost alone."""
    if _loaded is None:
        return 0.0
    _loaded[0].fakecuda_spent_ns.restype = ctypes.c_longlong
    return _loaded[0].fakecuda_spent_ns() * 1e-9


def load(resolve) -> ctypes.CDLL:
    """Build (once), load globally as libcuda.so.1, and route its lookups to ``resolve(name, version)``."""
    global _loaded
    if _loaded is None:
        library = ctypes.CDLL(str(build()), mode=ctypes.RTLD_GLOBAL)
        callback = RESOLVER(lambda name, version, flags: resolve(name.decode(), version))
        library.fakecuda_set_resolver.argtypes = [RESOLVER]
        library.fakecuda_set_resolver(callback)
        _loaded = (library, callback)  # the callback must live as long as the library
        import atexit

        atexit.register(library.fakecuda_shutdown)  # later driver calls must not enter Python
    return _loaded[0]
