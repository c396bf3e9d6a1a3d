"""Exported kernels (`cutune export`) as Python callables.

    k = cutune.load("exported/")          # one callable per task of the manifest
    c = k(a, b)                            # torch tensors on a GPU; or k(a, b, out=c)

A call checks every argument against the manifest before anything reaches the GPU (a CUDA
tensor or an object with __cuda_array_interface__ or DLPack, on one device, of the parameter's
element type, element count and shape, contiguous), with one clear line for the first that is
wrong; then the native loader (cutune._loader, over src/export/cubin_loader.h) encodes the
tensor maps, zeroes the outputs that need it and launches on the current stream.
"""

import json
import os
from typing import Optional

from .errors import NoDeviceError, UsageError

# Manifest element types and the names they go by in torch and __cuda_array_interface__.
_TORCH = {"float32": "torch.float32", "float16": "torch.float16", "bfloat16": "torch.bfloat16",
          "int32": "torch.int32", "int64": "torch.int64"}
_TYPESTR = {"float32": "f4", "float16": "f2", "int32": "i4", "int64": "i8"}
_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8, "uint32": 4}


class _Array:
    """What a call needs of one argument: device, element type, shape, contiguity, address."""

    def __init__(self, device: int, dtype: Optional[str], shape: tuple, contiguous: bool,
                 pointer: int, torch_tensor=None):
        self.device, self.dtype, self.shape = device, dtype, shape
        self.contiguous, self.pointer, self.torch_tensor = contiguous, pointer, torch_tensor


def _torch_dtype_name(t) -> Optional[str]:
    text = str(t.dtype)
    return next((name for name, torch_name in _TORCH.items() if torch_name == text), None)


def _array(name: str, value) -> _Array:
    """The argument `value` for parameter `name`, or a UsageError saying why it cannot be."""
    if type(value).__module__.startswith("torch") and hasattr(value, "is_cuda"):
        if not value.is_cuda:
            raise UsageError(f"{name}: a CPU tensor; exported kernels take CUDA tensors "
                             f"(move it with .cuda())")
        return _Array(value.device.index, _torch_dtype_name(value) or str(value.dtype),
                      tuple(value.shape), value.is_contiguous(), value.data_ptr(), value)
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        typestr = cai["typestr"]
        dtype = next((n for n, s in _TYPESTR.items() if typestr[1:] == s), typestr)
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 0
        strides = cai.get("strides")
        contiguous = strides is None or tuple(strides) == _row_major_strides(shape, itemsize)
        pointer = cai["data"][0]
        device = _pointer_device(value, cai)
        return _Array(device, dtype, shape, contiguous, pointer)
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        device_type, _ = value.__dlpack_device__()
        if int(device_type) != 2:  # kDLCUDA
            raise UsageError(f"{name}: a DLPack tensor on device type {int(device_type)}, not "
                             "on a CUDA GPU")
        try:
            import torch.utils.dlpack
        except ImportError:
            raise UsageError(f"{name}: DLPack tensors are read through PyTorch, which is not "
                             "installed; pass an object with __cuda_array_interface__") from None
        return _array(name, torch.utils.dlpack.from_dlpack(value))
    raise UsageError(f"{name}: a {type(value).__name__}, not a CUDA tensor (torch, or an object "
                     "with __cuda_array_interface__ or DLPack)")


def _row_major_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _pointer_device(value, cai) -> int:
    # __cuda_array_interface__ carries no device; CuPy and Numba arrays say it as .device.
    device = getattr(value, "device", None)
    for attr in ("id", "index"):
        if device is not None and isinstance(getattr(device, attr, None), int):
            return getattr(device, attr)
    return device if isinstance(device, int) else 0


