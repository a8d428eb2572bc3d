//===- Reference.cpp - A float64 LibTorch interpreter of a cell -----------===//
//
// Walks the checked AST: every statement in order, per sequence and step,
// with `@` as a matrix-vector product and the built-ins as defined in
// docs/cell-language.md. LibTorch's autograd supplies the gradients. The
// only TU of cellc-check that includes <torch/torch.h>.
//
//===----------------------------------------------------------------------===//

#include "tools/cellc-check/Reference.h"

#include "frontend/AST.h"

#include <torch/torch.h>

using namespace cellc;
using namespace cellc::check;

namespace {

using Env = std::map<std::string, torch::Tensor>;

/// Errors in the tree are reported by throwing this; evaluateReference
/// turns it (and LibTorch's c10::Error) into the returned message.
struct ReferenceError {
  std::string message;
};

[[noreturn]] void fail(const ast::Location &loc, const std::string &message) {
  throw ReferenceError{"line " + std::to_string(loc.line) + ":" +
                       std::to_string(loc.col) + ": " + message};
}

const torch::TensorOptions kDouble = torch::TensorOptions(torch::kFloat64);

torch::Tensor layerNorm(const torch::Tensor &e) {
  torch::Tensor centered = e - e.mean();
  torch::Tensor variance = (centered * centered).mean(); // biased
  return centered / torch::sqrt(variance + 1e-5);
}

torch::Tensor evaluate(const ast::Expr &expr, const Env &env);

torch::Tensor evaluateCall(const ast::CallExpr &call, const Env &env) {
  std::vector<torch::Tensor> args;
  for (const auto &arg : call.args)
    args.push_back(evaluate(*arg, env));
  const std::string &f = call.callee;
  auto unary = [&]() -> const torch::Tensor & {
    if (args.size() != 1)
      fail(call.loc, f + " takes one argument");
    return args[0];
  };
  if (f == "sigmoid")
    return torch::sigmoid(unary());
  if (f == "tanh")
    return torch::tanh(unary());
  if (f == "relu")
    return torch::relu(unary());
  if (f == "exp")
    return torch::exp(unary());
  if (f == "log")
    return torch::log(unary());
  // LibTorch's softplus is linear above 20: log1p(exp(x)) overflows there
  // and its gradient becomes inf/inf (a random cell found it).
  if (f == "softplus")
    return torch::softplus(unary());
  if (f == "hardsigmoid")
    return torch::hardsigmoid(unary());
  if (f == "gelu")
    return torch::gelu(unary(), "tanh");
  if (f == "layernorm") {
    if (args.size() == 1)
      return layerNorm(args[0]);
    if (args.size() == 3)
      return layerNorm(args[0]) * args[1] + args[2];
    fail(call.loc, "layernorm takes 1 or 3 arguments");
  }
  if (f == "concat")
    return torch::cat(args);
  fail(call.loc, "the reference does not know function '" + f + "'");
}

torch::Tensor evaluate(const ast::Expr &expr, const Env &env) {
  switch (expr.kind) {
  case ast::Expr::Kind::Number:
    return torch::scalar_tensor(
        static_cast<const ast::NumberExpr &>(expr).value, kDouble);
  case ast::Expr::Kind::Name: {
    const auto &name = static_cast<const ast::NameExpr &>(expr);
    auto it = env.find(name.spelling());
    if (it == env.end())
      fail(expr.loc, "'" + name.spelling() + "' has no value");
    return it->second;
  }
  case ast::Expr::Kind::Unary:
    return -evaluate(*static_cast<const ast::UnaryExpr &>(expr).operand, env);
  case ast::Expr::Kind::Binary: {
    const auto &binary = static_cast<const ast::BinaryExpr &>(expr);
    torch::Tensor lhs = evaluate(*binary.lhs, env);
    torch::Tensor rhs = evaluate(*binary.rhs, env);
    switch (binary.op) {
    case '+':
      return lhs + rhs;
    case '-':
      return lhs - rhs;
    case '*':
      return lhs * rhs;
    case '/':
      return lhs / rhs;
    }
    fail(expr.loc, std::string("unknown operator ") + binary.op);
  }
  case ast::Expr::Kind::MatVec: {
    const auto &matVec = static_cast<const ast::MatVecExpr &>(expr);
    return torch::mv(evaluate(*matVec.matrix, env),
                     evaluate(*matVec.vector, env));
  }
  case ast::Expr::Kind::Call:
    return evaluateCall(static_cast<const ast::CallExpr &>(expr), env);
  }
  fail(expr.loc, "unknown expression");
}

/// Runs the statements of one step: `env` holds inputs, states and params on
/// entry and every defined value on return.
void runStep(const ast::Cell &cell, Env &env) {
  for (const ast::Stmt &stmt : cell.stmts) {
    if (stmt.isSplit()) {
      const auto &call = static_cast<const ast::CallExpr &>(*stmt.value);
      torch::Tensor whole = evaluate(*call.args[0], env);
      std::vector<torch::Tensor> parts =
          torch::chunk(whole, static_cast<int64_t>(stmt.targets.size()));
      if (parts.size() != stmt.targets.size() ||
          whole.size(0) % static_cast<int64_t>(stmt.targets.size()) != 0)
        fail(stmt.loc, "split into unequal parts");
      for (size_t i = 0; i < parts.size(); ++i)
        env[stmt.targets[i].spelling()] = parts[i];
      continue;
    }
    const ast::Target &target = stmt.targets.at(0);
    torch::Tensor value = evaluate(*stmt.value, env);
    // `h' = 0.5`: a scalar next value broadcasts to the state's shape, as
    // in the compiled cell.
    if (target.primed && value.dim() == 0)
      value = value.expand_as(env.at(target.name));
    env[target.spelling()] = value;
  }
}

int64_t evaluateDim(const ast::Cell &cell, const DimExpr &dim,
                    const std::map<std::string, int64_t> &sizes) {
  std::map<std::string, DimExpr> bindings(cell.dimBindings.begin(),
                                          cell.dimBindings.end());
  std::optional<int64_t> value = dim.substitute(bindings).evaluate(sizes);
  if (!value)
    throw ReferenceError{"dimension " + dim.str() + " has no value"};
  return *value;
}

const ast::Decl *findDecl(const ast::Cell &cell, const std::string &name) {
  for (const auto *decls : {&cell.inputs, &cell.states, &cell.params})
    for (const ast::Decl &decl : *decls)
      if (decl.name == name)
        return &decl;
  return nullptr;
}

std::vector<int64_t> shapeOf(const ast::Cell &cell, const ast::Decl &decl,
                             const std::map<std::string, int64_t> &sizes) {
  std::vector<int64_t> shape;
  for (const DimExpr &dim : decl.shape.dims)
    shape.push_back(evaluateDim(cell, dim, sizes));
  return shape;
}

/// A leaf tensor holding a copy of `data` in `shape`.
torch::Tensor leaf(const std::vector<double> &data,
                   const std::vector<int64_t> &shape, bool requiresGrad,
                   const std::string &what,
                   const torch::TensorOptions &options = kDouble) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  if (static_cast<int64_t>(data.size()) != count)
    throw ReferenceError{what + " has " + std::to_string(data.size()) +
                         " values, its shape needs " + std::to_string(count)};
  torch::Tensor tensor =
      torch::from_blob(const_cast<double *>(data.data()), shape, kDouble)
          .to(options)
          .clone();
  return tensor.set_requires_grad(requiresGrad);
}

