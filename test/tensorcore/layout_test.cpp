// The swizzled slot layout (src/plan/Swizzle.h) and the bank-conflict checker
// (src/analysis/BankConflicts.h) on the index math of tensor-core operand tiles: swizzled
// tiles are conflict-free for ldmatrix reads (x4 and x4.trans row patterns) and 16-byte
// copies, the same accesses on unswizzled tiles conflict by the expected amounts.

#include "analysis/BankConflicts.h"
#include "codegen/TensorCoreMarkers.h"
#include "plan/Swizzle.h"

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace Halide;
using namespace Halide::Internal;
using alcop::Swizzle;

// ---- Swizzle ----

TEST(Swizzle, RulePerRowWidth) {
    struct Case {
        int64_t row_bytes;
        int chunk_bits, row_shift;
    } cases[] = {{128, 3, 0}, {256, 3, 0}, {1024, 3, 0}, {64, 2, 1}, {32, 1, 2},
                 {16, 0, 0},  {8, 0, 0},   {48, 0, 0},   {96, 0, 0}, {192, 0, 0}};
    for (const Case &c : cases) {
        Swizzle s = Swizzle::for_rows(c.row_bytes);
        EXPECT_EQ(s.chunk_bits, c.chunk_bits) << c.row_bytes;
        EXPECT_EQ(s.row_shift, c.row_shift) << c.row_bytes;
        EXPECT_EQ(s.is_identity(), c.chunk_bits == 0) << c.row_bytes;
    }
}

// The rules of tensor-cores.md, spelled out on a few points.
TEST(Swizzle, KnownPoints) {
    Swizzle s128 = Swizzle::for_rows(128), s256 = Swizzle::for_rows(256);
    Swizzle s64 = Swizzle::for_rows(64), s32 = Swizzle::for_rows(32);
    EXPECT_EQ(s128.byte_in_row(3, 0), 48);            // chunk 0 ^ 3
    EXPECT_EQ(s128.byte_in_row(9, 2 * 16 + 5), 53);   // chunk 2 ^ (9 % 8) = 3, byte 5 in it
    EXPECT_EQ(s256.byte_in_row(5, 9 * 16), 12 * 16);  // second segment: chunk 8 | (1 ^ 5)
    EXPECT_EQ(s64.byte_in_row(2, 0), 16);             // chunk 0 ^ ((2 >> 1) & 3)
    EXPECT_EQ(s64.byte_in_row(7, 48), 0);             // chunk 3 ^ 3
    EXPECT_EQ(s32.byte_in_row(4, 0), 16);             // chunk 0 ^ ((4 >> 2) & 1)
    EXPECT_EQ(s32.byte_in_row(3, 16), 16);            // rows 0..3 unchanged
    // Elements: fp16 column 8 (chunk 1) of row 1 of a 128-byte row -> chunk 0.
    EXPECT_EQ(s128.element_in_row(1, 8, 2), 0);
    EXPECT_EQ(s128.element_in_row(1, 9, 2), 1);
}

// Per row: a permutation of the row's bytes, its own inverse, chunk-internal offsets kept
// (so 16-byte alignment is kept); over the tile: a bijection.
TEST(Swizzle, BijectiveInvolutionKeepingAlignment) {
    for (int64_t row_bytes : {8, 16, 32, 48, 64, 96, 128, 256, 512}) {
        Swizzle s = Swizzle::for_rows(row_bytes);
        std::set<int64_t> tile;
        for (int64_t row = 0; row < 64; row++) {
            for (int64_t byte = 0; byte < row_bytes; byte++) {
                const int64_t to = s.byte_in_row(row, byte);
                ASSERT_GE(to, 0);
                ASSERT_LT(to, row_bytes) << row_bytes << " row " << row << " byte " << byte;
                ASSERT_EQ(to % 16, byte % 16);
                ASSERT_EQ(s.byte_in_row(row, to), byte);
                if (s.is_identity()) {
                    ASSERT_EQ(to, byte);
                }
                tile.insert(row * row_bytes + to);
            }
        }
        EXPECT_EQ((int64_t)tile.size(), 64 * row_bytes);
        EXPECT_EQ(*tile.rbegin(), 64 * row_bytes - 1);
    }
}

