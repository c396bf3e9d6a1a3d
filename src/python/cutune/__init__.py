"""cutune from Python: tune CUDA kernels for your shapes and call the exported ones from PyTorch.

    import cutune
    cutune.ops()                                         # what can be tuned
    cutune.space("gemm", (4096, 4096, 4096), dtype="fp16")
    cutune.tune("gemm", (4096, 4096, 4096), dtype="fp16", trials=300, log="g.jsonl",
                callback=print)
    cutune.Log("g.jsonl").best()
    cutune.export("g.jsonl", "exported/")
    k = cutune.load("exported/");  c = k(a, b)           # torch tensors on the GPU
    cutune.torch.register(k, "gemm_4096")                 # torch.ops.cutune.gemm_4096

Tuning, the replay study and export run the cutune command (the same engine and messages as
the shell); bad input raises UsageError (a ValueError), a missing GPU NoDeviceError.
"""

from .api import export, ops, replay, space, tune
from .errors import (CommandError, CutuneError, MissingLibraryError, NoDeviceError,
                     UsageError)
from .kernels import Kernel, Kernels, load
from .log import Log

__all__ = ["ops", "space", "tune", "replay", "export", "Log", "load", "Kernel", "Kernels",
           "CutuneError", "UsageError", "NoDeviceError", "MissingLibraryError", "CommandError"]


def __getattr__(name):
    # cutune.torch imports PyTorch, so it is imported when first used, not with cutune.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'cutune' has no attribute '{name}'")
