#include "rewrite/PipelineFragments.h"

#include "Error.h"
#include "copy/CopyLowering.h"

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** Fragment loops of up to this many steps are unrolled whole; longer ones keep a loop (see
 * Builder::build), so that a schedule's long reduction does not multiply the code by its
 * trip count. The generators' chunks (tile_k up to 16) stay unrolled. */
constexpr int max_unrolled_steps = 16;

/** Moves every access to the registers of a fragment by a constant number of elements: into
 * a slot, or from one slot to another. */
class ShiftRegisterAccesses : public IRMutator {
    using IRMutator::visit;

    const std::map<std::string, int64_t> &shift;

    Expr shifted(const Expr &index, int64_t by) {
        if (const Ramp *r = index.as<Ramp>()) {
            // A dense access stays one vector access.
            return Ramp::make(simplify(r->base + (int)by), r->stride, r->lanes);
        }
        const Expr offset = IntImm::make(Int(32), by);
        return simplify(index + (index.type().is_vector() ? Broadcast::make(offset, index.type().lanes()) : offset));
    }

    Expr visit(const Load *op) override {
        auto it = shift.find(op->name);
        if (it == shift.end()) return IRMutator::visit(op);
        return Load::make(op->type, op->name, shifted(mutate(op->index), it->second), op->image, op->param,
                          mutate(op->predicate), op->alignment);
    }

    Stmt visit(const Store *op) override {
        auto it = shift.find(op->name);
        if (it == shift.end()) return IRMutator::visit(op);
        return Store::make(op->name, mutate(op->value), shifted(mutate(op->index), it->second), op->param,
                           mutate(op->predicate), op->alignment);
    }

public:
    explicit ShiftRegisterAccesses(const std::map<std::string, int64_t> &shift) : shift(shift) {
    }
};

class Builder {
    const FragmentLoop &loop;
    const std::vector<Stmt> &pieces;
    const SharedLoopContext *shared;
    const testing::Hooks &hooks;
    const int steps, stages, distance;

    /** Whether producer piece i loads from the next tile (see SharedLoopContext::crossing). */
    bool crosses(size_t i) const {
        return shared && shared->crossing.count(loop.body.produced[i]);
    }

    /** The slot the compute of step j reads (the loads of step j + distance write slot
     * (j + distance) % stages). */
    int read_slot(int j) const {
        const Expr slot = simplify(testing::consumer_slot(hooks, j, stages));
        internal_assert(is_const(slot)) << "the register slots must be constants, not " << slot << "\n";
        return (int)*as_const_int(slot);
    }

    /** Piece i at step `step` of the loop, its fragment accesses in slot `slot`. */
    Stmt at(size_t i, const Expr &step, int slot) const {
        std::map<std::string, int64_t> shift;
        for (const Fragment &f : loop.fragments) {
            shift[f.storage->name] = slot * f.elements;
        }
        // (A one-step body has no step variable: its loop is the streaming loop.)
        const For *op = loop.loop;
        Stmt s = loop.one_step.defined() ? pieces[i] : substitute(op->name, simplify(op->min + step), pieces[i]);
        return ShiftRegisterAccesses(shift).mutate(s);
    }

    /** Piece i at step `step` of tile `tile` of the streaming loop, outside the scope of the
     * lets between that loop and this one (they may depend on the tile, so they are inlined). */
    Stmt at_tile(size_t i, int step, int slot, const Expr &tile) const {
        Stmt s = at(i, step, slot);
        for (auto l = shared->lets.rbegin(); l != shared->lets.rend(); ++l) {
            s = substitute(l->first, l->second, s);
        }
        return substitute(shared->var, tile, s);
    }

    /** The fragments of step s (s >= steps: of the next tile, those that cross) into slot
     * s % stages. */
    void load_fragments(int s, std::vector<Stmt> &out) const {
        for (size_t i = 0; i < pieces.size(); i++) {
            if (loop.body.roles[i] != StmtRole::Producer || (s >= steps && !crosses(i))) continue;
            if (s < steps) {
                out.push_back(at(i, s, s % stages));
            } else {
                const Expr next = Variable::make(Int(32), shared->var) + 1;
                out.push_back(IfThenElse::make(next < shared->end, at_tile(i, s - steps, s % stages, next)));
            }
        }
    }