class Kernel:
    """One exported kernel: call it with its inputs, in manifest order or by name."""

    def __init__(self, directory: str, entry: dict):
        self.directory, self.entry = directory, entry
        self.name = entry["name"]
        self.params = entry["params"]
        # Tensor maps address a buffer that is also a parameter or is named by the map alone.
        self.buffers = [p for p in self.params if p.get("pointer") and "tensor_map" not in p]
        for p in self.params:
            if "tensor_map" in p and not any(b["name"] == p["tensor_map"]["buffer"]
                                             for b in self.buffers):
                self.buffers.append({"name": p["tensor_map"]["buffer"],
                                     "type": p["tensor_map"]["dtype"], "const": True,
                                     "elements": _map_elements(p["tensor_map"]), "pointer": True})
        self.outputs = [b for b in self.buffers if not b.get("const")]
        self.inputs = [b for b in self.buffers if b.get("const")]
        # A kernel of run-time M (a dispatch table's): its scalar "M" is the rows of A and C,
        # which the call reads from A; the buffers that follow M hold m_row_elements a row.
        self.runtime_m = entry.get("runtime_m") is not None
        self.scalars = [p for p in self.params if not p.get("pointer")
                        and not (self.runtime_m and p["name"] == "M")]
        self._launcher = None

    def __repr__(self):
        names = ", ".join(b["name"] for b in self.inputs)
        return f"<cutune kernel {self.name}({names}) -> {', '.join(b['name'] for b in self.outputs)}>"

    def rows_m(self, *inputs, **named) -> int:
        """A run-time-M kernel's M, from the first input that follows M (A: M x K)."""
        given = {b["name"]: v for b, v in zip(self.inputs, inputs)}
        given.update({k: v for k, v in named.items() if k not in ("out", "stream")})
        for b in self.inputs:
            if b.get("m_row_elements") and b["name"] in given:
                a = _array(b["name"], given[b["name"]])
                elements = 1
                for extent in a.shape:
                    elements *= extent
                per_row = b["m_row_elements"]
                if elements == 0 or elements % per_row:
                    raise UsageError(f"{self.name}: {b['name']} has {elements} elements, not a "
                                     f"whole number of rows of {per_row}")
                return elements // per_row
        raise UsageError(f"{self.name}: M is read from an input that follows it "
                         f"({', '.join(b['name'] for b in self.inputs if b.get('m_row_elements'))})")

    def check(self, *inputs, out=None, outputs_required=True, m=None, **named) -> dict:
        """The arguments of a call by parameter name, checked; UsageError for the first wrong.
        Without outputs_required, missing outputs are left out (the call allocates them).
        A run-time-M kernel checks its buffers at M = m (default: A's rows)."""
        if self.runtime_m and m is None:
            m = self.rows_m(*inputs, **named)
        if len(inputs) > len(self.inputs):
            raise UsageError(f"{self.name} takes {len(self.inputs)} inputs "
                             f"({', '.join(b['name'] for b in self.inputs)}), got {len(inputs)}")
        given = {b["name"]: v for b, v in zip(self.inputs, inputs)}
        scalars = {}
        for key, value in named.items():
            if any(s["name"] == key for s in self.scalars):
                scalars[key] = value
            elif any(b["name"] == key for b in self.buffers):
                if key in given:
                    raise UsageError(f"{self.name}: {key} given twice")
                given[key] = value
            else:
                raise UsageError(f"{self.name} has no parameter {key} (parameters: "
                                 f"{', '.join(p['name'] for p in self.buffers + self.scalars)})")
        if out is not None:
            outs = out if isinstance(out, (list, tuple)) else [out]
            if len(outs) != len(self.outputs):
                raise UsageError(f"{self.name} has {len(self.outputs)} outputs, out= gives "
                                 f"{len(outs)}")
            given.update({b["name"]: v for b, v in zip(self.outputs, outs)})
        for p in self.scalars:
            if p["name"] not in scalars:
                raise UsageError(f"{self.name}: scalar parameter {p['name']} not given")
        arrays = {}
        for b in self.buffers:
            if b["name"] not in given and not b.get("const") and not outputs_required:
                continue
            if b["name"] not in given:
                raise UsageError(f"{self.name}: {'output' if not b.get('const') else 'input'} "
                                 f"{b['name']} not given")
            arrays[b["name"]] = self._checked(_at_m(b, m), _array(b["name"], given[b["name"]]))
        devices = {a.device for a in arrays.values()}
        if len(devices) > 1:
            raise UsageError(f"{self.name}: arguments on several GPUs ({sorted(devices)})")
        return {"arrays": arrays, "scalars": scalars, "m": m}

    def _checked(self, param: dict, a: _Array) -> _Array:
        name, want = param["name"], param["type"]
        if a.dtype != want:
            raise UsageError(f"{self.name}: {name} is {a.dtype}, the kernel takes {want}")
        dims = param.get("dims")
        if dims is not None and tuple(a.shape) != tuple(dims):
            raise UsageError(f"{self.name}: {name} has shape {list(a.shape)}, the kernel takes "
                             f"{list(dims)}")
        elements = 1
        for extent in a.shape:
            elements *= extent
        if elements != param["elements"]:
            raise UsageError(f"{self.name}: {name} has {elements} elements (shape "
                             f"{list(a.shape)}), the kernel takes {param['elements']}")
        if not a.contiguous:
            raise UsageError(f"{self.name}: {name} is not contiguous (call .contiguous())")
        return a

    def __call__(self, *inputs, out=None, stream=None, **named):
        """Checks the arguments, then launches; returns the output(s). Without out=, the
        outputs are allocated (torch tensors: needs PyTorch and torch inputs)."""
        if out is None and self.outputs:
            first = self.check(*inputs, outputs_required=False, **named)  # the inputs first
            allocated = self._allocate(inputs, named, first["m"])
            out = allocated if len(allocated) > 1 else allocated[0]
        call = self.check(*inputs, out=out, **named)
        arrays = call["arrays"]
        device = next(iter(arrays.values())).device if arrays else 0
        self._launch(device, arrays, call["scalars"], stream, call["m"])
        return out

    def _allocate(self, inputs, named, m=None):
        first = next((v for v in list(inputs) + list(named.values())
                      if type(v).__module__.startswith("torch")), None)
        if first is None:
            raise UsageError(f"{self.name}: give out= (outputs are allocated only for torch "
                             "inputs)")
        import torch
        outs = []
        for b in self.outputs:
            b = _at_m(b, m)
            shape = b.get("dims") or [b["elements"]]
            outs.append(torch.empty(shape, dtype=getattr(torch, _TORCH[b["type"]][6:]),
                                    device=first.device))
        return outs

    def _launch(self, device: int, arrays: dict, scalars: dict, stream, m=None):
        if stream is None:
            stream = _current_stream(arrays, device)
        if self._launcher is None:
            try:
                from . import _loader
            except ImportError as e:
                raise NoDeviceError(f"the kernel loader cannot start ({e}); launching needs the "
                                    "CUDA driver") from None
            self._launcher = _loader.Launcher(self.directory, self.name)
        self._launcher.launch(device, {n: a.pointer for n, a in arrays.items()},
                              dict(scalars), int(stream), int(m or 0))


