#pragma once
// Builders for the cutune device intrinsics: warp-level tensor-core operations (mma.sync,
// ldmatrix), asynchronous global->shared copies (cp.async) and 16-bit conversions. They are
// IR Calls of fixed names; the code generator emits the CUDA definition (inline PTX, inside
// `#if defined(__CUDA_ARCH__)`) of each one a kernel uses, and the CPU emulator's prelude
// defines the same names with emulated semantics. The names, signatures and fragment layouts
// are the contract in src/ir/intrinsics_contract.md (the PTX ISA's layouts for mma.m16n8k16 and
// ldmatrix.m8n8; groupID = lane / 4, threadID_in_group = lane % 4).
//
// Pointer arguments are `address_of` Calls (see ir.h): `address_of(buf, i)` is `&buf[i]`.
// Fragments are local buffers: A = 4 UInt32 (8 16-bit values), B = 2 UInt32, C/D = 4 Float32
// per lane, passed by the address of their first element.
//
// Collective rules the template must keep: mma and ldmatrix are executed by all 32 lanes of a
// warp together (no thread-dependent condition around them); a cp.async destination is not
// read before a cp_async_wait(n) that completes its group and a barrier after it.

#include <string>
#include <vector>

#include "src/ir/ir.h"

namespace cutune::ir {

// &buf[index], for an intrinsic's pointer argument.
Expr address_of(const Buffer& buf, const Expr& index);

// d = a·b + c for one m16n8k16 tile, fp32 accumulation; `input` is Float16 or BFloat16.
// d may be the same fragment as c.
Stmt mma_m16n8k16(DType input, const Expr& d, const Expr& a, const Expr& b, const Expr& c);

// ldmatrix.m8n8.x{count}[.trans].b16: `dst` receives `count` UInt32 registers; `row_address`
// is this lane's row (lanes 8j..8j+7 address matrix j's rows). count is 1, 2 or 4.
Stmt ldmatrix(int count, bool trans, const Expr& dst, const Expr& row_address);

// cp.async of `bytes` (4, 8 or 16) from global `src` to shared `dst`; only `src_bytes` are read
// and the rest of the destination is zero-filled (0 for an out-of-range source, whose address
// must still be valid).
Stmt cp_async(int bytes, const Expr& dst, const Expr& src, const Expr& src_bytes);
Stmt cp_async_commit();
// Waits until at most `pending` (0..4) of this thread's committed groups are in flight.
Stmt cp_async_wait(int pending);

// Round-to-nearest-even conversions. pack_* returns UInt32 with lo in bits 0-15.
Expr f32_to_storage(DType storage, const Expr& value);        // Float32 -> Float16/BFloat16
Expr storage_to_f32(const Expr& value);                       // Float16/BFloat16 -> Float32
Expr pack_x2(DType storage, const Expr& lo, const Expr& hi);  // two Float32 -> one word

// Two 16-bit storage values as one UInt32 word, lo in bits 0-15 (a plain bit operation, not
// a PTX intrinsic: the code generator defines it for both CUDA and the emulator).
Expr pack_b16x2(const Expr& lo, const Expr& hi);

// `value` (Int32), broadcast from lane 0 of the warp: `__shfl_sync(~0u, value, 0)` on the GPU.
// For a value that is the same in every lane (a warp or warpgroup index) but that the compiler
// cannot prove so (`threadIdx.x / 128`): after the broadcast it can keep the value, and what is
// computed from it (wgmma descriptors), in uniform registers. Warp-collective like mma (all 32
// lanes together); the emulator reports lanes that disagree, so a wrong use fails verification.
inline constexpr const char* kWarpUniform = "cutune_warp_uniform";
Expr warp_uniform(const Expr& value);
// The broadcast value of a warp_uniform() call; any other expression itself. Analyses that
// reason about thread indices (the verifier's bounds, the features' ranges) look through it.
const Expr& warp_uniform_operand(const Expr& e);

// gridDim.x as an Int32: the blocks a persistent kernel was launched with, by which its blocks
// stride through the tiles (the launcher picks it: src/codegen/launch_grid.h). A plain
// definition (`return gridDim.x`), the same text on the GPU and in the emulator.
inline constexpr const char* kGridBlocks = "cutune_grid_blocks";
Expr grid_blocks();

// atomicAdd(&buf[index], value) for Float32 (split-K reductions).
Stmt atomic_add(const Buffer& buf, const Expr& index, const Expr& value);

// Every intrinsic name above (address_of excluded), for the code generator and feature counts.
const std::vector<std::string>& intrinsic_names();

}  // namespace cutune::ir