// The Expr builder is the same function; constants fold.
TEST(Swizzle, ExprMatchesTheFunction) {
    Expr row = Variable::make(Int(32), "row"), col = Variable::make(Int(32), "col");
    for (int64_t row_bytes : {16, 32, 64, 128, 256}) {
        Swizzle s = Swizzle::for_rows(row_bytes);
        Expr bytes = s.byte_in_row(row, col);
        Expr elements = s.element_in_row(row, col, 2);
        for (int r = 0; r < 24; r++) {
            for (int c = 0; c < row_bytes; c++) {
                std::map<std::string, Expr> at = {{"row", r}, {"col", c}};
                const int64_t *b = as_const_int(simplify(substitute(at, bytes)));
                ASSERT_TRUE(b) << bytes;
                ASSERT_EQ(*b, s.byte_in_row(r, c)) << row_bytes << " " << r << " " << c;
                if (c < row_bytes / 2) {
                    const int64_t *e = as_const_int(simplify(substitute(at, elements)));
                    ASSERT_TRUE(e) << elements;
                    ASSERT_EQ(*e, s.element_in_row(r, c, 2));
                    ASSERT_EQ(2 * *e, s.byte_in_row(r, 2 * c));
                }
            }
        }
        const int64_t *folded = as_const_int(s.byte_in_row(Expr(5), Expr(16)));
        ASSERT_TRUE(folded);
        EXPECT_EQ(*folded, s.byte_in_row(5, 16));
    }
    EXPECT_TRUE(equal(Swizzle::for_rows(16).element_in_row(row, col, 2), col));
}

// Swizzle::address, the map both the copies and the ldmatrix rows go through: the same as
// the numbers, a permutation of the chunks of each 128-byte window that keeps the byte in its
// chunk, and, on a tile of rows from byte 0, the row map itself.
TEST(Swizzle, AddressPermutesEachWindow) {
    Expr index = Variable::make(Int(32), "i");
    for (int64_t row_bytes : {32, 64, 128, 256}) {
        Swizzle s = Swizzle::for_rows(row_bytes);
        Expr e = s.address(index, 2);
        for (int64_t window = 0; window < 32; window++) {
            std::set<int64_t> seen;
            for (int64_t i = window * 64; i < window * 64 + 64; i++) {  // 64 halves: 128 bytes
                const int64_t a = s.address(i, 2);
                const int64_t *x = as_const_int(simplify(substitute("i", Expr((int)i), e)));
                ASSERT_TRUE(x) << e;
                ASSERT_EQ(*x, a);
                ASSERT_EQ(a / 64, window);
                ASSERT_EQ(a % 8, i % 8);
                ASSERT_EQ(s.address(a, 2), i);  // an involution
                seen.insert(a);
                const int64_t row = 2 * i / row_bytes, col = i % (row_bytes / 2);
                ASSERT_EQ(a, row * (row_bytes / 2) + s.element_in_row(row, col, 2));
            }
            ASSERT_EQ(seen.size(), 64u);
        }
    }
    EXPECT_TRUE(equal(Swizzle::for_rows(16).address(index, 2), index));
}

// A slot's index, thread offset + slot base + constants: the map of the Expr equals the map
// of the numbers for every slot (negative offsets too), and the slot (a multiple of the
// period, 1024 bytes) and the constant's whole periods stay outside the map, so that the
// map's operands do not depend on the slot; a term that is not such a multiple stays inside.
TEST(Swizzle, AddressKeepsMultiplesOfThePeriodOutsideTheMap) {
    const Expr t = Variable::make(Int(32), "t"), ko = Variable::make(Int(32), "ko");
    const Expr slot = ko % 3;
    for (int64_t row_bytes : {32, 64, 128, 256, 512}) {
        SCOPED_TRACE(row_bytes);
        const Swizzle s = Swizzle::for_rows(row_bytes);
        for (int constant : {0, 40, 1024 + 40, 3 * 512 + 8}) {
            // Halves: a slot of 1024 elements (2048 bytes), a thread's 8-element chunk, an odd
            // k offset of 24 elements (48 bytes) that must stay inside.
            const Expr index = (slot * 2 + t / 64) * 512 + (t % 64) * 8 + 24 + constant;
            const Expr e = s.address(index, 2);
            struct Inside : IRVisitor {
                bool slot_in_xor = false;
                using IRVisitor::visit;
                void visit(const Call *c) override {
                    slot_in_xor = slot_in_xor || (c->is_intrinsic(Call::bitwise_xor) && expr_uses_var(c, "ko"));
                    IRVisitor::visit(c);
                }
            } inside;
            e.accept(&inside);
            EXPECT_EQ(inside.slot_in_xor, 2048 % s.period_bytes() != 0) << e;
            for (int k : {0, 1, 2, 5}) {
                for (int tv : {0, 7, 63, 64, 200}) {
                    const Expr at = substitute("ko", Expr(k), substitute("t", Expr(tv), e));
                    const int64_t i = ((k % 3) * 2 + tv / 64) * 512 + (tv % 64) * 8 + 24 + constant;
                    const int64_t *x = as_const_int(simplify(at));
                    ASSERT_TRUE(x) << at;
                    ASSERT_EQ(*x, s.address(i, 2)) << "ko " << k << ", t " << tv << ", constant " << constant;
                }
            }
        }
    }
}