def _at_m(param: dict, m: Optional[int]) -> dict:
    """`param` of a run-time-M kernel at M = m: a buffer that follows M holds m rows."""
    per_row = param.get("m_row_elements")
    if m is None or not per_row:
        return param
    param = dict(param, elements=m * per_row)
    if param.get("dims"):
        param["dims"] = [m] + list(param["dims"][1:])
    return param


def _map_elements(m: dict) -> int:
    rows = m["dims"][1]
    return rows * m["row_stride_bytes"] // _ITEMSIZE.get(m["dtype"], 1)


def _current_stream(arrays: dict, device: int) -> int:
    """PyTorch's current stream of `device` where the arguments are torch tensors; else 0."""
    if any(a.torch_tensor is not None for a in arrays.values()):
        import torch
        return torch.cuda.current_stream(device).cuda_stream
    return 0


class Kernels:
    """The kernels of an export folder, by name; callable itself when it holds one."""

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        path = os.path.join(self.directory, "manifest.json")
        try:
            with open(path, encoding="utf-8") as f:
                manifest = json.load(f)
        except FileNotFoundError:
            raise UsageError(f"no manifest.json in {self.directory} (write one with "
                             "cutune export LOG --out DIR)") from None
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: not JSON ({e.msg} at line {e.lineno})") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("kernels"), list):
            raise UsageError(f"{path}: no \"kernels\" list")
        try:
            self._kernels = {e["name"]: Kernel(self.directory, e) for e in manifest["kernels"]}
            # A dispatch table (cutune export --table): M intervals, each a kernel of run-time M.
            self.table = [(int(r["m_lo"]), int(r["m_hi"]), r["kernel"])
                          for r in manifest.get("dispatch", {}).get("table", [])]
        except (KeyError, TypeError, ValueError) as e:
            raise UsageError(f"{path}: a kernel or dispatch entry lacks {e}") from None
        for lo, hi, name in self.table:
            if name not in self._kernels or not self._kernels[name].runtime_m:
                raise UsageError(f"{path}: the dispatch table names {name}, which is not a "
                                 "kernel of run-time M in it")

    def __len__(self):
        return len(self._kernels)

    def __iter__(self):
        return iter(self._kernels.values())

    def __getitem__(self, name: str) -> Kernel:
        if name not in self._kernels:
            raise KeyError(f"no kernel {name} in {self.directory} (kernels: "
                           f"{', '.join(self._kernels)})")
        return self._kernels[name]

    def names(self) -> list:
        return list(self._kernels)

    def pick(self, m: int) -> Kernel:
        """The dispatch table's kernel for M = m."""
        for lo, hi, name in self.table:
            if lo <= m <= hi:
                return self._kernels[name]
        if not self.table:
            raise UsageError(f"{self.directory} has no dispatch table")
        raise UsageError(f"M = {m} is outside the dispatch table's {self.table[0][0]}.."
                         f"{self.table[-1][1]}")

    def only(self) -> Kernel:
        if len(self._kernels) != 1:
            raise UsageError(f"{self.directory} holds {len(self._kernels)} kernels "
                             f"({', '.join(self._kernels)}): pick one by name")
        return next(iter(self._kernels.values()))

    def __call__(self, *args, **kwargs):
        """The one kernel's call; with a dispatch table, the kernel of A's M."""
        if self.table:
            m = self._kernels[self.table[0][2]].rows_m(*args, **kwargs)
            return self.pick(m)(*args, **kwargs)
        return self.only()(*args, **kwargs)


def load(directory) -> Kernels:
    """The kernels of a `cutune export` folder (reads manifest.json; loads cubins on first call)."""
    return Kernels(directory)
