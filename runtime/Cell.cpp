//===- Cell.cpp - The Cell entry points and packed weights ------------------===//
//
// Loading a plan and image, the forward, training forward, backward and
// dims calls (each an Execution over an Executable), the Tape, and
// packWeights.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"
#include "Gemm.h"
#include "TiledSteps.h"

#include "cellrt/PlanTables.h"

#include <typeinfo>

using namespace cellrt;
using namespace cellrt::detail;

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Expected<Cell> Cell::load(const cellrt_image &image) {
  if (!image.plan)
    return Status::error("cellrt_image has no plan");
  Expected<Plan> plan = decodePlanImage(image.plan);
  if (!plan)
    return plan.getStatus();
  int64_t needed = plan->numKernelsUsed();
  if (image.num_kernels < needed)
    return Status::error("plan of cell " + quote(plan->cellName) +
                         " uses kernel " + std::to_string(needed - 1) +
                         " but the image has only " +
                         std::to_string(image.num_kernels) + " kernels");
  if (image.num_kernels > 0 && !image.kernels)
    return Status::error("cellrt_image has no kernel table");
  std::vector<cellrt_kernel_fn> kernels;
  std::vector<std::string> names;
  for (int64_t i = 0; i < image.num_kernels; ++i) {
    if (!image.kernels[i])
      return Status::error("kernel " + std::to_string(i) + " of cell " +
                           quote(plan->cellName) + " is null");
    kernels.push_back(image.kernels[i]);
    const char *name = image.kernel_names ? image.kernel_names[i] : nullptr;
    names.push_back(name ? name : "");
  }
  Precision precision = plan->precision;
  if (precision == Precision::BF16)
    if (Status available = bf16Available(); !available.ok())
      return Status::error("cell " + quote(plan->cellName) + ": " +
                           available.message());
  return create(
      std::move(*plan),
      std::make_shared<detail::HostDevice>(std::move(kernels), precision),
      std::move(names));
}

Expected<Cell> Cell::withPrecision(Precision precision) const {
  if (precision == device->precision())
    return *this;
  // Only the CPU device itself is remade in another precision: a device
  // derived from it (another memory, another backend) keeps its own.
  auto *host = dynamic_cast<const HostDevice *>(device.get());
  if (!host || typeid(*device) != typeid(HostDevice))
    return Status::error(std::string("cell ") + quote(plan.cellName) +
                         ": this device multiplies in " +
                         precisionName(device->precision()) + " only, not " +
                         precisionName(precision));
  if (precision == Precision::BF16)
    if (Status available = bf16Available(); !available.ok())
      return Status::error("cell " + quote(plan.cellName) + ": " +
                           available.message());
  Plan changed = plan;
  changed.precision = precision;
  return create(
      std::move(changed),
      std::make_shared<HostDevice>(host->kernelFunctions(), precision),
      kernelNames);
}

Precision Cell::getPrecision() const { return device->precision(); }

Expected<Cell> Cell::create(Plan plan, std::shared_ptr<Device> device,
                            std::vector<std::string> kernelNames) {
  if (!device)
    return Status::error("Cell::create: no device");
  if (device->numKernels() < plan.numKernelsUsed())
    return Status::error("plan of cell " + quote(plan.cellName) +
                         " uses kernel " +
                         std::to_string(plan.numKernelsUsed() - 1) +
                         " but the device has only " +
                         std::to_string(device->numKernels()) + " kernels");
  if (device->precision() != plan.precision)
    return Status::error(std::string("plan of cell ") + quote(plan.cellName) +
                         " multiplies in " + precisionName(plan.precision) +
                         " but the device multiplies in " +
                         precisionName(device->precision()) +
                         " only (compile it without --precision " +
                         precisionName(plan.precision) + ")");
  Cell cell;
  cell.plan = std::move(plan);
  cell.device = std::move(device);
  cell.kernelNames = std::move(kernelNames);
  cell.kernelNames.resize(cell.device->numKernels());
  cell.executables = std::make_shared<detail::ExecutablePool>();
  return cell;
}

