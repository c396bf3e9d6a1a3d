# The worker's correctness check on the CPU (bench/README.md section 6; the GPU figure: section 2).
add_executable(check_cost ${CMAKE_CURRENT_LIST_DIR}/check_cost.cc)
target_link_libraries(check_cost PRIVATE cutune_measure fmt::fmt CLI11::CLI11)
