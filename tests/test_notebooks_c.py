"""Library parts added for notebooks 08, 09 and 11: the residency limits behind occupancy (09)."""

import itertools

import pytest

from fastlstm_lib.gpus import chip, known_gpus, occupancy, residency_limits
from fastlstm_lib.kernels.persistent import MAX_REGISTERS


def test_the_four_limits_of_an_h100_block():
    # 256 threads x 128 registers = 32768 of 65536; 2048 / 256 threads; 233472 // (164160 + 1024 reserved).
    limits = residency_limits(chip("H100"), 256, 164160, MAX_REGISTERS)
    assert limits == {"blocks": 32, "threads": 8, "registers": 2, "shared memory": 1}
    assert occupancy(chip("H100"), 256, 164160, MAX_REGISTERS) == (1, "shared memory")


def test_registers_are_allocated_per_warp_in_units_of_256():
    # 33 threads are 2 warps; 129 registers x 32 = 4128 -> 4352 per warp: 65536 // 8704 = 7.
    assert residency_limits(chip("M40"), 33, 0, 129)["registers"] == 7


def test_no_shared_memory_reservation_before_compute_capability_8():
    assert residency_limits(chip("M40"), 32, 49152, 32)["shared memory"] == 2  # 96 KiB / 48 KiB
    assert residency_limits(chip("A100"), 32, 49152, 32)["shared memory"] == 3  # 164 KiB / (48 + 1) KiB


def test_a_block_beyond_the_per_block_maximum_cannot_be_resident():
    limits = residency_limits(chip("M40"), 32, 49153, 32)
    assert limits["shared memory"] == 0
    assert occupancy(chip("M40"), 32, 49153, 32) == (0, "shared memory")


@pytest.mark.parametrize("name", known_gpus())
def test_occupancy_is_the_smallest_limit(name):
    limits_of = chip(name)
    for threads, shared, registers in itertools.product((32, 100, 256, 1024), (0, 10_000, 60_000), (32, 128, 255)):
        limits = residency_limits(limits_of, threads, shared, registers)
        blocks, binding = occupancy(limits_of, threads, shared, registers)
        assert blocks == min(limits.values()) and limits[binding] == blocks


@pytest.mark.parametrize("args, error", [
    (("H100", 32, 0, 32), TypeError),
    ((None, 0, 0, 32), ValueError),
    ((None, 32, -1, 32), ValueError),
    ((None, 32, 0, 0), ValueError),
    ((None, 32.0, 0, 32), ValueError),
    ((None, True, 0, 32), ValueError),
])
def test_bad_arguments(args, error):
    args = (chip("H100"),) + args[1:] if args[0] is None else args
    with pytest.raises(error):
        residency_limits(*args)
