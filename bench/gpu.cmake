# GPU runtime pieces of the cutune binary and the export example.
# TODO: the cutune target belongs to src/cli/CMakeLists.txt; its owner should link cutune_export
# and cutune_gpu_measurer there, and this block goes away.
if(TARGET cutune)
  target_link_libraries(cutune PRIVATE cutune_export cutune_gpu_measurer)
endif()

# Runs an exported GEMM through the header-only loader and checks it against cuBLAS (GPU only).
add_executable(export_example ${CMAKE_CURRENT_LIST_DIR}/export_example.cc)
target_link_libraries(export_example PRIVATE CUDA::cuda_driver CUDA::cublas nlohmann_json::nlohmann_json)