Expected<std::vector<int64_t>> Cell::bindDims(const ForwardArgs &args) const {
  Expected<Sizes> sizes = DimBinder(plan, args).bind();
  if (!sizes)
    return sizes.getStatus();
  std::vector<int64_t> values;
  for (const std::string &dim : plan.dims)
    values.push_back(sizes->dims.at(dim));
  return values;
}

Tape::Tape() = default;
Tape::~Tape() = default;
Tape::Tape(Tape &&) noexcept = default;
Tape &Tape::operator=(Tape &&) noexcept = default;
bool Tape::isRecorded() const { return storage && storage->recorded; }

//===----------------------------------------------------------------------===//
// The Cell entry points
//===----------------------------------------------------------------------===//

static int64_t elementCount(const ConstArray &array) {
  int64_t count = 1;
  for (int64_t extent : array.shape)
    count *= extent;
  return count;
}

/// Uploads every param in `params` and every stacked weight of `packed`
/// to `device`, once.
static Expected<std::shared_ptr<const DeviceWeights>>
uploadWeights(const Plan &plan, const std::shared_ptr<Device> &device,
              const std::map<std::string, ConstArray> &params,
              const PackedWeights &host) {
  auto copies = std::make_shared<DeviceWeights>();
  copies->owner = device;
  auto outOfMemory = [] {
    return Status::error("packWeights: out of device memory");
  };
  for (const auto &[name, array] : params) {
    if (!array.data || !plan.findParam(name))
      continue;
    float *copy = copies->place(array.data, elementCount(array));
    if (!copy)
      return outOfMemory();
    copies->params[name] = copy;
  }
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    const WeightDecl &weight = plan.weights[w];
    float *copy = weight.params.size() == 1
                      ? copies->find(weight.params[0])
                      : copies->place(host.pointers()[w],
                                      int64_t(host.stackedSize(w)));
    if (!copy)
      return outOfMemory();
    copies->weights.push_back(copy);
  }
  // The uploads may read the host arrays until the device has run them.
  if (Status status = device->synchronize(); !status.ok())
    return status;
  return std::shared_ptr<const DeviceWeights>(std::move(copies));
}

Expected<PackedWeights>
Cell::packWeights(const std::map<std::string, ConstArray> &params,
                  PackFor purpose) const {
  PackedWeights packed;
  packed.stacked.reserve(plan.weights.size());
  for (const WeightDecl &weight : plan.weights) {
    std::vector<float> rows;
    for (const std::string &name : weight.params) {
      auto param = params.find(name);
      if (param == params.end() || !param->second.data ||
          param->second.shape.size() != 2)
        return Status::error("packWeights: matrix param " + quote(name) +
                             " is missing or not [ROWS, COLS]");
      const ConstArray &first = params.at(weight.params[0]);
      if (param->second.shape[1] != first.shape[1])
        return Status::error(
            "packWeights: params stacked into one weight need as many "
            "columns: " + quote(weight.params[0]) + " has " +
            std::to_string(first.shape[1]) + ", " + quote(name) + " has " +
            std::to_string(param->second.shape[1]));
      if (weight.params.size() == 1)
        break;
      const ConstArray &array = param->second;
      rows.insert(rows.end(), array.data,
                  array.data + array.shape[0] * array.shape[1]);
    }
    packed.stacked.push_back(std::move(rows));
    packed.weights.push_back(weight.params.size() == 1
                                 ? params.at(weight.params[0]).data
                                 : packed.stacked.back().data());
  }
  if (!device->sharesHostMemory()) {
    auto copies = uploadWeights(plan, device, params, packed);
    if (!copies)
      return copies.getStatus();
    packed.device = std::move(*copies);
    return packed;
  }
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    int64_t cols = params.at(plan.weights[w].params[0]).shape[1];
    int64_t rows = 0;
    for (const std::string &name : plan.weights[w].params)
      rows += params.at(name).shape[0];
    std::string error;
    std::shared_ptr<const PackedProduct> product = PackedProduct::pack(
        packed.weights[w], rows, cols, error, device->precision());
    if (!product)
      return Status::error("packWeights: " + error);
    packed.products.push_back(std::move(product));
    packed.productShapes.push_back({rows, cols});
    if (device->precision() != Precision::BF16 || purpose != PackFor::Training)
      continue;
    std::shared_ptr<const PackedProduct> backward =
        PackedProduct::pack(packed.weights[w], rows, cols, error,
                            Precision::BF16, PackedProduct::Use::Backward);
    if (!backward)
      return Status::error("packWeights: " + error);
    packed.backwardProducts.push_back(std::move(backward));
  }
  packed.tiledPanels = std::make_shared<PackedPanels>();
  return packed;
}

