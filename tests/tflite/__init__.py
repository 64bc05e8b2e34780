"""Tests of the TFLite importer (clnn/tflite/) and the real models it runs."""
