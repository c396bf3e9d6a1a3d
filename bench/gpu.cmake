# GPU runtime wiring and the export example.
# TODO: these links belong to their targets' own CMakeLists (cutune_tune compiles
# gpu_measurer.cc, which needs cutune_gpu; the cutune binary's cmd_gpu.cc needs cutune_export);
# once their owners add them, this block goes away.
if(TARGET cutune_tune)
  target_link_libraries(cutune_tune PUBLIC cutune_gpu)
endif()
if(TARGET cutune)
  target_link_libraries(cutune PRIVATE cutune_export cutune_tune)
endif()

# Runs an exported GEMM through the header-only loader and checks it against cuBLAS (GPU only).
add_executable(export_example ${CMAKE_CURRENT_LIST_DIR}/export_example.cc)
target_link_libraries(export_example PRIVATE CUDA::cuda_driver CUDA::cublas nlohmann_json::nlohmann_json)
