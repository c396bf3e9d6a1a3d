// The nvdisasm listing parser, loop finding and the instruction mix, on short listings in
// nvdisasm's format written for these tests (excerpts of a toy kernel compiled here with
// nvcc -cubin -arch sm_90, cut down and edited).

#include <catch2/catch.hpp>

#include <string>

#include "src/sass/instruction_mix.h"
#include "src/sass/main_loop.h"
#include "src/sass/sass_listing.h"
#include "src/sass/sass_report.h"

using namespace cutune;
using namespace cutune::sass;

namespace {

// A prologue, a 6-instruction loop (.L_x_2) nested in an outer loop (.L_x_1) and, after it,
// a 3-instruction spin loop (.L_x_3); then the epilogue.
constexpr const char* kNested = R"(
	.target	sm_90
	.elftype	@"ET_EXEC"
//--------------------- .text.toy                   --------------------------
	.section	.text.toy,"ax",@progbits
	.align	128
        .global         toy
toy:
.text.toy:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/              @!P0 BRA `(.L_x_0) ;
.L_x_1:
        /*0030*/                   LDG.E.128 R4, desc[UR6][R8.64] ;
        /*0040*/                   STS.128 [R27], R4 ;
.L_x_2:
        /*0050*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0060*/                   LDS.128 R12, [R26+UR4] ;
        /*0070*/                   FFMA R13, R12, R13, R28 ;
        /*0080*/                   HFMA2.MMA R3, -RZ, RZ, 0, 0 ;
        /*0090*/                   ISETP.NE.AND P1, PT, R4, RZ, PT ;
        /*00a0*/               @P1 BRA `(.L_x_2) ;
        /*00b0*/                   IADD3 R2, R2, 0x400, RZ ;
        /*00c0*/               @P2 BRA `(.L_x_1) ;
.L_x_3:
        /*00d0*/                   LDS.U8 R5, [R26] ;
        /*00e0*/                   ISETP.NE.AND P0, PT, R5, RZ, PT ;
        /*00f0*/               @P0 BRA `(.L_x_3) ;
.L_x_0:
        /*0100*/                   STG.E desc[UR6][R2.64], R28 ;
        /*0110*/                   EXIT ;
.L_x_4:
        /*0120*/                   BRA `(.L_x_4);
//--------------------- .nv.shared.toy              --------------------------
	.section	.nv.shared.toy,"aw",@nobits
)";


// A listing of one kernel `name` whose code section holds `code` (labels and instructions).
Function one_kernel(const std::string& name, const std::string& code) {
  const std::string header = "\t.section\t.text." + name + ",\"ax\",@progbits\n" +
                             "        .global         " + name + "\n" + name + ":\n.text." +
                             name + ":\n";
  return parse_nvdisasm(header + code).at(0);
}

}  // namespace

TEST_CASE("nvdisasm text parses into instructions with resolved branch targets") {
  std::vector<Function> fs = parse_nvdisasm(kNested);
  REQUIRE(fs.size() == 1);
  const Function& f = fs[0];
  CHECK(f.name == "toy");
  REQUIRE(f.instructions.size() == 19);
  const Instruction& guarded = f.instructions[2];
  CHECK(guarded.address == 0x20);
  CHECK(guarded.predicate == "!P0");
  CHECK(guarded.opcode == "BRA");
  REQUIRE(guarded.target);
  CHECK(*guarded.target == 0x100);  // .L_x_0 names the STG after it
  CHECK_FALSE(guarded.branches_backward());
  const Instruction& ldg = f.instructions[3];
  CHECK(ldg.mnemonic() == "LDG.E.128");
  CHECK(ldg.modifiers == std::vector<std::string>{"E", "128"});
  CHECK(ldg.operands == "R4, desc[UR6][R8.64]");
  CHECK(ldg.predicate.empty());
  CHECK_FALSE(ldg.target);
  CHECK(f.instructions[10].branches_backward());
  CHECK(*f.instructions[10].target == 0x50);
  // A branch to itself (the trap after EXIT) is a backward branch too.
  CHECK(f.instructions[18].branches_backward());
}

TEST_CASE("text without code sections gives no functions") {
  CHECK(parse_nvdisasm("").empty());
  CHECK(parse_nvdisasm(
            "\t.section\t.nv.info,\"\",@\"SHT_CUDA_INFO\"\n  /*0000*/ FFMA R1, R2, R3, R4 ;\n")
            .empty());
  CHECK(parse_nvdisasm("nvdisasm fatal : Could not open input file 'x'\n").empty());
}

TEST_CASE("two kernels in one listing are two functions, labels kept apart") {
  const std::string two = std::string(kNested) +
                          "\t.section\t.text.other,\"ax\",@progbits\nother:\n.L_x_2:\n"
                          "        /*0000*/  FFMA R1, R2, R3, R4 ;\n"
                          "        /*0010*/  BRA `(.L_x_2) ;\n";
  std::vector<Function> fs = parse_nvdisasm(two);
  REQUIRE(fs.size() == 2);
  CHECK(fs[1].name == "other");
  REQUIRE(fs[1].instructions.size() == 2);
  CHECK(*fs[1].instructions[1].target == 0x0);
  CHECK(*fs[0].instructions[10].target == 0x50);
}

