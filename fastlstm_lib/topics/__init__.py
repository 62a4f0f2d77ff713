"""The Keras side topics: channels_first vs channels_last CNNs (``cnn``, notebooks 20-21), how
Keras feeds data (``feeding``, notebooks 30-31) and the LSTM as a Keras layer (``keras_layer``,
notebook 42). Each is imported on its own; nothing here imports ``course``.
"""