std::vector<double> toVector(const torch::Tensor &tensor) {
  torch::Tensor flat = tensor.detach().contiguous().to(torch::kFloat64);
  return std::vector<double>(flat.data_ptr<double>(),
                             flat.data_ptr<double>() + flat.numel());
}

const std::vector<double> &
lookup(const std::map<std::string, std::vector<double>> &arrays,
       const std::string &name, const std::string &what) {
  auto it = arrays.find(name);
  if (it == arrays.end())
    throw ReferenceError{"the batch has no " + what + " '" + name + "'"};
  return it->second;
}

/// [T][B] vectors (undefined at padded steps) as one [T, B, LEN] tensor,
/// zeros where undefined.
torch::Tensor stackWithZeros(const std::vector<std::vector<torch::Tensor>> &rows,
                             const torch::TensorOptions &options) {
  int64_t width = 0;
  for (const auto &step : rows)
    for (const torch::Tensor &row : step)
      if (row.defined())
        width = row.size(0);
  std::vector<torch::Tensor> flat;
  for (const auto &step : rows)
    for (const torch::Tensor &row : step)
      flat.push_back(row.defined() ? row.detach()
                                   : torch::zeros({width}, options));
  return torch::stack(flat).reshape(
      {int64_t(rows.size()), int64_t(rows.at(0).size()), width});
}

