"""The GPU the fake driver presents: its attributes, its occupancy and its launch checks.

Attributes come from a row of ``data/gpus.csv`` (SMs, compute capability, shared memory per SM
and per block, threads, blocks and registers per SM, L2, cooperative launch) plus the limits
every GPU of these generations shares (1024 threads per block, block and grid dimensions, 64 Ki
registers per block, 48 KiB of shared memory per block without the opt-in), as the CUDA C++
Programming Guide's table of compute capabilities gives them. An attribute we do not model is
answered 0 and remembered (``FakeDevice.unmodelled``), so a test can see what code asked for.

Occupancy, and the registers and shared memory a launch may ask for, are the library's one model
of CUDA's occupancy calculator (``fastlstm_lib.gpus.occupancy`` and ``residency_limits``: registers
allocated per warp in units of 256, 1 KiB of shared memory reserved per block from compute
capability 8.0), applied to the kernel's registers and shared memory as read from its cubin. The
fake adds only what the driver knows of one kernel: its dynamic shared memory above 48 KiB is
refused without the opt-in (``cuFuncSetAttribute``).
"""

from __future__ import annotations

import dataclasses
import functools

from fastlstm_lib import gpus

#: Bytes of device memory per GPU (NVIDIA data sheets; the largest variant named in data/gpus.csv).
MEMORY_GB = {"M40": 24, "T4": 16, "V100": 32, "A100": 80, "L4": 24, "H100 PCIe": 80, "H100": 80, "H200": 141}
#: The device names CUDA reports (what ``nvidia-smi`` prints).
DEVICE_NAMES = {"M40": "Tesla M40 24GB", "T4": "Tesla T4", "V100": "Tesla V100-SXM2-32GB",
                "A100": "NVIDIA A100-SXM4-80GB", "L4": "NVIDIA L4", "H100 PCIe": "NVIDIA H100 PCIe",
                "H100": "NVIDIA H100 80GB HBM3", "H200": "NVIDIA H200"}
STATIC_SHARED_LIMIT = 48 * 1024
MAX_THREADS_PER_BLOCK = 1024


class LaunchRefused(Exception):
    """A launch the driver would refuse: ``code`` is the CUresult name, ``why`` says which limit."""

    def __init__(self, code: str, why: str):
        super().__init__(f"{code}: {why}")
        self.code, self.why = code, why


