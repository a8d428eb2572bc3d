//===- InputProducts.cpp - Products of inputs given by the caller ---------===//
//
// Cell::withInputProducts rewrites a plan so that each `pre gemm` of a
// weight and an input (the products cellc hoists out of the time loop)
// becomes an input of its own: the step kernels read it where they read
// the product's buffer, and the backward writes its gradient where it wrote
// the buffer's, without the products' own backward (`bpre gemm` into the
// input, `wgrad` of the weight), which the caller runs once. The kernels
// are unchanged: they read and write through the plan's operands.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"

#include <algorithm>

using namespace cellrt;

namespace {

bool atColumnZero(const Ref &ref) {
  return ref.column.isConstant() && ref.column.getConstant() == 0;
}

bool refersTo(const Ref &ref, Ref::Kind kind, const std::string &name) {
  return ref.kind == kind && ref.name == name;
}

/// A `pre gemm seq:V W input:X` and, in a plan with backward directives,
/// its `bpre gemm dinput:X W seq:DV` and `wgrad W seq:DV input:X`.
struct HoistedProduct {
  size_t pre;
  std::optional<size_t> bpre, wgrad;
  std::string buffer, gradientBuffer, weight, source;
};

std::vector<HoistedProduct> findProducts(const Plan &plan) {
  std::vector<HoistedProduct> products;
  const std::vector<Operation> &ops = plan.operations;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation &op = ops[i];
    if (op.phase != Phase::Pre || op.kind != Operation::Kind::Gemm ||
        op.gemmInput().kind != Ref::Kind::Input ||
        op.gemmOutput().kind != Ref::Kind::Seq ||
        !atColumnZero(op.gemmInput()) || !atColumnZero(op.gemmOutput()))
      continue;
    HoistedProduct product{i, {}, {}, op.gemmOutput().name, "", op.weight,
                           op.gemmInput().name};
    for (size_t j = 0; j < ops.size(); ++j) {
      const Operation &other = ops[j];
      if (other.weight != op.weight)
        continue;
      if (other.phase == Phase::BPre &&
          other.kind == Operation::Kind::Gemm &&
          refersTo(other.gemmOutput(), Ref::Kind::Dinput, product.source) &&
          other.gemmInput().kind == Ref::Kind::Seq) {
        product.bpre = j;
        product.gradientBuffer = other.gemmInput().name;
      } else if (other.kind == Operation::Kind::Wgrad &&
                 refersTo(other.wgradX(), Ref::Kind::Input, product.source)) {
        product.wgrad = j;
      }
    }
    products.push_back(product);
  }
  return products;
}

/// Points every reference to the product's buffers at its new input.
void redirect(Plan &plan, const HoistedProduct &product,
              const std::string &input) {
  for (Operation &op : plan.operations)
    for (Ref &ref : op.operands) {
      if (refersTo(ref, Ref::Kind::Seq, product.buffer)) {
        ref.kind = Ref::Kind::Input;
        ref.name = input;
      } else if (!product.gradientBuffer.empty() &&
                 refersTo(ref, Ref::Kind::Seq, product.gradientBuffer)) {
        ref.kind = Ref::Kind::Dinput;
        ref.name = input;
      }
    }
}

/// Drops the inputs no operation refers to any more.
void dropUnusedInputs(Plan &plan) {
  auto used = [&](const std::string &name) {
    for (const Operation &op : plan.operations)
      for (const Ref &ref : op.operands)
        if ((ref.kind == Ref::Kind::Input || ref.kind == Ref::Kind::Dinput) &&
            ref.name == name)
          return true;
    return false;
  };
  plan.inputs.erase(std::remove_if(plan.inputs.begin(), plan.inputs.end(),
                                   [&](const VectorDecl &input) {
                                     return !used(input.name);
                                   }),
                    plan.inputs.end());
}

} // namespace

Expected<Cell>
Cell::withInputProducts(std::vector<InputProduct> &products) const {
  products.clear();
  std::vector<HoistedProduct> found = findProducts(plan);
  Plan derived = plan;
  std::vector<size_t> dropped;
  for (const HoistedProduct &product : found) {
    if (plan.hasBackward() && (!product.bpre || !product.wgrad))
      return Status::error("cell " + plan.cellName + ": the product " +
                           product.buffer + " has no backward to take over");
    std::string input = "pre_" + product.buffer;
    const BufferDecl *gradient = product.gradientBuffer.empty()
                                     ? nullptr
                                     : plan.findBuffer(product.gradientBuffer);
    derived.inputs.push_back({input, plan.findBuffer(product.buffer)->length,
                              gradient && gradient->written});
    redirect(derived, product, input);
    dropped.push_back(product.pre);
    if (product.bpre)
      dropped.insert(dropped.end(), {*product.bpre, *product.wgrad});
    products.push_back({input, product.weight, product.source});
    for (const std::string &buffer : {product.buffer, product.gradientBuffer})
      derived.buffers.erase(
          std::remove_if(derived.buffers.begin(), derived.buffers.end(),
                         [&](const BufferDecl &decl) {
                           return decl.name == buffer;
                         }),
          derived.buffers.end());
  }
  std::sort(dropped.rbegin(), dropped.rend());
  for (size_t index : dropped)
    derived.operations.erase(derived.operations.begin() + index);
  dropUnusedInputs(derived);
  // The rewrite passes the same checks as a plan cellc wrote.
  if (Status checked = validatePlan(derived); !checked.ok())
    return Status::error("cell " + plan.cellName +
                         " with its input products: " + checked.message());
  return create(std::move(derived), device, kernelNames);
}
