"""Exported kernels from Python: the manifest is read, and every argument is checked against
it before anything is launched (these run without a GPU; the launch itself is the device
plan's)."""

import json
import os

import pytest

import cutune


class CudaArray:
    """An object with __cuda_array_interface__ (as CuPy or Numba arrays have); never read."""

    def __init__(self, shape, typestr="<f4", strides=None, device=0, pointer=0x10000):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "strides": strides, "data": (pointer, False),
                                         "version": 3}
        self.device = device


class HostDlpack:
    def __dlpack__(self, stream=None):
        raise AssertionError("never read")

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


@pytest.fixture()
def gemm(emulated_export):
    return cutune.load(emulated_export["dir"])


def arguments():
    return dict(a=CudaArray((67, 33)), b=CudaArray((33, 45)), c=CudaArray((67, 45)))


def test_load_reads_the_manifest(gemm):
    assert gemm.names() == ["gemm_nn_67x45x33_sm_90"]
    k = gemm.only()
    assert [b["name"] for b in k.inputs] == ["A", "B"]
    assert [b["name"] for b in k.outputs] == ["C"]
    assert gemm["gemm_nn_67x45x33_sm_90"] is k
    with pytest.raises(KeyError, match="no kernel gemm_x"):
        gemm["gemm_x"]


def test_good_arguments_pass_the_checks(gemm):
    a = arguments()
    call = gemm.only().check(a["a"], a["b"], out=a["c"])
    assert sorted(call["arrays"]) == ["A", "B", "C"]
    by_name = gemm.only().check(A=a["a"], B=a["b"], out=a["c"])
    assert by_name["arrays"]["B"].pointer == a["b"].__cuda_array_interface__["data"][0]


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(a=object()), r"A: a object, not a CUDA tensor"),
    (lambda a: a.update(a=HostDlpack()), r"A: a DLPack tensor on device type 1"),
    (lambda a: a.update(b=CudaArray((33, 45), "<f2")), r"B is float16, the kernel takes float32"),
    (lambda a: a.update(b=CudaArray((33, 44))), r"B has 1452 elements .* takes 1485"),
    (lambda a: a.update(a=CudaArray((67, 33), strides=(4, 268))), r"A is not contiguous"),
    (lambda a: a.update(c=CudaArray((67, 45), device=1)), r"arguments on several GPUs"),
])
def test_a_wrong_argument_is_one_line_and_nothing_is_launched(gemm, change, message):
    a = arguments()
    change(a)
    k = gemm.only()
    with pytest.raises(cutune.UsageError, match=message) as caught:
        k(a["a"], a["b"], out=a["c"])
    assert "\n" not in str(caught.value)
    assert k._launcher is None  # the loader was never started


def test_missing_and_extra_arguments(gemm):
    a = arguments()
    k = gemm.only()
    with pytest.raises(cutune.UsageError, match="takes 2 inputs"):
        k(a["a"], a["b"], a["c"])
    with pytest.raises(cutune.UsageError, match="input B not given"):
        k(a["a"], out=a["c"])
    with pytest.raises(cutune.UsageError, match="give out="):
        k(a["a"], a["b"])  # outputs are allocated only for torch tensors
    with pytest.raises(cutune.UsageError, match="has no parameter D"):
        k(a["a"], a["b"], out=a["c"], D=a["c"])


def test_a_bad_export_folder_is_one_line(tmp_path):
    with pytest.raises(cutune.UsageError, match="no manifest.json"):
        cutune.load(tmp_path)
    (tmp_path / "manifest.json").write_text("{\"kernels\": 3}")
    with pytest.raises(cutune.UsageError, match='no "kernels" list'):
        cutune.load(tmp_path)


def test_torch_cpu_tensors_are_refused(gemm):
    torch = pytest.importorskip("torch")
    k = gemm.only()
    a, b = torch.zeros(67, 33), torch.zeros(33, 45)
    with pytest.raises(cutune.UsageError, match="A: a CPU tensor"):
        k(a, b)
    assert k._launcher is None


def test_a_dispatch_table_picks_by_m_and_checks_at_that_m(emulated_table):
    table = cutune.load(emulated_table)
    assert [(lo, hi) for lo, hi, _ in table.table] == [(1, 64)]
    k = table.pick(13)
    assert k.runtime_m and [s["name"] for s in k.scalars] == []  # M is read from A
    a, b, c = CudaArray((13, 48)), CudaArray((48, 64)), CudaArray((13, 64))
    call = k.check(a, b, out=c)
    assert call["m"] == 13 and sorted(call["arrays"]) == ["A", "B", "C"]
    with pytest.raises(cutune.UsageError, match=r"C has 768 elements .* takes 832"):
        table(a, b, out=CudaArray((12, 64)))
    with pytest.raises(cutune.UsageError, match="not a whole number of rows of 48"):
        table(CudaArray((13 * 48 + 1,)), b, out=c)
    with pytest.raises(cutune.UsageError, match=r"M = 65 is outside the dispatch table's 1..64"):
        table(CudaArray((65, 48)), b, out=CudaArray((65, 64)))
    assert k._launcher is None