// ---- The bank model ----

alcop::LaneAddresses lanes_at(int64_t stride, int64_t offset = 0) {
    alcop::LaneAddresses a;
    for (int l = 0; l < 32; l++) {
        a.push_back(offset + l * stride);
    }
    return a;
}

TEST(BankConflicts, Model) {
    using alcop::count_bank_conflicts;
    // 4 bytes: one phase of 32 lanes.
    EXPECT_EQ(count_bank_conflicts(lanes_at(4), 4).phases, 1);
    EXPECT_EQ(count_bank_conflicts(lanes_at(4), 4).conflicts(), 0);
    EXPECT_EQ(count_bank_conflicts(lanes_at(8), 4).conflicts(), 1);     // 2-way
    EXPECT_EQ(count_bank_conflicts(lanes_at(128), 4).conflicts(), 31);  // all in bank 0
    EXPECT_EQ(count_bank_conflicts(lanes_at(132), 4).conflicts(), 0);   // padded rows
    EXPECT_EQ(count_bank_conflicts(lanes_at(0), 4).conflicts(), 0);     // broadcast
    EXPECT_EQ(count_bank_conflicts(lanes_at(2), 2).conflicts(), 0);     // two lanes per word
    // 8 bytes: two phases of 16 lanes. 16 bytes: four phases of 8 lanes.
    EXPECT_EQ(count_bank_conflicts(lanes_at(8), 8).phases, 2);
    EXPECT_EQ(count_bank_conflicts(lanes_at(8), 8).conflicts(), 0);
    EXPECT_EQ(count_bank_conflicts(lanes_at(16), 16).phases, 4);
    EXPECT_EQ(count_bank_conflicts(lanes_at(16), 16).wavefronts, 4);
    EXPECT_EQ(count_bank_conflicts(lanes_at(64), 16).conflicts(), 4 * 3);  // 64-byte rows: 4 units per position
    EXPECT_EQ(count_bank_conflicts(lanes_at(128), 16).conflicts(), 4 * 7);
    // Inactive lanes take no part; a phase with none costs nothing.
    alcop::LaneAddresses half = lanes_at(128);
    for (int l = 8; l < 32; l++) {
        half[l] = std::nullopt;
    }
    EXPECT_EQ(count_bank_conflicts(half, 16).phases, 1);
    EXPECT_EQ(count_bank_conflicts(half, 16).conflicts(), 7);
}

// ---- Operand tiles: ldmatrix reads and 16-byte copies, by their index math ----

const Expr tx = Variable::make(Int(32), "tx");

// The element (row, column) whose 16-byte row lane `lane` gives to ldmatrix.x4 for the 16 x 16
// fragment at (row0, col0) of a tile: matrices 0..3 are (rows 0-7, cols 0-7), (rows 8-15,
// cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 8-15). For A (x4, rows = M, cols = K)
// these are a0..a3; for B read with x4.trans (rows = K, cols = N) they are b0, b1 of N block
// 0 and b0, b1 of N block 1: the same row pattern.
Expr fragment_row(Expr lane, int row0) {
    return row0 + lane % 8 + 8 * ((lane / 8) % 2);
}
Expr fragment_col(Expr lane, int col0) {
    return col0 + 8 * (lane / 16);
}

// Byte address of fp16 element (row, col) of a tile with `row_elements` per row, swizzled or not.
Expr tile_address(Expr row, Expr col, int row_elements, bool swizzled) {
    Swizzle s = Swizzle::for_rows(2 * row_elements);
    Expr in_row = swizzled ? s.element_in_row(row, col, 2) : col;
    return (row * row_elements + in_row) * 2;
}