@dataclasses.dataclass
class FakeDevice:
    """One GPU of data/gpus.csv, as the driver describes it."""

    row: dict
    unmodelled: set = dataclasses.field(default_factory=set)

    @property
    def short_name(self) -> str:
        return self.row["name"]

    @property
    def name(self) -> str:
        return DEVICE_NAMES.get(self.short_name, f"NVIDIA {self.short_name}")

    @property
    def compute_capability(self) -> tuple[int, int]:
        major, minor = str(self.row["compute_capability"]).split(".")
        return int(major), int(minor)

    @property
    def total_memory(self) -> int:
        return MEMORY_GB.get(self.short_name, 16) * 10**9

    @property
    def cooperative(self) -> bool:
        return self.row["cooperative_launch"]  # data/gpus.csv's column (a bool once read)

    @functools.cached_property
    def chip(self) -> gpus.Chip:
        """The residency limits the occupancy model reads (``fastlstm_lib.gpus``)."""
        return gpus.Chip.from_row(self.row)

    def attributes(self) -> dict[str, int]:
        """CU_DEVICE_ATTRIBUTE_<name> -> value, for the attributes this fake models."""
        major, minor = self.compute_capability
        row = self.row
        return {
            "COMPUTE_CAPABILITY_MAJOR": major, "COMPUTE_CAPABILITY_MINOR": minor,
            "MULTIPROCESSOR_COUNT": row["sms"], "WARP_SIZE": 32,
            "MAX_THREADS_PER_BLOCK": MAX_THREADS_PER_BLOCK,
            "MAX_BLOCK_DIM_X": 1024, "MAX_BLOCK_DIM_Y": 1024, "MAX_BLOCK_DIM_Z": 64,
            "MAX_GRID_DIM_X": 2**31 - 1, "MAX_GRID_DIM_Y": 65535, "MAX_GRID_DIM_Z": 65535,
            "MAX_THREADS_PER_MULTIPROCESSOR": row["max_threads_per_sm"],
            "MAX_BLOCKS_PER_MULTIPROCESSOR": row["max_blocks_per_sm"],
            "MAX_REGISTERS_PER_BLOCK": 65536, "MAX_REGISTERS_PER_MULTIPROCESSOR": row["registers_per_sm"],
            "MAX_SHARED_MEMORY_PER_BLOCK": STATIC_SHARED_LIMIT,
            "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": int(row["shared_kib_per_block"] * 1024),
            "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": int(row["shared_kib_per_sm"] * 1024),
            "RESERVED_SHARED_MEMORY_PER_BLOCK": self.chip.reserved_shared_bytes_per_block,
            "L2_CACHE_SIZE": int(row["l2_mib"] * 2**20), "TOTAL_CONSTANT_MEMORY": 65536,
            "COOPERATIVE_LAUNCH": int(self.cooperative), "CONCURRENT_KERNELS": 1, "ASYNC_ENGINE_COUNT": 2,
            "UNIFIED_ADDRESSING": 1, "CAN_MAP_HOST_MEMORY": 1, "MANAGED_MEMORY": 1, "INTEGRATED": 0,
            "COMPUTE_MODE": 0, "ECC_ENABLED": 1, "PCI_BUS_ID": 1, "PCI_DEVICE_ID": 0, "PCI_DOMAIN_ID": 0,
            "STREAM_PRIORITIES_SUPPORTED": 1, "GLOBAL_L1_CACHE_SUPPORTED": 1, "LOCAL_L1_CACHE_SUPPORTED": 1,
            "HOST_REGISTER_SUPPORTED": 1, "MEMORY_POOLS_SUPPORTED": 0, "VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED": 0,
            "CLUSTER_LAUNCH": int(major >= 9), "KERNEL_EXEC_TIMEOUT": 0, "TCC_DRIVER": 0,
        }

    def attribute(self, name: str) -> int:
        values = self.attributes()
        if name not in values:
            self.unmodelled.add(name)
        return values.get(name, 0)

    # ------------------------------------------------------------------ occupancy and launches

    def registers_fit(self, threads: int, registers: int) -> bool:
        """Whether one block of ``threads`` threads with ``registers`` each fits an SM's registers."""
        return gpus.residency_limits(self.chip, threads, 0, max(registers, 1))["registers"] > 0

    def max_threads_per_block(self, registers: int) -> int:
        """The largest block a kernel with ``registers`` per thread can be launched with (whole warps)."""
        return next((warps * 32 for warps in range(MAX_THREADS_PER_BLOCK // 32, 0, -1)
                     if self.registers_fit(warps * 32, registers)), 0)

    def occupancy(self, kernel, threads: int, dynamic_shared: int) -> int:
        """Blocks of ``kernel`` one SM holds at once (cuOccupancyMaxActiveBlocksPerMultiprocessor):
        ``gpus.occupancy`` of its registers and its static and dynamic shared memory."""
        if not 1 <= threads <= MAX_THREADS_PER_BLOCK or dynamic_shared > kernel.max_dynamic_shared:
            return 0
        shared = kernel.static_shared_bytes + dynamic_shared
        return gpus.occupancy(self.chip, threads, shared, max(kernel.registers, 1))[0]

    def check_launch(self, kernel, grid, block, dynamic_shared: int, cooperative: bool) -> None:
        """Raise LaunchRefused where the driver would refuse this launch; say which limit."""
        if min(grid) < 1 or min(block) < 1:
            raise LaunchRefused("CUDA_ERROR_INVALID_VALUE", f"a grid or block dimension is 0: grid {grid}, block {block}")
        for axis, size, most in zip("xyz", block, (1024, 1024, 64)):
            if size > most:
                raise LaunchRefused("CUDA_ERROR_INVALID_VALUE", f"block.{axis} = {size} > {most}")
        for axis, size, most in zip("xyz", grid, (2**31 - 1, 65535, 65535)):
            if size > most:
                raise LaunchRefused("CUDA_ERROR_INVALID_VALUE", f"grid.{axis} = {size} > {most}")
        threads = block[0] * block[1] * block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise LaunchRefused("CUDA_ERROR_INVALID_VALUE", f"{threads} threads per block > {MAX_THREADS_PER_BLOCK}")
        if not self.registers_fit(threads, kernel.registers):
            raise LaunchRefused("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                                f"{threads} threads x {kernel.registers} registers do not fit one SM's "
                                f"{self.chip.registers_per_sm} registers (at most "
                                f"{self.max_threads_per_block(kernel.registers)} threads)")
        if dynamic_shared > kernel.max_dynamic_shared:
            raise LaunchRefused("CUDA_ERROR_INVALID_VALUE",
                                f"{dynamic_shared} B of dynamic shared memory > the kernel's limit of "
                                f"{kernel.max_dynamic_shared} B (above 48 KiB in all needs "
                                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) first)")
        if kernel.grid_sync and not cooperative:
            raise LaunchRefused("CUDA_ERROR_INVALID_VALUE", "a kernel with a grid barrier launched without the "
                                "cooperative attribute: its blocks need not be resident together")
        if cooperative:
            if not self.cooperative:
                raise LaunchRefused("CUDA_ERROR_NOT_SUPPORTED", f"{self.short_name} (compute capability "
                                    f"{self.row['compute_capability']}) cannot launch a cooperative grid")
            blocks = grid[0] * grid[1] * grid[2]
            resident = self.occupancy(kernel, threads, dynamic_shared) * self.row["sms"]
            if blocks > resident:
                raise LaunchRefused("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
                                    f"a cooperative grid of {blocks} blocks > the {resident} that can be resident "
                                    f"at once ({resident // self.row['sms']} per SM x {self.row['sms']} SMs)")
