"""Numba CUDA kernels shared by the steps.

``gemm``: the matrix products (textbook tiled, and register-blocked, with transposed operands).
``pointwise``: the element-wise kernels and the fused LSTM cell; ``pointwise_backward``: their
training counterparts (notebooks 40-42); ``reduce``: the column sum (the bias gradient, notebook
41). ``persistent``: the persistent LSTM layer (notebook 09); ``persistent_plan``: how its grid is
cut for a chip. ``geometry``: block and grid sizes of the element-wise kernels, which differ on
the simulator (every simulated thread costs ~0.15 ms per launch).
"""