// Conflicts of every fragment read of a rows x row_elements fp16 tile with ldmatrix.x4.
int ldmatrix_conflicts(int rows, int row_elements, bool swizzled, int *reads) {
    int conflicts = 0;
    *reads = 0;
    for (int row0 = 0; row0 < rows; row0 += 16) {
        for (int col0 = 0; col0 < row_elements; col0 += 16) {
            Expr address = tile_address(fragment_row(tx, row0), fragment_col(tx, col0), row_elements, swizzled);
            auto lanes = alcop::lane_addresses(address, {{"tx", 32}});
            EXPECT_TRUE(lanes.has_value()) << address;
            alcop::BankConflicts cost = alcop::count_bank_conflicts(*lanes, 16);
            EXPECT_EQ(cost.phases, 4);
            conflicts += cost.conflicts();
            (*reads)++;
        }
    }
    return conflicts;
}

TEST(BankConflicts, LdmatrixOnSwizzledTilesIsConflictFree) {
    // A: 128 x 32 fp16 (64-byte rows) and 128 x 64 (128-byte rows), K contiguous, read with
    // x4; B: 32 x 64 (128-byte rows) and 32 x 32 (64-byte rows), N contiguous, read with
    // x4.trans (the same row-address pattern over K rows); and 256-byte rows.
    struct Tile {
        int rows, row_elements;
        int unswizzled_per_read;  // 3 per phase for 64-byte rows, 7 for 128 and more
    } tiles[] = {{128, 32, 12}, {128, 64, 28}, {32, 64, 28}, {32, 32, 12}, {64, 128, 28}};
    for (const Tile &t : tiles) {
        int reads = 0;
        EXPECT_EQ(ldmatrix_conflicts(t.rows, t.row_elements, true, &reads), 0) << t.rows << " x " << t.row_elements;
        EXPECT_EQ(reads, t.rows / 16 * t.row_elements / 16);
        // The checker bites: the same reads without the swizzle conflict.
        EXPECT_EQ(ldmatrix_conflicts(t.rows, t.row_elements, false, &reads), t.unswizzled_per_read * reads)
            << t.rows << " x " << t.row_elements;
    }
}

// 16-byte copies of a tile by a block of 128 threads, in rounds: `row_major` threads walk the
// chunks of a row first (coalesced, conflict-free either way); otherwise they walk down a
// column of chunks (thread t: row t of the round, one chunk), which conflicts unswizzled.
int copy_conflicts(int rows, int row_elements, bool swizzled, bool row_major) {
    const int chunks = row_elements / 8;  // 16-byte chunks per row
    const int threads = 128;
    int conflicts = 0;
    for (int round = 0; round < rows * chunks / threads; round++) {
        Expr linear = round * threads + tx;
        Expr row = row_major ? linear / chunks : linear % rows;
        Expr chunk = row_major ? linear % chunks : linear / rows;
        Expr address = tile_address(row, chunk * 8, row_elements, swizzled);
        for (int warp = 0; warp < threads / 32; warp++) {
            auto lanes = alcop::lane_addresses(address, {{"tx", threads}}, {}, warp);
            EXPECT_TRUE(lanes.has_value()) << address;
            conflicts += alcop::count_bank_conflicts(*lanes, 16).conflicts();
        }
    }
    return conflicts;
}

TEST(BankConflicts, SixteenByteCopiesIntoSwizzledTiles) {
    // 128 x 32 fp16 (64-byte rows): 4 rounds x 4 warps; 128 x 64 (128-byte rows): 8 x 4.
    EXPECT_EQ(copy_conflicts(128, 32, true, true), 0);
    EXPECT_EQ(copy_conflicts(128, 64, true, true), 0);
    EXPECT_EQ(copy_conflicts(128, 32, false, true), 0);  // coalesced rows need no swizzle
    EXPECT_EQ(copy_conflicts(128, 64, false, true), 0);
    EXPECT_EQ(copy_conflicts(128, 32, true, false), 0);
    EXPECT_EQ(copy_conflicts(128, 64, true, false), 0);
    // The checker bites: walking down a column of an unswizzled tile, each 8-lane phase hits
    // 2 (64-byte rows: 3 conflicts) or 1 (128-byte rows: 7) bank positions.
    EXPECT_EQ(copy_conflicts(128, 32, false, false), 4 * 4 * 4 * 3);
    EXPECT_EQ(copy_conflicts(128, 64, false, false), 8 * 4 * 4 * 7);
}

