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

/** The launch bounds of the kernels inside the productions `requests` names, by the kernel's
 * outermost block loop (a node, not a name: the kernels of a Func's specializations share
 * their loops' names but may differ in block size). */
class CollectLaunchBounds : public IRVisitor {
    using IRVisitor::visit;
    const std::map<std::string, int> &requests;
    int blocks = 0;  // of the Func being produced; 0 outside requested productions

    void visit(const ProducerConsumer *op) override {
        auto it = requests.find(op->name);
        if (!op->is_producer || it == requests.end()) {
            IRVisitor::visit(op);
            return;
        }
        const int outer = blocks;
        blocks = it->second;
        op->body.accept(this);
        blocks = outer;
    }

    void visit(const For *op) override {
        if (!blocks || op->for_type != ForType::GPUBlock || op->device_api != DeviceAPI::CUDA) {
            IRVisitor::visit(op);
            return;
        }
        BlockSize size;
        op->body.accept(&size);
        if (size.constant && size.threads > 0) kernels[op] = {(int)size.threads, blocks};
    }

public:
    explicit CollectLaunchBounds(const std::map<std::string, int> &requests) : requests(requests) {
    }
    std::map<const For *, LaunchBounds> kernels;
};

/** Marks the body of each kernel's innermost block loop with its launch bounds. */
class MarkLaunchBounds : public IRMutator {
    using IRMutator::visit;
    const std::map<const For *, LaunchBounds> &kernels;

    Stmt visit(const For *op) override {
        auto it = kernels.find(op);
        if (it == kernels.end()) return IRMutator::visit(op);
        return mark_innermost(
            op, Call::make(Int(32), launch_bounds_name, {it->second.threads, it->second.blocks_per_sm}, Call::Extern));
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
    explicit MarkLaunchBounds(const std::map<const For *, LaunchBounds> &kernels) : kernels(kernels) {
    }
};

}  // namespace

std::map<std::string, LaunchBounds> kernel_launch_bounds(const Stmt &s,
                                                         const std::map<std::string, int> &blocks_per_sm) {
    if (blocks_per_sm.empty()) return {};
    CollectLaunchBounds collect(blocks_per_sm);
    s.accept(&collect);
    std::map<std::string, LaunchBounds> bounds;
    for (const auto &[loop, b] : collect.kernels) {
        bounds[loop->name] = b;
    }
    return bounds;
}

Stmt mark_launch_bounds(const Stmt &s, const std::map<std::string, int> &blocks_per_sm) {
    if (blocks_per_sm.empty()) return s;
    CollectLaunchBounds collect(blocks_per_sm);
    s.accept(&collect);
    return MarkLaunchBounds(collect.kernels).mutate(s);
}

}  // namespace alcop
