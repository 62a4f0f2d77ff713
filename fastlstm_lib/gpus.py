"""GPU data-sheet figures (``data/gpus.csv``) and the residency limits they imply.

Used to say what fraction of its peak a measurement reaches, to plan the persistent kernel for a
chip (occupancy: how many blocks fit on one SM, and whether the chip can launch a cooperative
grid at all) and to bound what a step could take on a chip we may not have (notebooks 09, 11).
Every row of the CSV cites its source. The current GPU's limits are read from its driver
(``chip()``): numba-cuda turns ``device.X`` into ``cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_X)``,
so X must be a name of CUDA's ``CUdevice_attribute`` (tests/test_gpus.py checks every one).
Last, the charts' rule, one GPU per panel: ``gpus_named``, ``panel_gpus``, ``several_gpus`` and
``one_gpu`` (also importable from ``course.plots``, as the notebooks do).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import numbers
import re
from pathlib import Path

from .checks import check_str

CSV = Path(__file__).resolve().parents[1] / "data" / "gpus.csv"

_NUMBERS = {"sms": int, "fp32_tflops": float, "tf32_tflops": float, "memory_gb_s": float, "l2_mib": float, "shared_kib_per_sm": float,
            "shared_kib_per_block": float, "max_threads_per_sm": int, "max_blocks_per_sm": int,
            "registers_per_sm": int, "cooperative_launch": lambda value: bool(int(value))}


@functools.lru_cache(maxsize=1)
def gpu_table() -> tuple[dict, ...]:
    """Every row of data/gpus.csv, numbers converted, in file order (most specific match first).
    Cached and shared: the library's own; ``find_gpu``/``gpu`` hand out copies."""
    with CSV.open() as lines:
        rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    return tuple({key: _NUMBERS.get(key, str)(value) for key, value in row.items()} for row in rows)


def known_gpus() -> list[str]:
    """The short names of the GPUs in the table: "M40", "T4", ..., "H100"."""
    return [row["name"] for row in gpu_table()]


def find_gpu(name: str) -> dict | None:
    """The row for a short name ("H100") or a device name as CUDA reports it
    ("NVIDIA H100 80GB HBM3"); None for a GPU the table does not know (or the simulator).

    A row's "match" names are whole words of the device name: "NVIDIA L4" is not an "NVIDIA
    L40S", "H200" is not a "GH200" (a GPU the table does not know gets no other GPU's figures).
    The row is the caller's own copy: changing it changes nothing for the next call.
    """
    check_str("name", name, example="H100")
    for row in gpu_table():
        if name == row["name"]:
            return dict(row)
    for row in gpu_table():
        if any(re.search(rf"(?<![A-Za-z0-9]){re.escape(pattern)}(?![A-Za-z0-9])", name, re.IGNORECASE)
               for pattern in row["match"].split("|")):
            return dict(row)
    return None


def gpu(name: str) -> dict:
    """Like ``find_gpu``, but a ValueError that lists the known names when there is no row."""
    row = find_gpu(name)
    if row is None:
        raise ValueError(f"unknown GPU {name!r}; data/gpus.csv knows {', '.join(known_gpus())}")
    return row


def fp32_peak_tflops(device_name: str) -> float | None:
    """The FP32 peak of a GPU named like ``device_info()['name']``, or None if unknown."""
    row = find_gpu(check_str("device_name", device_name, example="NVIDIA H100 80GB HBM3"))
    return row["fp32_tflops"] if row else None


def peak_tflops(row: dict, peak: str = "fp32") -> float:
    """The data-sheet peak of GPU row ``row`` (``gpu``) that FLOPs of ``peak`` run at: "fp32" (the
    CUDA cores' FFMA) or "tf32" (the Tensor Cores' dense TF32: ``Spec.peak``). A ValueError where
    the GPU has no such peak (TF32 below compute capability 8.0)."""
    if peak not in ("fp32", "tf32"):
        raise ValueError(f"peak must be 'fp32' or 'tf32', got {peak!r}")
    value = row[f"{peak}_tflops"]
    if value != value:  # NaN: the data sheet gives none
        raise ValueError(f"the {row['name']} (compute capability {row['compute_capability']}) has no {peak.upper()} "
                         f"peak: TF32 Tensor Cores start at compute capability 8.0")
    return value


# --------------------------------------------------------------------------------------------
# A chip's residency limits, and how many blocks of a kernel fit on one SM at once (occupancy).


