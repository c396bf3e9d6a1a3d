#pragma once
// Tests that read ../shared/datasets (Kernel Tuner caches, T1 specifications) skip visibly
// where it is absent: the test process exits with 77, which CTest (SKIP_RETURN_CODE, set by
// cutune_add_test) reports as skipped, with the reason on stdout. CTest runs each test case in
// its own process, so the exit ends only the test case that needs the data.

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

namespace cutune::test {

inline void require_dataset_path(const std::string& path) {
  if (std::filesystem::exists(path)) return;
  std::cout << "skipped: dataset absent: " << path << std::endl;
  std::exit(77);
}

}  // namespace cutune::test
