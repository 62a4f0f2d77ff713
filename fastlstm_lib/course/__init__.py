"""The course around the LSTM: what the notebooks teach with, not what the LSTM needs to run.
The LSTM core never imports from here.
"""
