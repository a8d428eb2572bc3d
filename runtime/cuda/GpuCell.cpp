//===- GpuCell.cpp - Run a compiled cell's plan on an NVIDIA GPU ----------===//
//
// The plan's operations in the CPU executor's order: `pre` products and
// kernels over all T*B rows, then per step the recurrent products and
// kernels (or the single `scan` kernel). Everything runs on the default
// stream, so each step's GEMM and kernel are ordered; overlapping the next
// step's input-side work with the current kernel is left for when it can
// be measured on a GPU.
//
//===----------------------------------------------------------------------===//

#include "GpuCell.h"
#include "CudaApi.h"
#include "KernelLaunch.h"

#include <algorithm>
#include <cstring>

using namespace cellrt;
using namespace cellrt::cuda;

namespace {

/// A device allocation of floats (or bytes) freed with the GPU cell's call.
class DeviceBuffer {
public:
  DeviceBuffer(const Api &api, size_t bytes) : api(&api) {
    if (bytes && api.memAlloc(&address, bytes) != CUDA_SUCCESS)
      address = 0;
    failed = bytes && !address;
  }
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : api(other.api), address(other.address), failed(other.failed) {
    other.address = 0;
  }
  ~DeviceBuffer() {
    if (address)
      api->memFree(address);
  }
  CUdeviceptr get() const { return address; }
  bool ok() const { return !failed; }

private:
  const Api *api;
  CUdeviceptr address = 0;
  bool failed = false;
};

/// Where a reference lives on the device for one call.
struct DeviceOperand {
  CUdeviceptr base = 0;
  int64_t stride = 0, stepAdvance = 0;
  CUdeviceptr at(int64_t step) const {
    return base + 4 * (step * stepAdvance);
  }
};

} // namespace

struct GpuCell::Impl {
  Plan plan;
  const Api *api = nullptr;
  CUmodule module = nullptr;
  cublasHandle_t blas = nullptr;
  std::vector<CUfunction> kernels;

  ~Impl() {
    if (blas)
      api->blasDestroy(blas);
    if (module)
      api->moduleUnload(module);
  }
  Status run(const ForwardArgs &args) const;
};

