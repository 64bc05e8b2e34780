"""clnn's HAL: NN HAL 1.3 types (plus BATCH_MATMUL), validation, interfaces, reference device."""

__version__ = "0.1.0"
