# Runs an exported GEMM through the header-only loader and checks it against cuBLAS (GPU only).
add_executable(export_example ${CMAKE_CURRENT_LIST_DIR}/export_example.cc)
target_link_libraries(export_example PRIVATE CUDA::cuda_driver CUDA::cublas nlohmann_json::nlohmann_json)