@dataclasses.dataclass(frozen=True)
class Chip:
    """What decides how many blocks of a kernel can be resident at once on a GPU."""

    name: str
    sms: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_bytes_per_sm: int
    shared_bytes_per_block: int  # the most one block may have (opt-in beyond 48 KiB)
    registers_per_sm: int
    reserved_shared_bytes_per_block: int  # the driver keeps 1 KiB per block from compute capability 8.0
    l2_bytes: int
    compute_capability: str  # "5.2"
    cooperative_launch: bool  # can it launch a cooperative grid (and so have a grid barrier)? From 6.0

    @property
    def capability(self) -> tuple[int, int]:
        """``compute_capability`` as (major, minor), for comparing: (7, 5)."""
        major, minor = self.compute_capability.split(".")
        return int(major), int(minor)

    @classmethod
    def from_row(cls, row: dict) -> "Chip":
        major = int(str(row["compute_capability"]).split(".")[0])
        return cls(name=row["name"], sms=row["sms"], max_threads_per_sm=row["max_threads_per_sm"],
                   max_blocks_per_sm=row["max_blocks_per_sm"],
                   shared_bytes_per_sm=int(row["shared_kib_per_sm"] * 1024),
                   shared_bytes_per_block=int(row["shared_kib_per_block"] * 1024),
                   registers_per_sm=row["registers_per_sm"],
                   reserved_shared_bytes_per_block=1024 if major >= 8 else 0,
                   l2_bytes=int(row["l2_mib"] * 2**20), compute_capability=str(row["compute_capability"]),
                   cooperative_launch=row["cooperative_launch"])