    /** Renames the slots after a tile whose step count is not a multiple of the stages: the
     * fragments of the next tile's step s' were loaded into slot (s' + steps) % stages and
     * belong in slot s' % stages. Only the crossing fragments: the others start over. */
    Stmt rename_slots() const {
        std::vector<Stmt> copy_out, copy_back;
        std::vector<std::pair<std::string, const Fragment *>> temporaries;
        for (const Fragment &f : loop.fragments) {
            if (!shared->crossing.count(f.func)) continue;
            const std::string tmp = f.storage->name + "_renamed";
            const Type t = f.storage->type;
            temporaries.emplace_back(tmp, &f);
            for (int slot = 0; slot < stages; slot++) {
                for (int64_t e = 0; e < f.elements; e++) {
                    const Expr to = (int)(slot * f.elements + e);
                    const Expr from = (int)(((slot + steps) % stages) * f.elements + e);
                    copy_out.push_back(Store::make(
                        tmp,
                        Load::make(t, f.storage->name, to, Buffer<>(), Parameter(), const_true(), ModulusRemainder()),
                        to, Parameter(), const_true(), ModulusRemainder()));
                    copy_back.push_back(
                        Store::make(f.storage->name,
                                    Load::make(t, tmp, from, Buffer<>(), Parameter(), const_true(), ModulusRemainder()),
                                    to, Parameter(), const_true(), ModulusRemainder()));
                }
            }
        }
        copy_out.insert(copy_out.end(), copy_back.begin(), copy_back.end());
        Stmt s = Block::make(copy_out);
        for (const auto &t : temporaries) {
            s = with_registers(t.first, t.second->storage->type, (int)(stages * t.second->elements), s);
        }
        return s;
    }

public:
    Builder(const FragmentLoop &loop, const std::vector<Stmt> &pieces, const SharedLoopContext *shared,
            const testing::Hooks &hooks)
        : loop(loop), pieces(pieces), shared(shared), hooks(hooks), steps(loop.extent), stages(loop.stages),
          distance(loop.stages - 1) {
        internal_assert(pieces.size() == loop.body.stmts.size());
    }

    FragmentPipeline build() const {
        FragmentPipeline result;
        std::vector<Stmt> body, prologue;
        for (int s = 0; s < distance; s++) {
            for (size_t i = 0; i < pieces.size(); i++) {
                if (loop.body.roles[i] != StmtRole::Producer) continue;
                if (crosses(i)) {
                    prologue.push_back(at_tile(i, s, s, shared->min));
                } else if (s < steps) {  // (a one-step body has one step to load)
                    body.push_back(at(i, s, s));
                }
            }
        }
        // A long loop keeps a loop over groups of `stages` steps, unrolled within the group so
        // that every slot index is still a constant; the steps after the last whole group whose
        // prefetches stay inside the tile are unrolled one by one (they hold the composition's
        // publication at step steps - distance and its loads of the next tile).
        const int grouped = steps > max_unrolled_steps ? (steps - distance) / stages * stages : 0;
        if (grouped > 0) {
            const std::string name = loop.loop->name + ".slots";
            const Expr group = Variable::make(Int(32), name);
            std::vector<Stmt> steps_of_group;
            for (int u = 0; u < stages; u++) {
                const Expr j = group * stages + u;
                for (size_t i = 0; i < pieces.size(); i++) {
                    if (loop.body.roles[i] == StmtRole::Producer) {
                        steps_of_group.push_back(at(i, j + distance, (u + distance) % stages));
                    }
                }
                for (size_t i = 0; i < pieces.size(); i++) {
                    if (loop.body.roles[i] == StmtRole::Compute) {
                        steps_of_group.push_back(at(i, j, read_slot(u)));
                    }
                }
            }
            body.push_back(
                For::make(name, 0, grouped / stages, ForType::Serial, DeviceAPI::None, Block::make(steps_of_group)));
        }
        for (int j = grouped; j < steps; j++) {
            if (shared && j == steps - distance) {
                body.push_back(shared->publish);
            }
            load_fragments(j + distance, body);
            for (size_t i = 0; i < pieces.size(); i++) {
                if (loop.body.roles[i] == StmtRole::Compute) body.push_back(at(i, j, read_slot(j)));
            }
        }
        if (shared && steps % stages != 0) {
            body.push_back(rename_slots());
        }
        result.steps = Block::make(body);
        if (shared) {
            // An empty streaming loop must not read its first tile's slot.
            result.prologue = IfThenElse::make(shared->min < shared->end, Block::make(prologue));
        }
        return result;
    }
};

}  // namespace

FragmentPipeline pipeline_fragments(const FragmentLoop &loop, const std::vector<Stmt> &pieces,
                                    const SharedLoopContext *shared, const testing::Hooks &hooks) {
    return Builder(loop, pieces, shared, hooks).build();
}

}  // namespace alcop
