// The CPU-side pieces of GPU measurement: statistics, stopping, checking, cuBLAS argument
// mapping, fault classification, throttling, the worker's task for a template.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/template.h"
#include "src/baselines/cublas_gemm.h"
#include "src/runtime/driver_api.h"
#include "src/measure/gpu_timer.h"
#include "src/measure/l2_flush.h"
#include "src/measure/nvml_api.h"
#include "src/measure/correctness.h"
#include "src/measure/worker_gpu.h"
#include "src/measure/gpu_measurer.h"

using namespace cutune;

TEST_CASE("median and its order-statistic confidence interval", "[timing]") {
  const MedianCi one = median_ci({5.0});
  CHECK(one.median == 5.0);
  CHECK(std::isinf(one.rel_half_width));
  std::vector<double> flat(100, 2.0);
  const MedianCi f = median_ci(flat);
  CHECK(f.median == 2.0);
  CHECK(f.rel_half_width == 0.0);
  std::vector<double> ramp;
  for (int i = 1; i <= 100; ++i) ramp.push_back(100.0 + i * 0.01);  // 100.01 .. 101.00
  const MedianCi r = median_ci(ramp);
  CHECK(r.median == Approx(100.505));
  CHECK(r.lo < r.median);
  CHECK(r.hi > r.median);
  CHECK(r.rel_half_width == Approx((r.hi - r.lo) / 2 / r.median));
  CHECK(r.rel_half_width < 0.001);  // ~ +-10 ranks of 0.01 around 100
}

TEST_CASE("stopping on stability or caps or early", "[timing]") {
  TimingOptions o;
  o.min_repeats = 5;
  o.max_repeats = 50;
  o.min_seconds = 0;
  o.max_seconds = 1.0;
  o.target_rel_ci = 0.01;
  o.early_stop_factor = 3;
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(should_stop({1e-3, 1e-3}, 0.0, o, inf) == StopReason::none);
  CHECK(should_stop(std::vector<double>(5, 1e-3), 0.0, o, inf) == StopReason::stable);
  std::vector<double> noisy;
  for (int i = 0; i < 10; ++i) noisy.push_back(i % 2 ? 1e-3 : 2e-3);
  CHECK(should_stop(noisy, 0.0, o, inf) == StopReason::none);
  CHECK(should_stop(noisy, 1.5, o, inf) == StopReason::max_time);
  std::vector<double> many;
  for (int i = 0; i < 50; ++i) many.push_back(i % 2 ? 1e-3 : 2e-3);
  CHECK(should_stop(many, 0.0, o, inf) == StopReason::max_repeats);
  CHECK(should_stop(std::vector<double>(5, 1e-2), 0.0, o, 1e-3) == StopReason::early_stop);
  CHECK(should_stop(std::vector<double>(5, 2e-3), 0.0, o, 1e-3) == StopReason::stable);
  o.min_seconds = 1.0;  // not enough kernel time summed yet
  CHECK(should_stop(std::vector<double>(5, 1e-3), 0.0, o, inf) == StopReason::none);
}

TEST_CASE("inputs are reproducible and in range and differ per tensor", "[check]") {
  const std::vector<float> a = fill_input(1, 0, 1000), b = fill_input(1, 0, 1000);
  const std::vector<float> c = fill_input(1, 1, 1000), d = fill_input(2, 0, 1000);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != d);
  double sum = 0;
  for (float x : a) {
    CHECK(x >= -1.0f);
    CHECK(x < 1.0f);
    sum += x;
  }
  CHECK(std::abs(sum / 1000) < 0.1);
  CHECK(a[0] == fill_input(1, 0, 1)[0]);
}

TEST_CASE("tolerance grows with the reduction and the dtype", "[check]") {
  CHECK(error_tolerance("float32", 4096) > error_tolerance("float32", 64));
  CHECK(error_tolerance("float16", 64) > error_tolerance("float32", 64));
  CHECK(error_tolerance("float32", 4096) < 1e-3);
  CHECK(error_tolerance("float32", 1) > 0);
  CHECK_THROWS_AS(error_tolerance("int8", 4), std::invalid_argument);
}

TEST_CASE("comparison catches wrong values and NaN or Inf but tolerates rounding", "[check]") {
  std::vector<float> expected = {1.0f, -2.0f, 3.0f, 0.0f};
  std::vector<float> close = {1.0f + 1e-6f, -2.0f, 3.0f, 1e-7f};
  const double tol = error_tolerance("float32", 64);
  CHECK(compare_outputs(close.data(), expected.data(), 4).ok(tol));
  std::vector<float> wrong = {1.0f, -2.0f, 3.5f, 0.0f};
  const CompareResult w = compare_outputs(wrong.data(), expected.data(), 4);
  CHECK_FALSE(w.ok(tol));
  CHECK(w.worst_index == 2);
  CHECK_THAT(w.describe(tol), Catch::Contains("[2]"));
  std::vector<float> nan = {1.0f, std::nanf(""), 3.0f, INFINITY};
  const CompareResult n = compare_outputs(nan.data(), expected.data(), 4);
  CHECK(n.nonfinite == 2);
  CHECK(n.worst_index == 1);
  CHECK_FALSE(n.ok(1e9));
  CHECK_THAT(n.describe(tol), Catch::Contains("NaN/Inf"));
}

