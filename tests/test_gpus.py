"""data/gpus.csv and the chip limits read from a GPU: every device attribute the library asks the
driver for exists, the limits read from a (fake) device equal the data sheet's, and every row is
consistent with its compute capability."""

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import fastlstm_lib as fl
from conftest import needs_numba_cuda
from fastlstm_lib import gpus
from fastlstm_lib.kernels import persistent

PACKAGE = Path(__file__).resolve().parents[1] / "fastlstm_lib"


def cuda_attribute_names() -> set | None:
    """CUDA's device attribute names (CU_DEVICE_ATTRIBUTE_<name>), from cuda.bindings, which
    numba-cuda brings; None without it (numba's built-in simulator, as on macOS)."""
    try:
        from cuda.bindings.driver import CUdevice_attribute
    except ImportError:
        return None
    return {name[len("CU_DEVICE_ATTRIBUTE_"):] for name in dir(CUdevice_attribute) if name.startswith("CU_DEVICE_ATTRIBUTE_")}


CUDA_NAMES = cuda_attribute_names()
UPPER = re.compile(r"[A-Z][A-Z0-9_]*")


def _is_current_device_call(node) -> bool:
    return isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "get_current_device"


def device_attributes_asked_for() -> dict:
    """{ATTRIBUTE: [files]}: every upper-case attribute read from the result of
    ``cuda.get_current_device()`` anywhere in the library (numba-cuda's Device.__getattr__ turns
    ``device.X`` into cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_X))."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        devices = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and _is_current_device_call(node.value)
                   for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and UPPER.fullmatch(node.attr) and (
                    _is_current_device_call(node.value) or (isinstance(node.value, ast.Name) and node.value.id in devices)):
                found.setdefault(node.attr, []).append(str(path.relative_to(PACKAGE.parent)))
    return found


@needs_numba_cuda  # CUDA's attribute names come from cuda.bindings, which numba-cuda brings
def test_every_device_attribute_the_library_asks_for_exists_in_cuda():
    asked = device_attributes_asked_for()
    assert {"MULTIPROCESSOR_COUNT", "MAX_THREADS_PER_MULTIPROCESSOR", "MAX_BLOCKS_PER_MULTIPROCESSOR",
            "COOPERATIVE_LAUNCH"} <= set(asked)
    unknown = {name: files for name, files in asked.items() if name not in CUDA_NAMES}
    assert not unknown, f"not CUDA device attributes (CU_DEVICE_ATTRIBUTE_...): {unknown}"


class FakeDevice:
    """A GPU as numba-cuda's Device shows it: it answers only CUDA's real attribute names."""

    def __init__(self, name: str, compute_capability: tuple, **attributes):
        self.name = name.encode()
        self.compute_capability = compute_capability
        self._attributes = attributes

    def __getattr__(self, attribute):
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        if CUDA_NAMES is not None and attribute not in CUDA_NAMES:
            raise AttributeError(f"CUdevice_attribute has no CU_DEVICE_ATTRIBUTE_{attribute}")
        return self._attributes[attribute]


def fake_device_like(row: dict, name: str) -> FakeDevice:
    """What the driver of a GPU with this data-sheet row reports."""
    major, minor = (int(part) for part in row["compute_capability"].split("."))
    return FakeDevice(name, (major, minor), MULTIPROCESSOR_COUNT=row["sms"],
                      MAX_THREADS_PER_MULTIPROCESSOR=row["max_threads_per_sm"],
                      MAX_BLOCKS_PER_MULTIPROCESSOR=row["max_blocks_per_sm"],
                      MAX_SHARED_MEMORY_PER_MULTIPROCESSOR=int(row["shared_kib_per_sm"] * 1024),
                      MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=int(row["shared_kib_per_block"] * 1024),
                      MAX_REGISTERS_PER_MULTIPROCESSOR=row["registers_per_sm"],
                      COOPERATIVE_LAUNCH=int(row["cooperative_launch"]), L2_CACHE_SIZE=int(row["l2_mib"] * 2**20),
                      MULTI_GPU_BOARD=0)


@pytest.fixture
def on_gpu(monkeypatch):
    """This process, as if it drove ``device``: chip() (and plan()) read the limits from it."""
    from numba import cuda

    def use(device):
        from fastlstm_lib.runtime import device as device_module

        for module in (device_module, persistent.grid):  # what chip() and plan() ask
            monkeypatch.setattr(module, "DEVICE", device_module.Device("gpu"))
        monkeypatch.setattr(cuda, "get_current_device", lambda: device)

    return use


@pytest.mark.parametrize("short, device_name", [("L4", "NVIDIA L4"), ("T4", "Tesla T4"), ("M40", "Tesla M40 24GB"),
                                                ("H100", "NVIDIA H100 80GB HBM3")])
def test_the_current_gpus_limits_are_read_from_its_driver(on_gpu, short, device_name):
    on_gpu(fake_device_like(gpus.gpu(short), device_name))
    assert gpus.chip() == dataclasses.replace(gpus.chip(short), name=device_name)


def test_an_m40_driving_this_process_gets_no_persistent_plan(on_gpu):
    on_gpu(fake_device_like(gpus.gpu("M40"), "Tesla M40 24GB"))
    assert gpus.chip().cooperative_launch is False
    with pytest.raises(persistent.PersistentLimitError, match=r"Tesla M40 24GB.*compute capability 5\.2"):
        persistent.plan(512, 64)


# ---- the table -------------------------------------------------------------------------------------

#: CUDA C++ Programming Guide, technical specifications per compute capability: resident threads,
#: resident blocks, shared memory per SM and per block (KiB), 32-bit registers per SM.
PROGRAMMING_GUIDE = {"5.2": (2048, 32, 96, 48, 65536), "7.0": (2048, 32, 96, 96, 65536),
                     "7.5": (1024, 16, 64, 64, 65536), "8.0": (2048, 32, 164, 163, 65536),
                     "8.9": (1536, 24, 100, 99, 65536), "9.0": (2048, 32, 228, 227, 65536)}


@pytest.mark.parametrize("name", gpus.known_gpus())
def test_each_rows_limits_are_its_compute_capabilitys(name):
    row = gpus.gpu(name)
    assert (row["max_threads_per_sm"], row["max_blocks_per_sm"], row["shared_kib_per_sm"], row["shared_kib_per_block"],
            row["registers_per_sm"]) == PROGRAMMING_GUIDE[row["compute_capability"]]
    # Cooperative launch, and so cuda.cg.this_grid().sync(), from compute capability 6.0.
    assert row["cooperative_launch"] is (float(row["compute_capability"]) >= 6.0)
    assert row["source"]


def test_the_l4():
    l4 = gpus.gpu("L4")
    assert (l4["compute_capability"], l4["sms"], l4["fp32_tflops"], l4["memory_gb_s"], l4["l2_mib"]) == ("8.9", 58, 30.3, 300, 48)
    limits = gpus.chip("L4")
    assert limits.cooperative_launch and limits.reserved_shared_bytes_per_block == 1024
    assert gpus.find_gpu("NVIDIA L4")["name"] == "L4"
    assert gpus.find_gpu("NVIDIA L40S") is None  # another GPU: not the L4's figures
    assert persistent.plan(512, 4, chip="L4").chip == "L4"


def test_names_match_whole_words_only():
    assert gpus.find_gpu("Tesla V100-SXM2-16GB")["name"] == "V100"
    assert gpus.find_gpu("NVIDIA H100 PCIe")["name"] == "H100 PCIe"
    assert gpus.find_gpu("NVIDIA GH200 480GB") is None  # not an H200


def test_the_csv_header_describes_every_column():
    header = "".join(line for line in gpus.CSV.read_text().splitlines(keepends=True) if line.startswith("#"))
    for column in gpus.gpu_table()[0]:
        if column not in ("name", "source"):
            assert column in header, f"the comment header of data/gpus.csv does not describe {column}"
    assert "8.9" in header and "L4" in header
