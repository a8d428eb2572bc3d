//===- Params.cpp - Param values given to cellc-check ---------------------===//

#include "tools/cellc-check/Params.h"

#include "cellrt/Plan.h"
#include "frontend/AST.h"
#include "jit/Npz.h"

#include <algorithm>

using namespace cellc;
using namespace cellc::check;

namespace {

/// The archive being read and what has been bound so far.
struct Binder {
  const std::string &path;
  const cellrt::Plan &plan;
  const ast::Cell &cell;
  const std::map<std::string, int64_t> &fixedDims;
  GivenParams &given;
  /// The param whose shape bound each dim, for messages.
  std::map<std::string, std::string> origins;
};

/// `[H, I]`: the param's shape as the cell file writes it.
std::string declaredShape(const Binder &binder, const std::string &name) {
  std::vector<DimExpr> dims;
  for (const ast::Decl &decl : binder.cell.params)
    if (decl.name == name)
      dims = decl.declared.dims;
  if (dims.empty())
    dims = binder.plan.findParam(name)->shape;
  std::string text = "[";
  for (size_t k = 0; k < dims.size(); ++k)
    text += (k ? ", " : "") + dims[k].str();
  return text + "]";
}

/// "PATH: param NAME has shape [6, 7], ": how each error about one starts.
std::string aboutParam(const Binder &binder, const std::string &name) {
  return binder.path + ": param " + name + " has shape " +
         npy::shapeString(binder.given.shapes.at(name)) + ", ";
}

/// Every param's array, float32, and no array that is no param.
std::string takeArrays(Binder &binder) {
  std::map<std::string, npy::Array> arrays;
  if (std::string error = npy::readArchive(binder.path, arrays); !error.empty())
    return error;
  for (const cellrt::ParamDecl &param : binder.plan.params) {
    auto found = arrays.find(param.name);
    if (found == arrays.end())
      return binder.path + ": no array for param " + param.name + " of cell " +
             binder.plan.cellName;
    if (found->second.dtype != npy::DType::Float32)
      return binder.path + ": param " + param.name +
             " is not float32 (the check reads float32 params)";
    binder.given.shapes[param.name] = found->second.shape;
    binder.given.values[param.name] = std::move(found->second.floats);
    arrays.erase(found);
  }
  if (!arrays.empty())
    return binder.path + ": array " + arrays.begin()->first +
           " is no param of cell " + binder.plan.cellName;
  return "";
}

/// Binds the one dim of `dim` not yet bound, if there is exactly one, to
/// what `extent` makes it.
std::string solve(Binder &binder, const std::string &name, const DimExpr &dim,
                  int64_t extent) {
  std::map<std::string, int64_t> &bound = binder.given.dims;
  int64_t rest = extent - dim.getConstant();
  std::vector<DimExpr::Term> unknown;
  for (const DimExpr::Term &term : dim.getTerms()) {
    auto value = bound.find(term.first);
    if (value == bound.end())
      unknown.push_back(term);
    else
      rest -= term.second * value->second;
  }
  if (unknown.size() != 1)
    return "";
  auto [symbol, coefficient] = unknown.front();
  if (rest % coefficient != 0 || rest / coefficient < 1)
    return aboutParam(binder, name) + "but the cell declares " +
           declaredShape(binder, name) + ": no size of " + symbol + " gives " +
           std::to_string(extent);
  bound[symbol] = rest / coefficient;
  binder.origins[symbol] = name;
  return "";
}

/// Binds every dim that some param's extent determines, repeating while
/// one binding lets another expression be solved.
std::string bindDims(Binder &binder) {
  for (size_t before = SIZE_MAX; before != binder.given.dims.size();) {
    before = binder.given.dims.size();
    for (const cellrt::ParamDecl &param : binder.plan.params) {
      const std::vector<int64_t> &shape = binder.given.shapes[param.name];
      if (shape.size() != param.shape.size())
        return aboutParam(binder, param.name) + "but the cell declares " +
               declaredShape(binder, param.name);
      for (size_t k = 0; k < shape.size(); ++k)
        if (std::string error =
                solve(binder, param.name, param.shape[k], shape[k]);
            !error.empty())
          return error;
    }
  }
  return "";
}

/// Where the sizes of a param's declared dims come from: "H=6 from param
/// Wx", "--dim H=4".
std::string explainSizes(const Binder &binder, const std::string &name) {
  std::vector<std::string> reasons;
  for (const ast::Decl &decl : binder.cell.params) {
    if (decl.name != name)
      continue;
    for (const DimExpr &dim : decl.declared.dims)
      for (const auto &[symbol, coefficient] : dim.getTerms()) {
        std::string reason;
        if (auto fixed = binder.fixedDims.find(symbol);
            fixed != binder.fixedDims.end())
          reason = "--dim " + symbol + "=" + std::to_string(fixed->second);
        else if (auto origin = binder.origins.find(symbol);
                 origin != binder.origins.end())
          reason = symbol + "=" + std::to_string(binder.given.dims.at(symbol)) +
                   " from param " + origin->second;
        if (!reason.empty() &&
            std::find(reasons.begin(), reasons.end(), reason) == reasons.end())
          reasons.push_back(reason);
      }
  }
  std::string text;
  for (const std::string &reason : reasons)
    text += (text.empty() ? " (" : ", ") + reason;
  return text.empty() ? "" : text + ")";
}

/// Every param's shape against what the bound dims make it.
std::string checkShapes(const Binder &binder) {
  for (const cellrt::ParamDecl &param : binder.plan.params) {
    std::vector<int64_t> expected;
    for (const DimExpr &dim : param.shape) {
      std::optional<int64_t> value = dim.evaluate(binder.given.dims);
      if (!value)
        return aboutParam(binder, param.name) + "which does not tell the " +
               "sizes in " + dim.str() + " apart; fix one with --dim";
      expected.push_back(*value);
    }
    if (expected != binder.given.shapes.at(param.name))
      return aboutParam(binder, param.name) + "but the cell declares " +
             declaredShape(binder, param.name) + ", which is " +
             npy::shapeString(expected) + " here" +
             explainSizes(binder, param.name);
  }
  return "";
}

} // namespace

std::string check::readGivenParams(
    const std::string &path, const cellrt::Plan &plan, const ast::Cell &cell,
    const std::map<std::string, int64_t> &fixedDims, GivenParams &given) {
  given = GivenParams();
  Binder binder{path, plan, cell, fixedDims, given, {}};
  if (std::string error = takeArrays(binder); !error.empty())
    return error;
  if (std::string error = bindDims(binder); !error.empty())
    return error;
  return checkShapes(binder);
}
