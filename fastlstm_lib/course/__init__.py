"""The course around the LSTM: what the notebooks teach with, not what the LSTM needs to run.

``exercises`` (the learner's exercises and their grader, ``fl.check``), ``profile`` (counted
launches, traffic and lower bounds, without a GPU), ``timeline`` (the estimated timeline model),
``lesson`` (each ladder notebook's check and measurement), ``plots``, ``results``
(the ladder's committed GPU measurements and their table), ``article`` (the article's numbers), ``cpu_speed`` and ``cpu_cells``
(the CPU detour), ``kept`` (values kept between cells), ``sass`` (the compile matrix's table).
The LSTM core (``fastlstm_lib``'s own modules, ``kernels``, ``steps``, ``backward``, ``runtime``)
never imports from here.
"""
