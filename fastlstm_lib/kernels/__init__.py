"""Numba CUDA kernels shared by the steps: a folder per family, a file per numbered version
(``v<N>_<name>.py``: its kernel, its launcher, its ``SPEC``, its runner ``case``), as llm.c's
``dev/cuda`` and SGEMM_CUDA lay theirs out.

Families: ``gemm/`` (the matrix products; ``v0_cublas`` the yardstick), ``pointwise/`` (the
element-wise kernels and the fused LSTM cell), ``pointwise_backward/`` (their training
counterparts, notebooks 40-42), ``reduce/`` (the column sum, notebook 41), ``persistent/`` (the
persistent LSTM layer, notebook 09). ``family`` lists a family's version files; ``catalog``:
every version file as the runner runs it; ``runner``: the one validate-then-time runner
(``python -m fastlstm_lib.kernels``, ``__main__`` its entry); ``case``: one run of a version;
``spec``: a version's facts; ``versions``: the families (``FAMILIES``) and every spec in one
tuple. Shared below them: ``geometry`` (the element-wise kernels' blocks, smaller on the
simulator), ``vector`` (64- and 128-bit global loads), ``views`` (where an array's bytes are),
``mma/`` (the tensor cores' TF32 conversion and ``mma.sync.m16n8k8``, with a simulator stand-in).
"""
