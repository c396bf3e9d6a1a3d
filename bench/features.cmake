# Feature extraction speed: bench/README.md section 6.
add_executable(feature_speed ${CMAKE_CURRENT_LIST_DIR}/feature_speed.cc)
target_link_libraries(feature_speed PRIVATE cutune_cost_model cutune_kernels fmt::fmt CLI11::CLI11)
