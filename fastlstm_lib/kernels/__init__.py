"""Numba CUDA kernels shared by the steps, by family, each listing its numbered versions and the
steps that launch each (the README's table: every step's kernels and launches).

``gemm/``: the matrix products, one file per version (``v0_cublas`` the yardstick, ``v1_tiled``,
``v2_blocked``, ``v3_exact``, ``v4_prefetch``, ``v5_vector``, ``v6_split``; ``family`` lists a
family's version files); ``vector``: the 64- and 128-bit global loads of version 5.
``pointwise``: the element-wise kernels and the fused LSTM cell; ``pointwise_backward``: their
training counterparts (notebooks 40-42); ``reduce``: the column sum (the bias gradient, notebook
41). ``persistent``: the persistent LSTM layer and its shared-memory layout (notebook 09);
``persistent_plan``: how its grid is cut for a chip (host code). ``geometry``: block and grid
sizes of the element-wise kernels, which differ on the simulator (every simulated thread costs
~0.15 ms per launch). ``catalog``: every version runnable on its own against float64 NumPy (``case``: one run), which
``python -m fastlstm_lib.kernels`` validates (and, on a GPU, times). ``spec``: a version's facts,
which each family file writes at its end (``SPECS``: the steps that launch it, what it reads and
writes, its FLOP and byte formula, its compiled forms; the persistent kernel's in
``persistent_plan``); ``versions``: every spec in one tuple; ``views``: where an array's bytes are.
"""