TEST_CASE("the threaded comparison of stored outputs gives exactly the serial answer", "[check]") {
  // 1.5M elements: six chunks of 256Ki and a short one; errors planted across chunk borders.
  const int64_t n = 1536 * 1024 + 77;
  const std::vector<float> expected = fill_input(9, 0, n);
  const double scale = compare_scale(expected.data(), n);
  for (const std::string dtype : {"float32", "float16", "bfloat16"}) {
    const std::vector<float> stored = input_values(9, 0, n, dtype);  // rounding errors only
    auto check_all = [&](std::vector<float> actual, const char* what) {
      const std::vector<char> bytes = encode_values(actual, dtype);
      const std::vector<float> seen = decode_values(bytes.data(), n, dtype);
      const CompareResult serial = compare_outputs(seen.data(), expected.data(), n);
      for (int threads : {1, 2, 7, 16}) {
        INFO(dtype << " " << what << " threads " << threads);
        const CompareResult c =
            compare_stored(bytes.data(), dtype, expected.data(), n, scale, threads);
        CHECK(c.max_rel_error == serial.max_rel_error);
        CHECK(c.nonfinite == serial.nonfinite);
        CHECK(c.worst_index == serial.worst_index);
        CHECK(c.worst_actual == serial.worst_actual);
        CHECK(c.worst_expected == serial.worst_expected);
      }
      return serial;
    };
    check_all(stored, "rounding only");
    // The same largest error at two places in different chunks: the first one is reported.
    std::vector<float> tie = stored;
    for (int64_t at : {int64_t(300000), int64_t(1200000)}) tie[size_t(at)] = expected[size_t(at)] + 0.5f;
    const CompareResult t = check_all(tie, "tie");
    if (dtype == "float32") CHECK(t.worst_index == 300000);
    // A larger error later wins; a non-finite value anywhere wins over both, the first one.
    std::vector<float> bad = tie;
    bad[size_t(n - 5)] = expected[size_t(n - 5)] + 4.0f;
    CHECK(check_all(bad, "larger later").worst_index == n - 5);
    bad[size_t(1000000)] = std::nanf("");
    bad[size_t(700000)] = INFINITY;
    const CompareResult nf = check_all(bad, "non-finite");
    CHECK(nf.nonfinite == 2);
    CHECK(nf.worst_index == 700000);
  }
  // Small outputs take the serial path and agree too.
  const std::vector<float> e = {1.0f, -2.0f, 3.0f, 0.0f}, a = {1.0f, -2.0f, 3.5f, 0.0f};
  const std::vector<char> b = encode_values(a, "float32");
  CHECK(compare_stored(b.data(), "float32", e.data(), 4, compare_scale(e.data(), 4), 16)
            .worst_index == 2);
}

TEST_CASE("row-major GEMM maps onto column-major cublasSgemm", "[cublas]") {
  const SgemmCall nn = sgemm_call({127, 4096, 255, false});
  CHECK_FALSE(nn.trans_a);
  CHECK(nn.m == 4096);  // cuBLAS computes Cᵀ (N x M)
  CHECK(nn.n == 127);
  CHECK(nn.k == 255);
  CHECK(nn.lda == 4096);  // B [K,N] row-major
  CHECK(nn.ldb == 255);   // A [M,K] row-major
  CHECK(nn.ldc == 4096);
  const SgemmCall nt = sgemm_call({127, 4096, 255, true});
  CHECK(nt.trans_a);
  CHECK(nt.lda == 255);  // B [N,K] row-major
}

TEST_CASE("cuBLASLt's layouts compute the row-major product, and it loads without a GPU",
          "[cublas]") {
  // A tall and a wide product, B [K,N] and [N,K].
  for (const SgemmShape& shape : {SgemmShape{127, 4096, 255, false},
                                  SgemmShape{4096, 8, 1000, true}, SgemmShape{64, 64, 8, false}}) {
    INFO(shape.m << "x" << shape.n << "x" << shape.k << (shape.b_transposed ? " nt" : " nn"));
    const CublasLtLayouts l = cublaslt_layouts(shape);
    CHECK(l.trans_first == shape.b_transposed);
    // Column-major: each leading dimension holds a column's rows.
    for (const LtLayout& m : {l.first, l.second, l.result}) CHECK(m.ld >= int64_t(m.rows));
    // Cᵀ [N x M] = op(B) [N x K] · Aᵀ [K x M], with B stored as it is in row-major memory.
    const uint64_t op_rows = l.trans_first ? l.first.cols : l.first.rows;
    const uint64_t op_cols = l.trans_first ? l.first.rows : l.first.cols;
    CHECK(op_rows == uint64_t(shape.n));
    CHECK(op_cols == uint64_t(shape.k));
    CHECK(l.first.ld == (shape.b_transposed ? shape.k : shape.n));
    CHECK((l.second.rows == uint64_t(shape.k) && l.second.cols == uint64_t(shape.m)));
    CHECK(l.second.ld == shape.k);
    CHECK((l.result.rows == uint64_t(shape.n) && l.result.cols == uint64_t(shape.m)));
    CHECK(l.result.ld == shape.n);
    // cuBLASLt creates the descriptors without a GPU (it checks the layouts only when it
    // plans the product, which needs one: test_gpu_measure).
    if (cublaslt_unavailable_reason().empty()) {
      CHECK_NOTHROW(cublaslt_descriptor_check(shape, GemmStorage::float16, GemmStorage::float32));
      CHECK_NOTHROW(cublaslt_descriptor_check(shape, GemmStorage::bfloat16, GemmStorage::bfloat16));
    }
  }
  if (!cublaslt_unavailable_reason().empty())
    WARN("descriptors not created: cuBLASLt unavailable: " << cublaslt_unavailable_reason());
}

