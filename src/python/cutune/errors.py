"""The exceptions of cutune's Python package: the command's one-line messages, typed.

The command exits 2 for bad input (an unknown operator, a bad shape or flag, a malformed file)
and 1 when the GPU or a CUDA library is missing; Python raises the matching type below with
the same message the command line prints.
"""


class CutuneError(Exception):
    """Anything cutune refuses or fails to do."""


class UsageError(CutuneError, ValueError):
    """Bad input: what the command line answers with exit code 2."""


class NoDeviceError(CutuneError, RuntimeError):
    """No CUDA device (or no driver) where one is needed."""


class MissingLibraryError(CutuneError, RuntimeError):
    """A CUDA library (NVRTC, CUPTI, cuBLAS, cuDNN) could not be loaded."""


class CommandError(CutuneError, RuntimeError):
    """The command failed in another way (an internal error, a crash)."""
