# The tuning engine's benchmarks: search efficiency on replayed caches, and one model round.
add_executable(replay_efficiency ${CMAKE_CURRENT_LIST_DIR}/replay_efficiency.cc)
target_link_libraries(replay_efficiency PRIVATE cutune_tune fmt::fmt CLI11::CLI11)
target_compile_definitions(replay_efficiency PRIVATE CUTUNE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")

add_executable(tune_round ${CMAKE_CURRENT_LIST_DIR}/tune_round.cc)
target_link_libraries(tune_round PRIVATE cutune_tune cutune_kernels fmt::fmt Threads::Threads
  CLI11::CLI11)
target_compile_definitions(tune_round PRIVATE CUTUNE_SOURCE_DIR="${CMAKE_SOURCE_DIR}")


# The analytical prior's order on a timed sample (bench/prior_study.cc).
add_executable(prior_study ${CMAKE_CURRENT_LIST_DIR}/prior_study.cc)
target_link_libraries(prior_study PRIVATE cutune_tune cutune_kernels fmt::fmt CLI11::CLI11)
