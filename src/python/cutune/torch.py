"""Exported kernels as PyTorch custom operators (torch.library), for torch.compile and CUDA
graphs:

    k = cutune.load("exported/")
    gemm = cutune.torch.register(k, "my_gemm")     # torch.ops.cutune.my_gemm
    c = gemm(a, b)

The operator allocates its outputs with the manifest's shapes and launches on the current
stream; its fake (meta) implementation gives those shapes without running anything, which is
what torch.compile traces with.
"""

from .errors import UsageError
from .kernels import _TORCH, Kernel, Kernels


def register(kernel, name: str, namespace: str = "cutune"):
    """Registers `kernel` (a Kernel, or Kernels holding one) as `torch.ops.<namespace>.<name>`
    and returns the operator. Its inputs are the kernel's inputs in manifest order; it returns
    the output (or a tuple of them)."""
    import torch

    k = kernel.only() if isinstance(kernel, Kernels) else kernel
    if not isinstance(k, Kernel):
        raise UsageError("cutune.torch.register takes what cutune.load returns")
    if k.scalars:
        raise UsageError(f"{k.name} has scalar parameters "
                         f"({', '.join(s['name'] for s in k.scalars)}); register takes kernels "
                         "of tensors only")
    if not name.isidentifier():
        raise UsageError(f"operator name '{name}' is not an identifier")
    outputs = [(b.get("dims") or [b["elements"]], getattr(torch, _TORCH[b["type"]][6:]))
               for b in k.outputs]
    inputs = ", ".join(f"Tensor {b['name']}" for b in k.inputs)
    returns = "Tensor" if len(outputs) == 1 else "(" + ", ".join(["Tensor"] * len(outputs)) + ")"
    qualified = f"{namespace}::{name}"
    library = torch.library.Library(namespace, "FRAGMENT")
    library.define(f"{name}({inputs}) -> {returns}")

    def allocate(like):
        return [torch.empty(shape, dtype=dtype, device=like.device) for shape, dtype in outputs]

    def run(*args):
        outs = allocate(args[0])
        k(*args, out=outs if len(outs) > 1 else outs[0])
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake(*args):
        outs = allocate(args[0])
        return outs[0] if len(outs) == 1 else tuple(outs)

    library.impl(name, run, "CUDA")
    torch.library.register_fake(qualified, fake, lib=library)
    _libraries.append(library)  # a Library unregisters its operators when collected
    return getattr(getattr(torch.ops, namespace), name)


_libraries = []
