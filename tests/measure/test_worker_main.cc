// The measuring worker for tests: `cutune_test_worker [--fake] [--cudnn-conv JSON] --fd N`.

#include <string>
#include <vector>

#include "src/measure/worker_gpu.h"

int main(int argc, char** argv) {
  return cutune::worker_main(std::vector<std::string>(argv + 1, argv + argc));
}