GpuCell::GpuCell(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
GpuCell::GpuCell(GpuCell &&) noexcept = default;
GpuCell &GpuCell::operator=(GpuCell &&) noexcept = default;
GpuCell::~GpuCell() = default;
const Plan &GpuCell::getPlan() const { return impl->plan; }

Expected<GpuCell> GpuCell::load(const std::string &planText,
                                const std::string &ptx) {
  Expected<Plan> plan = parsePlan(planText);
  if (!plan)
    return plan.getStatus();
  Expected<const Api *> api = Api::get();
  if (!api)
    return api.getStatus();
  auto impl = std::make_unique<Impl>();
  impl->plan = std::move(*plan);
  impl->api = *api;
  if (impl->api->blasCreate(&impl->blas) != CUBLAS_STATUS_SUCCESS)
    return Status::error("cannot create a cuBLAS handle; use --device cpu");
  CUresult result = impl->api->moduleLoadData(&impl->module, ptx.c_str());
  if (result != CUDA_SUCCESS)
    return Status::error(impl->api->describe(result, "loading the PTX"));
  for (int64_t index = 0; index < impl->plan.numKernelsUsed(); ++index) {
    std::string name =
        "cellc_" + impl->plan.cellName + "_k" + std::to_string(index);
    CUfunction function;
    if ((result = impl->api->moduleGetFunction(&function, impl->module,
                                               name.c_str())) != CUDA_SUCCESS)
      return Status::error(impl->api->describe(result, "kernel " + name));
    impl->kernels.push_back(function);
  }
  return GpuCell(std::move(impl));
}

Status GpuCell::forward(const ForwardArgs &args) const {
  return impl->run(args);
}

Status GpuCell::Impl::run(const ForwardArgs &args) const {
  Expected<BoundSizes> bound = bindSizes(plan, args);
  if (!bound)
    return bound.getStatus();
  const int64_t steps = bound->steps, batch = bound->batch;
  auto eval = [&](const DimExpr &e) { return *e.evaluate(bound->dims); };
  std::vector<DeviceBuffer> owned;
  auto allocate = [&](size_t bytes) {
    owned.emplace_back(*api, bytes);
    return owned.back().get();
  };
  auto upload = [&](const void *host, size_t bytes) {
    CUdeviceptr device = allocate(bytes);
    if (host && bytes)
      api->memcpyHtoD(device, host, bytes);
    else if (bytes)
      api->memsetD32(device, 0, bytes / 4);
    return device;
  };
  std::vector<int32_t> lengths(args.lengths, args.lengths + batch);
  int32_t maxLength = *std::max_element(lengths.begin(), lengths.end());

  // Inputs, reversed within each length on the host when running backwards.
  std::vector<CUdeviceptr> inputs;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    int64_t width = eval(plan.inputs[i].length);
    std::vector<float> host(args.inputs[i].data,
                            args.inputs[i].data + steps * batch * width);
    if (args.reverse)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < lengths[b]; ++t)
          std::memcpy(&host[(t * batch + b) * width],
                      args.inputs[i].data +
                          ((lengths[b] - 1 - t) * batch + b) * width,
                      width * sizeof(float));
    inputs.push_back(upload(host.data(), host.size() * 4));
  }
  std::map<std::string, CUdeviceptr> params;
  for (const ParamDecl &param : plan.params) {
    int64_t count = 1;
    for (const DimExpr &extent : param.shape)
      count *= eval(extent);
    params[param.name] = upload(args.params.at(param.name).data, count * 4);
  }
  // Stacked weights: the params' rows one after another.
  std::map<std::string, std::pair<CUdeviceptr, std::pair<int64_t, int64_t>>>
      weights;
  for (const WeightDecl &weight : plan.weights) {
    int64_t rows = eval(plan.weightRows(weight)),
            cols = eval(plan.weightCols(weight));
    CUdeviceptr stacked = allocate(rows * cols * 4);
    int64_t offset = 0;
    for (const std::string &name : weight.params) {
      int64_t partRows = eval(plan.findParam(name)->shape[0]);
      api->memcpyDtoD(stacked + offset * cols * 4, params[name],
                      partRows * cols * 4);
      offset += partRows;
    }
    weights[weight.name] = {stacked, {rows, cols}};
  }
  std::vector<CUdeviceptr> buffers;
  for (const BufferDecl &buffer : plan.buffers) {
    int64_t rows = buffer.extent == BufferDecl::Extent::Sequence
                       ? steps * batch
                       : batch;
    buffers.push_back(upload(nullptr, rows * eval(buffer.length) * 4));
  }
  std::vector<CUdeviceptr> current, next;
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t bytes = batch * eval(plan.states[i].length) * 4;
    const float *initial =
        i < args.initialStates.size() ? args.initialStates[i].data : nullptr;
    current.push_back(upload(initial, bytes));
    next.push_back(upload(nullptr, bytes));
  }
  int64_t outputWidth = eval(plan.outputWidth);
  CUdeviceptr output = upload(nullptr, steps * batch * outputWidth * 4);
  CUdeviceptr deviceLengths = upload(lengths.data(), batch * 4);
  std::vector<int64_t> dimValues;
  for (const std::string &dim : plan.dims)
    dimValues.push_back(bound->dims.at(dim));
  CUdeviceptr deviceDims = upload(dimValues.data(), dimValues.size() * 8);
  for (const DeviceBuffer &buffer : owned)
    if (!buffer.ok())
      return Status::error("out of GPU memory");

  bool hasScan = std::any_of(plan.operations.begin(), plan.operations.end(),
                             [](const Operation &op) {
                               return op.phase == Phase::Scan;
                             });
  // States alternate between two buffers; `parity` says which is current.
  auto operandFor = [&](const Operation &op, const Ref &ref, int parity) {
    DeviceOperand operand;
    bool perStep = op.phase != Phase::Pre;
    int64_t width = eval(plan.arrayWidth(ref));
    operand.stride = width;
    int64_t rowsPerStep = perStep ? batch * width : 0;
    switch (ref.kind) {
    case Ref::Kind::Input:
      operand.base = inputs[plan.inputIndex(ref.name)];
      operand.stepAdvance = rowsPerStep;
      break;
    case Ref::Kind::Seq:
      operand.base = buffers[plan.bufferIndex(ref.name)];
      operand.stepAdvance = rowsPerStep;
      break;
    case Ref::Kind::Step:
      operand.base = buffers[plan.bufferIndex(ref.name)];
      break;
    case Ref::Kind::State:
    case Ref::Kind::Next: {
      bool isNext = ref.kind == Ref::Kind::Next;
      int64_t index = plan.stateIndex(ref.name);
      operand.base = (parity ^ isNext) ? next[index] : current[index];
      break;
    }
    case Ref::Kind::Param:
      operand.base = params[ref.name];
      operand.stride = plan.findParam(ref.name)->isMatrix() ? width : 0;
      break;
    case Ref::Kind::Out:
      operand.base = output;
      operand.stepAdvance = batch * outputWidth;
      break;
    default:
      break;
    }
    operand.base += 4 * eval(ref.column);
    return operand;
  };

  auto gemm = [&](const Operation &op, int64_t step, int parity) {
    DeviceOperand out = operandFor(op, op.gemmOutput(), parity),
                  in = operandFor(op, op.gemmInput(), parity);
    auto &[weight, shape] = weights.at(op.weight);
    int64_t rows = op.phase == Phase::Pre ? steps * batch : batch;
    float one = 1, zero = 0;
    // Row-major OUT = IN * W^T is column-major OUT^T = W^T' * IN^T.
    api->sgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, shape.first, rows,
               shape.second, &one, reinterpret_cast<float *>(weight),
               shape.second, reinterpret_cast<float *>(in.at(step)), in.stride,
               &zero, reinterpret_cast<float *>(out.at(step)), out.stride);
  };
  auto launch = [&](const Operation &op, int64_t step, int parity) -> Status {
    bool scan = op.phase == Phase::Scan;
    int64_t rows = op.phase == Phase::Pre ? steps * batch : batch;
    std::vector<CUdeviceptr> pointers;
    std::vector<int64_t> strides, advances;
    for (const Ref &ref : op.operands) {
      DeviceOperand operand = operandFor(op, ref, parity);
      pointers.push_back(operand.at(scan ? 0 : step));
      strides.push_back(operand.stride);
      advances.push_back(operand.stepAdvance);
    }
    if (scan)
      strides.insert(strides.end(), advances.begin(), advances.end());
    auto scratch = plan.scratch.find(op.kernel);
    if (scratch != plan.scratch.end())
      for (const DimExpr &length : scratch->second) {
        pointers.push_back(allocate(rows * eval(length) * 4));
        strides.push_back(eval(length));
      }
    KernelCall call;
    call.rowEnd = rows;
    call.step = scan ? steps : step;
    call.lengths = op.phase == Phase::Pre ? 0 : deviceLengths;
    call.dims = deviceDims;
    call.pointers = upload(pointers.data(), pointers.size() * 8);
    call.strides = upload(strides.data(), strides.size() * 8);
    std::array<void *, 7> params = packKernelArguments(call);
    CUresult result = api->launchKernel(
        kernels[op.kernel], blocksFor(rows), 1, 1, kRowsPerBlock, 1, 1, 0,
        nullptr, params.data(), nullptr);
    return result == CUDA_SUCCESS
               ? Status::success()
               : Status::error(api->describe(result, "kernel launch"));
  };
  auto runPhase = [&](Phase phase, int64_t step, int parity) -> Status {
    for (const Operation &op : plan.operations) {
      if (op.phase != phase)
        continue;
      if (op.kind == Operation::Kind::Gemm) {
        gemm(op, step, parity);
        continue;
      }
      Status status = launch(op, step, parity);
      if (!status.ok())
        return status;
    }
    return Status::success();
  };

  Status status = runPhase(Phase::Pre, 0, 0);
  int parity = 0;
  if (status.ok() && hasScan) {
    status = runPhase(Phase::Scan, 0, 0);
    parity = 1;
  } else {
    for (int64_t step = 0; status.ok() && step < maxLength; ++step) {
      status = runPhase(Phase::Step, step, parity);
      parity ^= 1;
    }
  }
  if (!status.ok())
    return status;
  api->streamSynchronize(nullptr);

  if (args.output.data) {
    std::vector<float> host(steps * batch * outputWidth);
    api->memcpyDtoH(host.data(), output, host.size() * 4);
    std::fill(host.begin() + maxLength * batch * outputWidth, host.end(), 0.f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = 0; t < steps; ++t) {
        int64_t source = args.reverse && t < lengths[b] ? lengths[b] - 1 - t
                                                        : t;
        std::memcpy(args.output.data + (t * batch + b) * outputWidth,
                    &host[(source * batch + b) * outputWidth],
                    outputWidth * sizeof(float));
      }
  }
  for (size_t i = 0; i < plan.states.size() && i < args.finalStates.size();
       ++i)
    if (args.finalStates[i].data)
      api->memcpyDtoH(args.finalStates[i].data, parity ? next[i] : current[i],
                      batch * eval(plan.states[i].length) * 4);
  return Status::success();
}