/// d loss / d leaf for each leaf: zeros for a leaf the loss does not depend
/// on, and for every leaf when it depends on none (`h' = 0.5`), where the
/// loss has no autograd graph for LibTorch to walk.
std::vector<std::vector<double>>
gradients(const torch::Tensor &loss, const std::vector<torch::Tensor> &leaves) {
  std::vector<torch::Tensor> grads(leaves.size());
  if (loss.requires_grad())
    grads = torch::autograd::grad({loss}, leaves, /*grad_outputs=*/{},
                                  /*retain_graph=*/false,
                                  /*create_graph=*/false,
                                  /*allow_unused=*/true);
  std::vector<std::vector<double>> result;
  for (size_t i = 0; i < leaves.size(); ++i)
    result.push_back(grads[i].defined()
                         ? toVector(grads[i])
                         : std::vector<double>(leaves[i].numel(), 0.0));
  return result;
}

void evaluateBatch(const ast::Cell &cell,
                   const std::map<std::string, int64_t> &sizes,
                   const Batch &batch, bool withGradients, Evaluation &result,
                   const torch::TensorOptions &options) {
  torch::AutoGradMode gradMode(withGradients);
  const int64_t T = batch.T, B = batch.B;

  std::map<std::string, torch::Tensor> inputs, initialStates, params;
  for (const ast::Decl &decl : cell.inputs) {
    std::vector<int64_t> shape = {T, B, shapeOf(cell, decl, sizes).at(0)};
    inputs[decl.name] = leaf(lookup(batch.inputs, decl.name, "input"), shape,
                             withGradients, "input " + decl.name, options);
  }
  for (const ast::Decl &decl : cell.states) {
    std::vector<int64_t> shape = {B, shapeOf(cell, decl, sizes).at(0)};
    auto it = batch.initialStates.find(decl.name);
    std::vector<double> zeros(shape[0] * shape[1], 0.0);
    initialStates[decl.name] =
        leaf(it == batch.initialStates.end() ? zeros : it->second, shape,
             withGradients, "initial state " + decl.name, options);
  }
  for (const ast::Decl &decl : cell.params)
    params[decl.name] =
        leaf(lookup(batch.params, decl.name, "param"),
             shapeOf(cell, decl, sizes), withGradients, "param " + decl.name,
             options);

  std::string outputName = cell.outputs.empty()
                               ? cell.states.at(0).name + "'"
                               : cell.outputs.front().target.spelling();
  int64_t outputWidth = -1;
  // out[t][b], zeros at padded steps; final[state][b].
  std::vector<std::vector<torch::Tensor>> out(T, std::vector<torch::Tensor>(B));
  // probed[name][t][b], as out.
  std::map<std::string, std::vector<std::vector<torch::Tensor>>> probed;
  for (const std::string &name : batch.probes)
    probed[name].assign(T, std::vector<torch::Tensor>(B));
  std::map<std::string, std::vector<torch::Tensor>> finals;
  for (int64_t b = 0; b < B; ++b) {
    int64_t length = batch.lengths.at(b);
    if (length < 1 || length > T)
      throw ReferenceError{"lengths[" + std::to_string(b) +
                           "] = " + std::to_string(length) + " is outside 1.." +
                           std::to_string(T)};
    std::map<std::string, torch::Tensor> state;
    for (const ast::Decl &decl : cell.states)
      state[decl.name] = initialStates[decl.name][b];
    for (int64_t i = 0; i < length; ++i) {
      int64_t t = batch.reverse ? length - 1 - i : i;
      Env env(params.begin(), params.end());
      for (const ast::Decl &decl : cell.inputs)
        env[decl.name] = inputs[decl.name][t][b];
      for (const ast::Decl &decl : cell.states)
        env[decl.name] = state[decl.name];
      runStep(cell, env);
      for (const ast::Decl &decl : cell.states)
        state[decl.name] = env.at(decl.name + "'");
      auto output = env.find(outputName);
      if (output == env.end())
        throw ReferenceError{"the output '" + outputName + "' has no value"};
      out[t][b] = output->second;
      outputWidth = output->second.size(0);
      for (auto &[name, values] : probed) {
        auto value = env.find(name);
        if (value == env.end() || value->second.dim() != 1)
          throw ReferenceError{"the probe '" + name + "' is not a vector"};
        values[t][b] = value->second;
      }
    }
    for (const ast::Decl &decl : cell.states)
      finals[decl.name].push_back(state[decl.name]);
  }
  // Padded steps emit zeros.
  std::vector<torch::Tensor> rows;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      rows.push_back(out[t][b].defined()
                         ? out[t][b]
                         : torch::zeros({outputWidth}, options));
  torch::Tensor output = torch::stack(rows).reshape({T, B, outputWidth});
  result.probes.clear();
  for (auto &[name, values] : probed)
    result.probes[name] = toVector(stackWithZeros(values, options));

  torch::Tensor loss = torch::zeros({}, kDouble);
  if (!batch.outputGradient.empty())
    loss = loss + (output * leaf(batch.outputGradient, {T, B, outputWidth},
                                 false, "output gradient", options))
                      .sum();
  result.output = toVector(output);
  for (const ast::Decl &decl : cell.states) {
    torch::Tensor final = torch::stack(finals[decl.name]);
    result.finalStates[decl.name] = toVector(final);
    auto it = batch.finalStateGradients.find(decl.name);
    if (it != batch.finalStateGradients.end() && !it->second.empty())
      loss = loss + (final * leaf(it->second, {final.size(0), final.size(1)},
                                  false, "final state gradient " + decl.name,
                                  options))
                        .sum();
  }
  result.loss = loss.item<double>();
  if (!withGradients)
    return;

  std::vector<torch::Tensor> leaves;
  std::vector<
      std::pair<std::map<std::string, std::vector<double>> *, std::string>>
      targets;
  auto add = [&](std::map<std::string, torch::Tensor> &tensors,
                 std::map<std::string, std::vector<double>> &into) {
    for (auto &[name, tensor] : tensors) {
      leaves.push_back(tensor);
      targets.push_back({&into, name});
    }
  };
  add(inputs, result.inputGradients);
  add(initialStates, result.initialStateGradients);
  add(params, result.paramGradients);
  std::vector<std::vector<double>> grads = gradients(loss, leaves);
  for (size_t i = 0; i < leaves.size(); ++i)
    (*targets[i].first)[targets[i].second] = std::move(grads[i]);
}

} // namespace

std::string check::evaluateReference(
    const ast::Cell &cell, const std::map<std::string, int64_t> &sizes,
    const Batch &batch, bool withGradients, Evaluation &result,
    bool singlePrecision) {
  try {
    evaluateBatch(cell, sizes, batch, withGradients, result,
                  singlePrecision ? torch::TensorOptions(torch::kFloat32)
                                  : kDouble);
    return "";
  } catch (const ReferenceError &error) {
    return "reference: " + error.message;
  } catch (const std::exception &error) {
    return std::string("reference: LibTorch: ") + error.what();
  }
}

std::vector<int64_t>
check::declaredShape(const ast::Cell &cell, const std::string &name,
                     const std::map<std::string, int64_t> &sizes) {
  try {
    const ast::Decl *decl = findDecl(cell, name);
    return decl ? shapeOf(cell, *decl, sizes) : std::vector<int64_t>{};
  } catch (const ReferenceError &) {
    return {};
  }
}
