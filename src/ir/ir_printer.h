#pragma once
// A readable text form of the IR, for people and for test failure messages. Not CUDA:
// loops show their kind, loads and stores their lanes, allocations their scope.
//
//   for k_outer in [0, 16) serial {
//     allocate A_shared: float[1024] shared
//     A_shared[ty * 4 + tx] = A[...] x4
//   }

#include <iosfwd>
#include <string>

#include "src/ir/ir.h"

namespace cutune::ir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);
std::string to_string(const Kernel& k);
std::ostream& operator<<(std::ostream& os, const Expr& e);
std::ostream& operator<<(std::ostream& os, const Stmt& s);

}  // namespace cutune::ir
