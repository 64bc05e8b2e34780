"""Real models for tests and benchmarks, fetched into clnn's cache directory: the MediaPipe
.tflite set, the int8 .tflite set and the ONNX set (``clnn models fetch``)."""
