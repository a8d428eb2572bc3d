//===- DimBinder.h - Dims from the shapes a caller passes -------*- C++ -*-===//
//
// Internal to cellrt: solves the plan's dimensions from the arrays' shapes
// (one-unknown linear equations until nothing changes) and checks every
// array against the result, naming the array and both shapes on a mismatch.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_DIMBINDER_H
#define CELLRT_DIMBINDER_H

#include "cellrt/Runtime.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace cellrt::detail {


struct PlanLayout;

/// The sizes of one call: T, B and the value of every plan dim.
struct Sizes {
  int64_t steps = 0, batch = 0;
  std::map<std::string, int64_t> dims;
  /// The plan evaluated for these sizes (made by DimBinder::bind).
  std::shared_ptr<const PlanLayout> layout;
  /// The array each dim's value was read from, so a mismatch can name both
  /// arrays.
  struct Source {
    std::string label;          // input 'x'
    std::vector<int64_t> shape; // formatted only for an error message
  };
  std::map<std::string, Source> boundBy;
  /// Params passed by name: the plan index of each entry of
  /// ForwardArgs::params, in the map's order (SizesCache gives these sizes
  /// only to calls with the same names), so that a call finds its params
  /// in one walk of the map.
  std::vector<int32_t> paramOrder;

  int64_t eval(const DimExpr &expr) const { return *expr.evaluate(dims); }
};

/// One array the caller passed, to be matched against its declared shape.
struct ShapeConstraint {
  std::string label;
  std::vector<std::string> declaredText;
  std::vector<DimExpr> declared;
  std::vector<int64_t> actual;
};

/// Checks every length against [1, T].
Status checkLengths(const ForwardArgs &args, const Sizes &sizes);

/// The sizes of the last few shapes a Cell bound, by the shapes that gave
/// them: a call whose arrays are the same ones present with the same shapes
/// (and the same param names) gets the same sizes without solving and
/// checking again; its lengths are still checked. A decoding step binds the
/// same shapes thousands of times, and solving them, with its strings and
/// maps, was most of a small step's fixed cost. Several entries, because
/// models call one Cell with a few shapes in turn (the NMT decoder's two
/// layers at every step): with one entry each call evicted the other's.
/// Safe to share between threads.
class SizesCache {
public:
  /// Shapes kept, the most recently used first.
  static constexpr size_t kEntries = 8;

  Expected<std::shared_ptr<const Sizes>> bind(const Plan &plan,
                                              const ForwardArgs &args);

private:
  struct Entry {
    std::vector<int64_t> shapes;
    std::vector<std::string> params;
    std::shared_ptr<const Sizes> sizes;
  };
  std::mutex mutex;
  std::vector<Entry> entries;
};

/// Binds dims by solving one-unknown linear equations until nothing changes,
/// then checks every array against the result.
class DimBinder {
public:
  DimBinder(const Plan &plan, const ForwardArgs &args)
      : plan(plan), args(args) {}
  Expected<Sizes> bind();

private:
  Status collect();
  void add(const std::string &label, std::vector<std::string> text,
           std::vector<DimExpr> declared, const std::vector<int64_t> &actual);
  void addVector(const std::string &label, const DimExpr &length,
                 const std::vector<int64_t> &actual, bool perStep);
  bool solveOne(const DimExpr &expr, int64_t value,
                const ShapeConstraint &from);
  Status check(const ShapeConstraint &constraint) const;

  const Plan &plan;
  const ForwardArgs &args;
  Sizes sizes;
  std::vector<ShapeConstraint> constraints;
};


/// Checks one array against the bound sizes: an error naming the array and
/// both shapes.
Status checkConstraint(const ShapeConstraint &constraint,
                              const Sizes &sizes);

} // namespace cellrt::detail

#endif // CELLRT_DIMBINDER_H