TEST(BankConflicts, AddressThatDoesNotFoldIsReported) {
    Expr address = tx * 16 + Variable::make(Int(32), "k");
    EXPECT_FALSE(alcop::lane_addresses(address, {{"tx", 32}}).has_value());
    EXPECT_TRUE(alcop::lane_addresses(address, {{"tx", 32}}, {{"k", 0}}).has_value());
}

// Lanes follow the thread ids x fastest; a warp past the block's threads is inactive there.
TEST(BankConflicts, LanesOfTwoDimensionalBlocks) {
    Expr ty = Variable::make(Int(32), "ty");
    auto lanes = alcop::lane_addresses(ty * 1000 + tx, {{"tx", 8}, {"ty", 6}}, {}, 1);
    ASSERT_TRUE(lanes);
    EXPECT_EQ(*(*lanes)[0], 4 * 1000 + 0);   // thread 32 = (tx 0, ty 4)
    EXPECT_EQ(*(*lanes)[15], 5 * 1000 + 7);  // thread 47
    EXPECT_FALSE((*lanes)[16].has_value());  // thread 48: the block has 48
}

// ---- On a lowered kernel ----

// A block of 128 threads copies a 128 x 32 fp16 tile of `in` into the shared "A_sh" in 16-byte
// vectors (4 rounds of a serial loop), then each warp reads a 16 x 16 fragment with the
// ldmatrix.x4 marker and writes it to `out`.
Stmt tile_kernel(bool swizzled) {
    const int row_elements = 32;
    Expr i = Variable::make(Int(32), "i"), blk = Variable::make(Int(32), "blk");
    auto element_index = [&](Expr row, Expr col) {
        return row * row_elements + (swizzled ? Swizzle::for_rows(64).element_in_row(row, col, 2) : col);
    };
    Expr row = i * 32 + tx / 4, col = (tx % 4) * 8;
    Expr value = Load::make(UInt(16, 8), "in", Ramp::make(blk * 4096 + row * row_elements + col, 1, 8), Buffer<>(),
                            Parameter(), const_true(8), ModulusRemainder());
    Stmt copy = For::make("i", 0, 4, ForType::Serial, DeviceAPI::CUDA,
                          Store::make("A_sh", value, Ramp::make(element_index(row, col), 1, 8), Parameter(),
                                      const_true(8), ModulusRemainder()));
    Stmt barrier = Evaluate::make(Call::make(Int(32), Call::gpu_thread_barrier, {2}, Call::Intrinsic));
    Expr lane = tx % 32, warp = tx / 32;
    Expr frow = warp * 16 + lane % 8 + 8 * ((lane / 8) % 2), fcol = 8 * (lane / 16);
    std::vector<Stmt> reads;
    for (int j = 0; j < 4; j++) {
        std::vector<Expr> args = {j};
        for (int k = 0; k < 8; k++) {
            args.push_back(Load::make(UInt(16), "A_sh", element_index(frow, fcol) + k, Buffer<>(), Parameter(),
                                      const_true(), ModulusRemainder()));
        }
        Expr fragment = Call::make(UInt(32), alcop::ldmatrix_name, args, Call::PureExtern);
        reads.push_back(Store::make("out", fragment, tx * 4 + j, Parameter(), const_true(), ModulusRemainder()));
    }
    Stmt body = Block::make({copy, barrier, Block::make(reads)});
    Stmt threads = For::make("tx", 0, 128, ForType::GPUThread, DeviceAPI::CUDA, body);
    Stmt alloc = Allocate::make("A_sh", UInt(16), MemoryType::GPUShared, {128 * row_elements}, const_true(), threads);
    return For::make("blk", 0, 16, ForType::GPUBlock, DeviceAPI::CUDA, alloc);
}

