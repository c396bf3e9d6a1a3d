# Core figures: the emulator's time for one GEMM configuration (see README.md section 6;
# core_figures.sh runs all of them).
add_executable(core_emulator ${CMAKE_CURRENT_LIST_DIR}/core_emulator.cc)
target_link_libraries(core_emulator PRIVATE cutune_measure fmt::fmt CLI11::CLI11)

# The emulator's sanitizer against the plain emulator (README.md section 6).
add_executable(sanitizer_cost ${CMAKE_CURRENT_LIST_DIR}/sanitizer_cost.cc)
target_link_libraries(sanitizer_cost PRIVATE cutune_measure fmt::fmt nlohmann_json::nlohmann_json
  CLI11::CLI11)
