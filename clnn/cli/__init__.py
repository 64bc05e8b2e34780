"""The ``clnn`` command line: the parser (clnn/cli/main.py) and its commands."""