TEST(BankConflicts, KernelStmt) {
    for (bool swizzled : {true, false}) {
        SCOPED_TRACE(swizzled ? "swizzled" : "unswizzled");
        auto kernels = alcop::find_bank_conflicts(tile_kernel(swizzled));
        ASSERT_EQ(kernels.size(), 1u);
        const alcop::KernelBankConflicts &k = kernels[0];
        EXPECT_EQ(k.kernel, "blk");
        EXPECT_EQ(k.unanalyzed, 0);
        ASSERT_EQ(k.accesses.size(), 2u);  // the copy's store and one ldmatrix (its call j = 0)
        const alcop::SharedAccess &store = k.accesses[0], &read = k.accesses[1];
        EXPECT_TRUE(store.is_store);
        EXPECT_FALSE(store.is_ldmatrix);
        EXPECT_EQ(store.access_bytes, 16);
        EXPECT_EQ(store.cost.phases, 4);
        EXPECT_EQ(store.cost.conflicts(), 0);
        EXPECT_FALSE(read.is_store);
        EXPECT_TRUE(read.is_ldmatrix);
        EXPECT_EQ(read.buffer, "A_sh");
        EXPECT_EQ(read.access_bytes, 16);
        EXPECT_EQ(read.cost.phases, 4);
        EXPECT_EQ(read.cost.conflicts(), swizzled ? 0 : 12);
        EXPECT_EQ(k.conflicts(), swizzled ? 0 : 12);
    }
}

// A guard on the thread ids narrows the lanes: only threads 0..7 take part.
TEST(BankConflicts, GuardedAccessCountsActiveLanesOnly) {
    Stmt store = Store::make("S", make_const(Float(32), 0), tx * 32, Parameter(), const_true(), ModulusRemainder());
    Stmt guarded = IfThenElse::make(tx < 8, store);
    Stmt threads = For::make("tx", 0, 64, ForType::GPUThread, DeviceAPI::CUDA, guarded);
    Stmt alloc = Allocate::make("S", Float(32), MemoryType::GPUShared, {64 * 32}, const_true(), threads);
    Stmt kernel = For::make("blk", 0, 2, ForType::GPUBlock, DeviceAPI::CUDA, alloc);
    auto kernels = alcop::find_bank_conflicts(kernel);
    ASSERT_EQ(kernels.size(), 1u);
    ASSERT_EQ(kernels[0].accesses.size(), 1u);
    EXPECT_EQ(kernels[0].accesses[0].access_bytes, 4);
    EXPECT_EQ(kernels[0].accesses[0].cost.conflicts(), 7);  // 8 lanes in bank 0
    EXPECT_EQ(kernels[0].conflicts(), 7);
}

// On a kernel that Halide 14 itself lowered: a 32 x 32 float tile staged in shared memory
// (rows of 128 bytes, written by threads along the row) and read transposed by the threads
// of a warp (lane m reads row m): the store is conflict-free, the read hits one bank 32 times.
TEST(BankConflicts, HalideLoweredKernel) {
    ImageParam A(Float(32), 2, "A");
    Var k("k"), m("m"), mo("mo"), ko("ko"), mi("mi"), ki("ki");
    Func A_sh("A_sh"), out("out");
    A_sh(k, m) = A(k, m);
    out(m, k) = A_sh(k, m) * 2.0f;
    out.bound(m, 0, 32).bound(k, 0, 32).gpu_tile(m, k, mo, ko, mi, ki, 32, 32);
    A_sh.compute_at(out, mo).store_in(MemoryType::GPUShared).gpu_threads(k, m);
    // The kernels as custom lowering passes see them (later, Halide offloads them to device code).
    std::vector<alcop::KernelBankConflicts> kernels;
    struct Inspect : IRMutator {
        std::vector<alcop::KernelBankConflicts> *kernels;
        using IRMutator::mutate;
        Stmt mutate(const Stmt &s) override {
            *kernels = alcop::find_bank_conflicts(s);
            return s;
        }
    };
    auto *inspect = new Inspect;
    inspect->kernels = &kernels;
    Pipeline p(out);
    p.add_custom_lowering_pass(inspect);
    p.compile_to_module({A}, "transpose", Target("host-cuda-cuda_capability_80"));
    ASSERT_EQ(kernels.size(), 1u);
    const alcop::KernelBankConflicts &kernel = kernels[0];
    EXPECT_EQ(kernel.unanalyzed, 0);
    ASSERT_EQ(kernel.accesses.size(), 2u);
    int stores = 0;
    for (const alcop::SharedAccess &a : kernel.accesses) {
        EXPECT_EQ(a.access_bytes, 4);
        EXPECT_EQ(a.cost.phases, 1);
        EXPECT_EQ(a.cost.conflicts(), a.is_store ? 0 : 31) << a.byte_address;
        stores += a.is_store;
    }
    EXPECT_EQ(stores, 1);
    EXPECT_EQ(kernel.conflicts(), 31);
}

}  // namespace
