#include "codegen/LaunchBounds.h"

#include "codegen/AsyncCopyMarkers.h"

#include <algorithm>

namespace alcop {

using namespace Halide;
using namespace Halide::Internal;

namespace {

/** The largest block of the thread loop nests in a kernel body, or 0 if an extent is not a
 * constant. */
class BlockSize : public IRVisitor {
    using IRVisitor::visit;
    int64_t nest = 1;  // product of the enclosing thread loops' extents

    void visit(const For *op) override {
        if (op->for_type != ForType::GPUThread) {
            IRVisitor::visit(op);
            return;
        }
        const int64_t *extent = as_const_int(op->extent);
        if (!extent) {
            constant = false;
            return;
        }
        const int64_t outer = nest;
        nest *= *extent;
        threads = std::max(threads, nest);
        op->body.accept(this);
        nest = outer;
    }

public:
    int64_t threads = 0;
    bool constant = true;
};

class MarkLaunchBounds : public IRMutator {
    using IRMutator::visit;
    const std::map<std::string, int> &requests;
    int blocks = 0;  // of the Func being produced; 0 outside requested productions

    Stmt visit(const ProducerConsumer *op) override {
        auto it = requests.find(op->name);
        if (!op->is_producer || it == requests.end()) return IRMutator::visit(op);
        const int outer = blocks;
        blocks = it->second;
        Stmt body = mutate(op->body);
        blocks = outer;
        return ProducerConsumer::make_produce(op->name, body);
    }

    Stmt visit(const For *op) override {
        if (!blocks || op->for_type != ForType::GPUBlock || op->device_api != DeviceAPI::CUDA) {
            return IRMutator::visit(op);
        }
        // The kernel: mark the body of its innermost block loop.
        BlockSize size;
        op->body.accept(&size);
        if (!size.constant || size.threads <= 0) return op;
        return mark_innermost(op, Call::make(Int(32), launch_bounds_name, {(int)size.threads, blocks}, Call::Extern));
    }

    static Stmt mark_innermost(const For *op, const Expr &marker) {
        Stmt body = op->body;
        if (const For *inner = body.as<For>(); inner && inner->for_type == ForType::GPUBlock) {
            body = mark_innermost(inner, marker);
        } else {
            body = Block::make(Evaluate::make(marker), body);
        }
        return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
    }

public:
    MarkLaunchBounds(const std::map<std::string, int> &requests) : requests(requests) {
    }
};

}  // namespace

Stmt mark_launch_bounds(const Stmt &s, const std::map<std::string, int> &blocks_per_sm) {
    if (blocks_per_sm.empty()) return s;
    return MarkLaunchBounds(blocks_per_sm).mutate(s);
}

}  // namespace alcop
