// The measuring worker for tests: `cutune_test_worker [--fake] --fd N`.

#include <string>
#include <vector>

#include "src/runtime/worker_main.h"

int main(int argc, char** argv) {
  return cutune::worker_main(std::vector<std::string>(argv + 1, argv + argc));
}
