"""The programs around the OpenCL device: the ``clnn`` command line and what it runs."""
