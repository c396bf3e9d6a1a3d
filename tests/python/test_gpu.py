"""Exported kernels called from PyTorch on a GPU: a GEMM on wgmma (TMA tensor maps) and a
convolution match torch.matmul and conv2d, called directly, inside torch.compile and inside a
captured CUDA graph. Skipped (visibly) without PyTorch or a GPU: the device check's
`--plan python` runs them there."""

import pytest

import cutune

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU for PyTorch", allow_module_level=True)

GEMM = (256, 192, 128)  # M, N, K
CONV = (1, 64, 14, 14, 64, 3, 3, 1, 1, 1)  # N, C, H, W, K, R, S, stride, pad, dilation


def tuned(tmp_path_factory, op, shape, **params):
    folder = tmp_path_factory.mktemp(op)
    log = str(folder / "log.jsonl")
    cutune.tune(op, shape, trials=8, batch=8, log=log, **params)
    cutune.export(log, str(folder / "exported"))
    return cutune.load(str(folder / "exported")).only()


@pytest.fixture(scope="module")
def gemm(tmp_path_factory):
    return tuned(tmp_path_factory, "gemm", GEMM, dtype="fp16", layout="nt", family="wgmma")


@pytest.fixture(scope="module")
def conv(tmp_path_factory):
    return tuned(tmp_path_factory, "conv2d", CONV, dtype="fp16", layout="nhwc")


def operands():
    m, n, k = GEMM
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16)  # nt: B stored [N, K]
    return a, b, (a.float() @ b.float().t())


def test_gemm_matches_matmul(gemm):
    a, b, expected = operands()
    c = gemm(a, b)
    torch.cuda.synchronize()
    assert torch.allclose(c.reshape(expected.shape).float(), expected, rtol=1e-2, atol=1e-2)


def test_gemm_inside_torch_compile(gemm):
    op = cutune.torch.register(gemm, "test_gemm_compiled")
    a, b, expected = operands()
    f = torch.compile(lambda x, y: op(x, y) * 2 + 1, fullgraph=True)
    got = f(a, b).reshape(expected.shape).float()
    assert torch.allclose(got, expected * 2 + 1, rtol=1e-2, atol=2e-2)


def test_gemm_inside_a_cuda_graph(gemm):
    a, b, _ = operands()
    c = gemm(a, b)  # loads the module before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemm(a, b, out=c)
    a.copy_(torch.randn_like(a))
    graph.replay()
    torch.cuda.synchronize()
    expected = a.float() @ b.float().t()
    assert torch.allclose(c.reshape(expected.shape).float(), expected, rtol=1e-2, atol=1e-2)


def test_conv_matches_conv2d(conv):
    import torch.nn.functional as F
    n, c, h, w, k, r, s, stride, pad, dilation = CONV
    x = torch.randn(n, h, w, c, device="cuda", dtype=torch.float16)       # NHWC
    weight = torch.randn(r, s, c, k, device="cuda", dtype=torch.float16)  # RSCK
    y = conv(x, weight)
    torch.cuda.synchronize()
    expected = F.conv2d(x.permute(0, 3, 1, 2).float(), weight.permute(3, 2, 0, 1).float(),
                        stride=stride, padding=pad, dilation=dilation).permute(0, 2, 3, 1)
    assert torch.allclose(y.reshape(expected.shape).float(), expected, rtol=2e-2, atol=5e-2)


def test_a_wrong_dtype_is_refused_before_launch(gemm):
    a, b, _ = operands()
    with pytest.raises(cutune.UsageError, match="A is float32, the kernel takes float16"):
        gemm(a.float(), b)