TEST_CASE("loops are backward branches, the main loop is the largest innermost one") {
  const Function f = parse_nvdisasm(kNested).at(0);
  std::vector<Loop> loops = find_loops(f);
  REQUIRE(loops.size() == 4);
  CHECK(loops[0] == Loop{5, 10});   // .L_x_2: BAR .. BRA
  CHECK(loops[1] == Loop{3, 12});   // .L_x_1 holds .L_x_2
  CHECK(loops[2] == Loop{13, 15});  // the spin loop
  CHECK(loops[3] == Loop{18, 18});  // the trap
  CHECK(loops[1].contains(loops[0]));
  std::optional<Loop> hot = main_loop(f);
  REQUIRE(hot);
  CHECK(*hot == Loop{5, 10});
}

TEST_CASE("a loop without math inside the k loop (TMA's elect loop) is not the main loop") {
  const Function f = one_kernel("tma", R"(
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_1:
        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2 ;
.L_x_2:
        /*0020*/                   ELECT P1, URZ, PT ;
        /*0030*/                   UTMALDG.2D [UR8], [UR10] ;
        /*0040*/              @!P1 BRA `(.L_x_2) ;
        /*0050*/                   WARPGROUP.ARRIVE ;
        /*0060*/                   HGMMA.64x128x16.F32 R24, gdesc[UR8], R24 ;
        /*0070*/                   HGMMA.64x128x16.F32 R24, gdesc[UR12], R24, gsb0 ;
        /*0080*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
.L_x_5:
        /*0090*/                   IADD3 R2, R2, 0x1, RZ ;
        /*00a0*/               @P2 BRA `(.L_x_1) ;
.L_x_3:
        /*00b0*/                   NOP ;
        /*00c0*/                   NOP ;
        /*00d0*/                   NOP ;
        /*00e0*/                   NOP ;
        /*00f0*/                   NOP ;
        /*0100*/                   NOP ;
        /*0110*/                   NOP ;
        /*0120*/                   NOP ;
        /*0130*/                   NOP ;
        /*0140*/                   NOP ;
        /*0150*/               @P3 BRA `(.L_x_3) ;
        /*0160*/                   EXIT ;
.L_x_4:
        /*0170*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2 ;
        /*0180*/              @!P0 BRA `(.L_x_4) ;
        /*0190*/                   BRA `(.L_x_5) ;
)");
  // The retry block after EXIT spins on itself (a loop) and jumps back into the k loop (not
  // one: its range would hold the EXIT).
  REQUIRE(find_loops(f).size() == 4);
  // The k loop (with the HGMMAs) although the elect loop is nested in it, and not the larger
  // loop without math after it.
  const std::optional<Loop> m = main_loop(f);
  REQUIRE(m);
  CHECK(m->first == 1);
  CHECK(m->last == 10);
  CHECK(mix_of(f, m->first, m->last).count("HGMMA") == 2);
}

TEST_CASE("straight-line code has no main loop") {
  Function f;
  f.instructions = {Instruction{0x0, "", "FFMA", {}, "R1, R2, R3, R4", {}},
                    Instruction{0x10, "", "EXIT", {}, "", {}}};
  CHECK(find_loops(f).empty());
  CHECK_FALSE(main_loop(f));
  SassReport r = make_report(f, PtxasInfo{}, LaunchSpec{});
  CHECK_FALSE(r.main_loop);
  CHECK(r.to_json()["main_loop"].is_null());
}

TEST_CASE("the mix counts classes, memory widths and first positions") {
  const Function f = parse_nvdisasm(kNested).at(0);
  InstructionMix mix = mix_of(f, 5, 10);
  CHECK(mix.total == 6);
  CHECK(mix.count(InstructionClass::math) == 1);     // FFMA; HFMA2.MMA is a move
  CHECK(mix.count(InstructionClass::integer) == 2);  // HFMA2.MMA, ISETP
  CHECK(mix.count(InstructionClass::memory) == 1);
  CHECK(mix.count(InstructionClass::barrier) == 1);
  CHECK(mix.count(InstructionClass::control) == 1);
  CHECK(mix.count("LDS.128") == 1);
  CHECK(mix.count("HFMA2.MMA") == 1);
  CHECK(mix.count_opcode("LDS") == 1);
  CHECK(mix.math_share() == Approx(1.0 / 6));
  CHECK(mix.first("BAR") == 0);
  CHECK(mix.first("FFMA") == 2);
  CHECK(mix.first("HMMA") == -1);
  InstructionMix spin = mix_of(f, 13, 15);
  CHECK(spin.count("LDS.8") == 1);
  CHECK(mix_of(f, 16, 16).count("STG.32") == 1);
}

TEST_CASE("instructions guarded by @!PT never execute: padding, not loads") {
  // ptxas pads after an async-copy wait with predicated-off shared loads.
  const Function f = one_kernel("pad", R"(
        /*0000*/                   DEPBAR.LE SB0, 0x1 ;
        /*0010*/              @!PT LDS RZ, [RZ] ;
        /*0020*/              @!PT LDS RZ, [RZ] ;
        /*0030*/               @P0 LDS R4, [R2] ;
        /*0040*/              @!P1 LDS.128 R8, [R2] ;
        /*0050*/                   EXIT ;
)");
  InstructionMix mix = mix_of(f, 0, 5);
  CHECK(mix.total == 6);
  CHECK(mix.count("@!PT") == 2);
  CHECK(mix.count_opcode("LDS") == 2);  // the guarded ones that may run
  CHECK(mix.count("LDS.32") == 1);
  CHECK(mix.count(InstructionClass::memory) == 2);
  CHECK(mix.count(InstructionClass::control) == 3);  // two @!PT and EXIT
  CHECK(mix.first("LDS") == 3);
  CHECK(mix.first("@!PT") == 1);
}

TEST_CASE("kinds of tensor-core, ldmatrix, cp.async and TMA instructions") {
  auto ins = [](std::string op, std::vector<std::string> mods) {
    return Instruction{0, "", std::move(op), std::move(mods), "", {}};
  };
  CHECK(kind_of(ins("LDSM", {"16", "M88", "4"})) == "LDSM.x4");
  CHECK(kind_of(ins("LDSM", {"16", "MT88", "2"})) == "LDSM.x2");
  CHECK(kind_of(ins("LDGSTS", {"E", "BYPASS", "LTC128B", "128"})) == "LDGSTS.128");
  CHECK(kind_of(ins("UTMALDG", {"2D"})) == "UTMALDG.2D");
  CHECK(kind_of(ins("LDG", {"E", "64", "CONSTANT"})) == "LDG.64");
  CHECK(kind_of(ins("STS", {"U16"})) == "STS.16");
  CHECK(classify(ins("HMMA", {"16816", "F32"})) == InstructionClass::math);
  CHECK(classify(ins("HGMMA", {"64x128x16", "F32"})) == InstructionClass::math);
  CHECK(classify(ins("UTMALDG", {"2D"})) == InstructionClass::memory);
  CHECK(classify(ins("LDGDEPBAR", {})) == InstructionClass::barrier);
  CHECK(classify(ins("SYNCS", {"PHASECHK", "TRANS64", "TRYWAIT"})) == InstructionClass::barrier);
  CHECK(classify(ins("IMAD", {"WIDE", "U32"})) == InstructionClass::integer);
  CHECK(classify(ins("UIADD3", {})) == InstructionClass::integer);
  CHECK(classify(ins("BSYNC", {})) == InstructionClass::control);
}

TEST_CASE("the report takes registers and spills from ptxas and counts local accesses") {
  std::vector<Function> fs = parse_nvdisasm(kNested);
  PtxasInfo p;
  p.parsed = true;
  p.registers = 40;
  p.spill_store_bytes = 8;
  LaunchSpec launch;
  launch.dynamic_smem_bytes = 1024;
  SassReport r = make_report(fs.at(0), p, launch);
  CHECK(r.registers == 40);
  CHECK(r.spills());
  CHECK(r.dynamic_shared_bytes == 1024);
  CHECK(r.loops == 4);
  CHECK(r.main_loop_begin == 0x50);
  CHECK(r.main_loop_end == 0xa0);
  nlohmann::json j = r.to_json();
  CHECK(j["main_loop"]["instructions"] == 6);
  CHECK(j["main_loop"]["kinds"]["LDS.128"] == 1);
  CHECK(j["math_share"].get<double>() == Approx(1.0 / 6));
}