def chip(name: str | None = None) -> Chip:
    """The limits of the GPU called ``name`` (data/gpus.csv), or of the current GPU when None.

    The current GPU's limits are read from the driver. On the simulator there is no current
    GPU: name one ("H100") to plan for it.
    """
    if name is not None:
        return Chip.from_row(gpu(name))
    from .runtime.device import DEVICE

    if DEVICE.small:
        raise ValueError("the CUDA simulator has no chip limits: name a GPU, e.g. chip('H100')")
    from numba import cuda

    # Each attribute is CU_DEVICE_ATTRIBUTE_<name> (CUDA 11 or newer has all of them).
    device = cuda.get_current_device()
    device_name = device.name.decode() if isinstance(device.name, bytes) else str(device.name)
    major, minor = device.compute_capability
    return Chip(name=device_name, sms=int(device.MULTIPROCESSOR_COUNT),
                max_threads_per_sm=int(device.MAX_THREADS_PER_MULTIPROCESSOR),
                max_blocks_per_sm=int(device.MAX_BLOCKS_PER_MULTIPROCESSOR),
                shared_bytes_per_sm=int(device.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
                shared_bytes_per_block=int(device.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                registers_per_sm=int(device.MAX_REGISTERS_PER_MULTIPROCESSOR),
                reserved_shared_bytes_per_block=1024 if major >= 8 else 0,
                l2_bytes=int(device.L2_CACHE_SIZE), compute_capability=f"{major}.{minor}",
                cooperative_launch=bool(device.COOPERATIVE_LAUNCH))


def occupancy(chip_: Chip, threads: int, shared_bytes: int, registers_per_thread: int) -> tuple[int, str]:
    """How many blocks of ``threads`` threads, each using ``shared_bytes`` of shared memory and
    ``registers_per_thread`` registers, one SM holds at once, and which limit decides it
    ("blocks", "threads", "registers" or "shared memory").

    A model of CUDA's occupancy calculator (registers are allocated per warp, in units of 256).
    """
    if shared_bytes > chip_.shared_bytes_per_block:
        residency_limits(chip_, threads, shared_bytes, registers_per_thread)  # validates the arguments
        return 0, "shared memory"
    limits = residency_limits(chip_, threads, shared_bytes, registers_per_thread)
    binding = min(limits, key=limits.get)
    return max(0, limits[binding]), binding


def residency_limits(chip_: Chip, threads: int, shared_bytes: int, registers_per_thread: int) -> dict:
    """Blocks of ``threads`` threads, ``shared_bytes`` of shared memory and ``registers_per_thread``
    registers that one SM could hold by each limit alone: {"blocks", "threads", "registers",
    "shared memory"}. ``occupancy`` is the smallest of them (notebook 09 shows all four).

    Registers are allocated per warp, in units of 256; from compute capability 8.0 the driver
    keeps 1 KiB of shared memory per block. A block that asks for more shared memory than one
    block may have (``shared_bytes_per_block``) cannot be launched at all: 0 by shared memory; a
    block with none at all is not limited by it (as many as the block limit allows).
    """
    if not isinstance(chip_, Chip):
        raise TypeError(f"chip_ must be a Chip (fastlstm_lib.gpus.chip(name)), got {type(chip_).__name__}")
    for name, value, least in (("threads", threads, 1), ("shared_bytes", shared_bytes, 0),
                               ("registers_per_thread", registers_per_thread, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise ValueError(f"need {name} an int >= {least}, got {value!r}")
    warps = -(-threads // 32)
    registers_per_warp = -(-registers_per_thread * 32 // 256) * 256
    shared_per_block = shared_bytes + chip_.reserved_shared_bytes_per_block
    if shared_bytes > chip_.shared_bytes_per_block:
        by_shared = 0
    elif shared_per_block == 0:  # no shared memory at all: it limits nothing
        by_shared = chip_.max_blocks_per_sm
    else:
        by_shared = chip_.shared_bytes_per_sm // shared_per_block
    return {
        "blocks": chip_.max_blocks_per_sm,
        "threads": chip_.max_threads_per_sm // (warps * 32),
        "registers": chip_.registers_per_sm // (registers_per_warp * warps),
        "shared memory": by_shared,
    }


# --------------------------------------------------------------------------------------------
# One GPU per panel: the rule every chart of the course and its topics keeps (issue 66). An Axes
# holds one GPU's numbers (a time, a bound, a peak, a balance) and names that GPU; another GPU's
# numbers go in a panel of their own, at the same scale. A GPU is named in a panel's title, legend,
# tick labels or texts, by a name or match word of the table ("M40", "Tesla M40") or a GeForce name
# ("RTX 2080 Ti"). tests/test_chart_marks.py draws every library chart with the notebooks' inputs
# and checks it with ``several_gpus``; a notebook's own chart that names several GPUs calls
# ``one_gpu`` for each panel. matplotlib is not imported here: these read the Axes they are given.


@functools.lru_cache(maxsize=1)
def _gpu_names() -> tuple[tuple[re.Pattern, str], ...]:
    """(whole-word pattern, short name) per name and match word of data/gpus.csv, longest first
    ("H100 PCIe" before "H100"), then GeForce names, each its own."""
    words = {word: row["name"] for row in reversed(gpu_table()) for word in [row["name"], *row["match"].split("|")]}
    edge = "(?<![A-Za-z0-9]){}(?![A-Za-z0-9])"
    found = [(re.compile(edge.format(re.escape(word)), re.I), name)
             for word, name in sorted(words.items(), key=lambda item: -len(item[0]))]
    return tuple(found) + ((re.compile(edge.format(r"(?:GeForce )?[GR]TX \d{3,4}(?: Ti| SUPER)?"), re.I), None),)


def gpus_named(text: str) -> set[str]:
    """The GPUs ``text`` names: data/gpus.csv's short names ("Tesla M40" -> "M40"; "H100 PCIe" is
    not also an "H100"), and GeForce names as written ("RTX 2080 Ti")."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__} {text!r:.80}")
    named = set()
    for pattern, name in _gpu_names():
        for match in pattern.finditer(text):
            named.add(name or " ".join(match.group(0).split()))
        text = pattern.sub(" ", text)
    return named


def panel_texts(ax) -> list[str]:
    """Every text a reader sees on ``ax``: title, axis labels, tick labels, legend and series
    labels, and texts placed on it (annotations)."""
    ax.figure.canvas.draw()  # tick labels are placed when the figure is drawn
    texts = [ax.get_title(loc) for loc in ("left", "center", "right")] + [ax.get_xlabel(), ax.get_ylabel()]
    texts += [tick.get_text() for tick in ax.get_xticklabels() + ax.get_yticklabels()]
    texts += ax.get_legend_handles_labels()[1] + [text.get_text() for text in ax.texts]
    legend = ax.get_legend()
    if legend is not None:
        texts += [text.get_text() for text in legend.get_texts()]
    return [text for text in texts if text and not text.startswith("_")]


def panel_gpus(ax) -> set[str]:
    """The GPUs ``ax`` names (``gpus_named`` over ``panel_texts``)."""
    return set().union(*(gpus_named(text) for text in panel_texts(ax)))


def several_gpus(fig) -> list[str]:
    """The panels of ``fig`` that break the one-GPU rule, each as "axes i names A, B"."""
    return [f"axes {index} names {', '.join(sorted(named))}" for index, ax in enumerate(fig.axes)
            for named in [panel_gpus(ax)] if len(named) > 1]


def one_gpu(ax, gpu: str) -> None:
    """Mark ``ax`` as ``gpu``'s panel, once it is drawn: its title starts "{gpu}: " unless it names
    the GPU already; a ValueError where any of its texts names another GPU (the module's rule)."""
    check_str("gpu", gpu, example="M40")
    title, names = ax.get_title(), gpus_named(gpu) | {gpu}  # a device name ("NVIDIA H100 80GB HBM3") or a short one
    if not names & (gpus_named(title) | {title}):
        ax.set_title(f"{gpu}: {title}" if title else gpu, fontsize="medium")
    others = panel_gpus(ax) - names
    if others:
        raise ValueError(f"one GPU per panel: the {gpu} panel also names {', '.join(sorted(others))}")
