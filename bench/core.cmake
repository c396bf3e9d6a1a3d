# Core figures: the emulator's time for one GEMM configuration (see README.md section 1;
# core_figures.sh runs all of them).
add_executable(core_emulator ${CMAKE_CURRENT_LIST_DIR}/core_emulator.cc)
target_link_libraries(core_emulator PRIVATE cutune_measure fmt::fmt)
