#include "src/runtime/cuda_check.h"

#include <catch2/catch.hpp>
#include <cublas_v2.h>
#include <cupti.h>

#include <string>

using cutune::CudaError;

namespace {

template <typename Status>
Status returns(Status status) {
  return status;
}

}  // namespace

TEST_CASE("NVRTC check throws with file, line, call and NVRTC's message", "[check]") {
  CHECK_NOTHROW([] { CUTUNE_NVRTC_CHECK(returns(NVRTC_SUCCESS)); }());
  try {
    CUTUNE_NVRTC_CHECK(returns(NVRTC_ERROR_INVALID_OPTION));
    FAIL("no exception");
  } catch (const CudaError& e) {
    const std::string what = e.what();
    CHECK(what.find("test_cuda_check.cc:") != std::string::npos);
    CHECK(what.find("returns(NVRTC_ERROR_INVALID_OPTION)") != std::string::npos);
    CHECK(what.find("NVRTC_ERROR_INVALID_OPTION") != std::string::npos);
    CHECK(what.find('\n') == std::string::npos);
    CHECK(e.library() == "NVRTC");
    CHECK(e.code() == static_cast<int>(NVRTC_ERROR_INVALID_OPTION));
  }
}

TEST_CASE("driver check names the status even without a driver", "[check]") {
  CHECK_NOTHROW([] { CUTUNE_CU_CHECK(returns(CUDA_SUCCESS)); }());
  try {
    CUTUNE_CU_CHECK(returns(CUDA_ERROR_OUT_OF_MEMORY));
    FAIL("no exception");
  } catch (const CudaError& e) {
    CHECK(e.library() == "CUDA driver");
    CHECK(e.code() == static_cast<int>(CUDA_ERROR_OUT_OF_MEMORY));
    const std::string what = e.what();
    CHECK(what.find("returns(CUDA_ERROR_OUT_OF_MEMORY)") != std::string::npos);
    CHECK((what.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos ||
           what.find("CUresult 2") != std::string::npos));
  }
}

TEST_CASE("cuBLAS and CUPTI checks use the libraries' own messages", "[check]") {
  CHECK_NOTHROW([] { CUTUNE_CUBLAS_CHECK(returns(CUBLAS_STATUS_SUCCESS)); }());
  CHECK_THROWS_WITH([] { CUTUNE_CUBLAS_CHECK(returns(CUBLAS_STATUS_NOT_INITIALIZED)); }(),
                    Catch::Contains("CUBLAS_STATUS_NOT_INITIALIZED"));
  CHECK_NOTHROW([] { CUTUNE_CUPTI_CHECK(returns(CUPTI_SUCCESS)); }());
  CHECK_THROWS_AS([] { CUTUNE_CUPTI_CHECK(returns(CUPTI_ERROR_INVALID_PARAMETER)); }(), CudaError);
  CHECK_THROWS_WITH([] { CUTUNE_CUPTI_CHECK(returns(CUPTI_ERROR_INVALID_PARAMETER)); }(),
                    Catch::Contains("CUPTI"));
}
