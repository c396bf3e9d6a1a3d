#pragma once
// Builders for the Hopper (sm_90a) warpgroup intrinsics: wgmma.mma_async m64nNk16 with fp32
// accumulators and fp16/bf16 inputs (A from shared memory through a matrix descriptor, or from
// registers; B from shared memory), the descriptor itself, wgmma.fence / commit_group /
// wait_group, fence.proxy.async and setmaxnreg. Like src/ir/intrinsics.h they are IR Calls of
// fixed names; the code generator emits their inline PTX (src/codegen/cuda_intrinsics_hopper.cc)
// and the emulator's prelude (src/emulator/device_prelude_wgmma.h) emulates them. The contract,
// fragment layouts and canonical shared-memory layouts are in src/ir/intrinsics_contract.md
// ("Hopper warpgroup intrinsics") and src/ir/wgmma_descriptor.h.
//
// Collective rules the template must keep: wgmma.mma_async and setmaxnreg are executed by all
// 128 threads of a warpgroup (4 consecutive warps, the first warp index a multiple of 4) with
// no thread-dependent condition around them; the accumulators are neither read nor written
// between a wgmma and the wait_group that completes its group; a wgmma.fence comes before the
// first wgmma after each wait_group.

#include <string>
#include <vector>

#include "src/ir/ir.h"

namespace cutune::ir {

// The descriptor's swizzle field (PTX encoding).
enum class WgmmaSwizzle : int { none = 0, b128 = 1, b64 = 2, b32 = 3 };

// Bytes of one swizzle row (32, 64, 128; 0 for none).
int swizzle_bytes(WgmmaSwizzle s);

// Int64: the matrix descriptor of the shared-memory tile at `smem_address` (an address_of a
// 16-byte-aligned shared element) with the given leading and stride byte offsets (multiples of
// 16 below 2^18) and swizzle; base offset 0, so a swizzled tile must start on its pattern's
// boundary (256/512/1024 bytes).
Expr wgmma_descriptor(const Expr& smem_address, int leading_bytes, int stride_bytes,
                      WgmmaSwizzle swizzle);

// The shape-dependent part of a wgmma: N (8..256, step 8), the 16-bit input type, and whether
// A and B are MN-major ("transposed": A column-major / B row-major, imm-trans = 1) in shared
// memory. trans_a is only for A from shared memory.
struct WgmmaShape {
  int n = 64;
  DType input = DType::Float16;
  bool trans_a = false;
  bool trans_b = false;
};

// d (N/2 Float32 per thread) = A(64x16)·B(16xN) + (scale_d != 0 ? d : 0), A and B through
// descriptors (Int64). scale_d is an Int32 expression.
Stmt wgmma_ss(const WgmmaShape& shape, const Expr& d, const Expr& desc_a, const Expr& desc_b,
              const Expr& scale_d);
// The same with A from registers: `a` is 4 UInt32 per thread in the mma.m16n8k16 A layout of
// the thread's warp's 16 rows (warp w of the warpgroup holds rows 16w..16w+15).
Stmt wgmma_rs(const WgmmaShape& shape, const Expr& d, const Expr& a, const Expr& desc_b,
              const Expr& scale_d);

Stmt wgmma_fence();
Stmt wgmma_commit_group();
// Waits until at most `pending` (0..7) of this thread's committed wgmma groups are in flight.
Stmt wgmma_wait_group(int pending);
// Keeps the compiler from moving accesses of accumulator register `*r` (an address_of a
// Float32) across the asynchronous wgmma: wrap every accumulator before the fence and after
// the wait in one.
Stmt wgmma_fence_operand(const Expr& r);
// fence.proxy.async.shared::cta (ordering generic-proxy writes before wgmma's reads) is
// fence_proxy_async() in src/ir/tma_intrinsics.h, shared with TMA.
// setmaxnreg.{inc,dec}.sync.aligned.u32 count (24..256, a multiple of 8); warpgroup-collective.
Stmt setmaxnreg(bool increase, int count);

// The intrinsic name of a wgmma shape.
std::string wgmma_name(const WgmmaShape& shape, bool a_in_registers);

// Whether `name` is a Hopper intrinsic that exists only in the sm_90a feature set (all of the
// above but the descriptor, which sm_90 has too).
bool needs_sm90a(const std::string& name);
// Whether `name` is executed by a whole warpgroup together.
bool is_warpgroup_collective(const std::string& name);

// Every Hopper intrinsic name (all wgmma shapes included), for feature counts and tests.
const std::vector<std::string>& hopper_intrinsic_names();

}  // namespace cutune::ir