Expected<BoundSizes> cellrt::bindSizes(const Plan &plan,
                                       const ForwardArgs &args) {
  Expected<Sizes> sizes = DimBinder(plan, args).bind();
  if (!sizes)
    return sizes.getStatus();
  return BoundSizes{sizes->steps, sizes->batch, sizes->dims};
}

Status Cell::forward(const ForwardArgs &args) const {
  auto bound = executables->sizes.bind(plan, args);
  if (!bound)
    return bound.getStatus();
  // Inference reuses the blocks and bound operations of an earlier call.
  std::unique_ptr<Executable> work = executables->take(*bound);
  work->use(device);
  Status status =
      Execution(plan, *device, args, *bound, *work, /*training=*/false)
          .forward();
  executables->give(std::move(work));
  return status;
}

bool Cell::hasBackward() const { return plan.hasBackward(); }

static Status noBackward(const Plan &plan) {
  return Status::error("cell " + quote(plan.cellName) +
                       " has no backward pass: its plan lists no bstep, bpre, "
                       "wgrad or pgrad directives");
}

Status Cell::forward(const ForwardArgs &args, Tape &tape) const {
  if (!plan.hasBackward())
    return noBackward(plan);
  auto bound = executables->sizes.bind(plan, args);
  if (!bound)
    return bound.getStatus();
  const Sizes *sizes = bound->get();
  if (!tape.storage)
    tape.storage = std::make_unique<Tape::Storage>();
  Tape::Storage &record = *tape.storage;
  record.recorded = false;
  record.executable.use(device);
  Status status = Execution(plan, *device, args, *bound, record.executable,
                            /*training=*/true)
                      .forward();
  if (!status.ok())
    return status;
  record.plan = &plan;
  record.steps = sizes->steps;
  record.batch = sizes->batch;
  record.dims = sizes->dims;
  record.lengths.assign(args.lengths, args.lengths + sizes->batch);
  record.reverse = args.reverse;
  record.memory = args.memory;
  record.recorded = true;
  return Status::success();
}

/// Checks the gradient arrays against the bound sizes.
static Status checkGradients(const Plan &plan, const Sizes &sizes,
                             const BackwardArgs &gradients) {
  auto tooMany = [&](const char *what, size_t count, size_t limit,
                     const char *kind) {
    return Status::error("cell " + quote(plan.cellName) + " has " +
                         std::to_string(limit) + " " + kind + ", got " +
                         std::to_string(count) + " " + what);
  };
  if (gradients.finalStateGradients.size() > plan.states.size())
    return tooMany("final state gradients",
                   gradients.finalStateGradients.size(), plan.states.size(),
                   "states");
  if (gradients.initialStateGradients.size() > plan.states.size())
    return tooMany("initial state gradients",
                   gradients.initialStateGradients.size(), plan.states.size(),
                   "states");
  if (gradients.inputGradients.size() > plan.inputs.size())
    return tooMany("input gradients", gradients.inputGradients.size(),
                   plan.inputs.size(), "inputs");

  std::vector<ShapeConstraint> constraints;
  auto add = [&](const std::string &label, const DimExpr &length,
                 const std::vector<int64_t> &actual, bool perStep) {
    if (perStep)
      constraints.push_back({label,
                             {"T", "B", length.str()},
                             {DimExpr::constant(sizes.steps),
                              DimExpr::constant(sizes.batch), length},
                             actual});
    else
      constraints.push_back({label,
                             {"B", length.str()},
                             {DimExpr::constant(sizes.batch), length},
                             actual});
  };
  if (gradients.outputGradient.data)
    add("the output gradient", plan.outputWidth, gradients.outputGradient.shape,
        true);
  for (size_t i = 0; i < gradients.finalStateGradients.size(); ++i)
    if (gradients.finalStateGradients[i].data)
      add("final state gradient " + quote(plan.states[i].name),
          plan.states[i].length, gradients.finalStateGradients[i].shape, false);
  for (size_t i = 0; i < gradients.initialStateGradients.size(); ++i)
    if (gradients.initialStateGradients[i].data)
      add("initial state gradient " + quote(plan.states[i].name),
          plan.states[i].length, gradients.initialStateGradients[i].shape,
          false);
  for (size_t i = 0; i < gradients.inputGradients.size(); ++i)
    if (gradients.inputGradients[i].data)
      add("input gradient " + quote(plan.inputs[i].name), plan.inputs[i].length,
          gradients.inputGradients[i].shape, true);
  for (const auto &[name, array] : gradients.paramGradients) {
    const ParamDecl *param = plan.findParam(name);
    if (!param) {
      std::string known;
      for (const ParamDecl &decl : plan.params)
        known += " " + decl.name;
      return Status::error("gradient for unknown param " + quote(name) +
                           " (cell " + quote(plan.cellName) +
                           " has params:" + known + ")");
    }
    if (!array.data)
      continue;
    std::vector<std::string> text;
    for (const DimExpr &extent : param->shape)
      text.push_back(extent.str());
    constraints.push_back(
        {"gradient of param " + quote(name), text, param->shape, array.shape});
  }
  for (const ShapeConstraint &constraint : constraints) {
    Status status = checkConstraint(constraint, sizes);
    if (!status.ok())
      return status;
  }
  return Status::success();
}

