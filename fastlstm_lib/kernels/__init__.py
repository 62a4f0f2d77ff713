"""Numba CUDA kernels shared by the optimization steps.

``gemm``: the matrix products. ``pointwise``: the element-wise kernels. ``launch``: block and
grid sizes, which differ on the simulator (every simulated thread costs ~0.15 ms per launch).
"""