TEST_CASE("sticky CUDA errors poison the context but refused launches do not", "[fault]") {
  CHECK(classify_cuda_error(CUDA_ERROR_ILLEGAL_ADDRESS, false).poisoned);
  CHECK(classify_cuda_error(CUDA_ERROR_LAUNCH_FAILED, false).status ==
        MeasureStatus::runtime_error);
  CHECK(classify_cuda_error(CUDA_ERROR_ILLEGAL_ADDRESS, true).status ==
        MeasureStatus::runtime_error);
  const CudaFault refused = classify_cuda_error(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, true);
  CHECK(refused.status == MeasureStatus::launch_error);
  CHECK_FALSE(refused.poisoned);
  CHECK(classify_cuda_error(CUDA_ERROR_INVALID_VALUE, true).status == MeasureStatus::launch_error);
}

TEST_CASE("throttle reasons and flush size", "[nvml]") {
  CHECK_FALSE(is_throttling(0));
  CHECK_FALSE(is_throttling(0x1));  // idle
  CHECK_FALSE(is_throttling(0x2));  // application clocks
  CHECK(is_throttling(0x4));        // software power cap
  CHECK(is_throttling(0x40));       // hardware thermal
  CHECK(l2_flush_bytes(60 << 20) == size_t(120) << 20);
  CHECK(l2_flush_bytes(0) == size_t(8) << 20);
  CHECK(l2_flush_bytes(1000001) % 4 == 0);
  const GpuSample s = sample_gpu("0000:00:00.0");  // no NVML here: unavailable, not a crash
  if (!s.available) CHECK_FALSE(s.error.empty());
}

TEST_CASE("the worker task for GEMM asks cuBLAS and others carry the CPU reference", "[measurer]") {
  auto gemm = make_template("gemm", {64, 32, 16}, "gemm_nt");
  std::vector<char> expected;
  GpuMeasureOptions o;
  o.seed = 3;
  o.flush_l2 = false;
  const WorkerTask t = worker_task(*gemm, o, &expected);
  CHECK(t.reference == ReferenceKind::baseline);
  CHECK(expected.empty());
  REQUIRE(t.baseline.kind == BaselineSpec::Kind::gemm);
  const GemmBaseline& g = t.baseline.gemm;
  CHECK(g.m == 64);
  CHECK(g.b_transposed);
  CHECK(t.arguments.at(size_t(g.c)).name == "C");
  CHECK(t.arguments.at(size_t(g.a)).name == "A");
  CHECK(t.arguments.at(size_t(g.b)).name == "B");
  CHECK_FALSE(t.timing.flush_l2);
  // C's tolerance is the rule's for a 16-long fp32 reduction.
  CHECK(t.arguments.at(size_t(g.c)).tolerance == error_tolerance("float32", 16));

  const WorkerTask h = worker_task(*gemm, o, &expected, /*allow_baseline=*/false);
  CHECK(h.reference == ReferenceKind::host);
  REQUIRE(expected.size() == 64 * 32 * sizeof(float));
  // C[0][0] = sum_k A[0][k] * B[0][k] (nt) on the fixed-seed inputs.
  const std::vector<float> a = fill_input(3, 1, 64 * 16), b = fill_input(3, 2, 32 * 16);
  double c00 = 0;
  for (int k = 0; k < 16; ++k) c00 += double(a[size_t(k)]) * b[size_t(k)];
  float got;
  std::memcpy(&got, expected.data(), sizeof got);
  CHECK(got == Approx(c00).epsilon(1e-5));
}

TEST_CASE("without a driver the GPU measurer says so", "[measurer]") {
  auto gemm = make_template("gemm", {64, 64, 64});
  if (driver_api() != nullptr) return;  // this machine has a GPU; the gpu tests cover it
  CHECK_THROWS_WITH(make_gpu_measurer(*gemm, {}), Catch::StartsWith("no CUDA device found"));
}