static std::string memoryName(Memory memory) {
  return memory == Memory::Device ? "device" : "host";
}

Status Cell::backward(const ForwardArgs &args, const BackwardArgs &gradients,
                      Tape &tape) const {
  if (!plan.hasBackward())
    return noBackward(plan);
  if (!tape.isRecorded())
    return Status::error("backward: the tape holds no recorded forward pass "
                         "(call forward(args, tape) first)");
  const Tape::Storage &record = *tape.storage;
  if (record.plan != &plan)
    return Status::error("backward: the tape was recorded by another cell");
  auto bound = executables->sizes.bind(plan, args);
  if (!bound)
    return bound.getStatus();
  const Sizes *sizes = bound->get();
  if (sizes->steps != record.steps || sizes->batch != record.batch ||
      sizes->dims != record.dims) {
    auto describe = [&](int64_t steps, int64_t batch,
                        const std::map<std::string, int64_t> &dims) {
      std::string text =
          "T=" + std::to_string(steps) + " B=" + std::to_string(batch);
      for (const std::string &dim : plan.dims)
        text += " " + dim + "=" + std::to_string(dims.at(dim));
      return text;
    };
    return Status::error("backward: the arguments bind " +
                         describe(sizes->steps, sizes->batch, sizes->dims) +
                         " but the tape was recorded with " +
                         describe(record.steps, record.batch, record.dims));
  }
  for (int64_t b = 0; b < record.batch; ++b)
    if (args.lengths[b] != record.lengths[b])
      return Status::error("backward: lengths[" + std::to_string(b) +
                           "] = " + std::to_string(args.lengths[b]) +
                           " but the tape was recorded with " +
                           std::to_string(record.lengths[b]));
  if (args.reverse != record.reverse)
    return Status::error(std::string("backward: args.reverse is ") +
                         (args.reverse ? "true" : "false") +
                         " but the tape was recorded with " +
                         (record.reverse ? "true" : "false"));
  if (args.memory != record.memory || gradients.memory != record.memory)
    return Status::error(
        "backward: the forward's arrays were in " + memoryName(record.memory) +
        " memory; args.memory and "
        "gradients.memory must say the same (they say " +
        memoryName(args.memory) + " and " + memoryName(gradients.memory) + ")");
  Status status = checkGradients(plan, *sizes, gradients);
  if (!status.ok())
    return status;
  tape.storage->gradientBlocks.use(device);
  return Execution(plan, *device, args, *bound, tape.storage->executable,
                   /*training=*/true, /*backwardPass=*/true)
      .backward(gradients, tape.storage->gradientBlocks);
}
