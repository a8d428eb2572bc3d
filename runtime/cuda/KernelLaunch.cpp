//===- KernelLaunch.cpp - Packing a cellc kernel's launch arguments -------===//

#include "KernelLaunch.h"

#include <algorithm>
#include <regex>

using namespace cellrt::cuda;

std::array<void *, 7> cellrt::cuda::packKernelArguments(KernelCall &call) {
  return {&call.rowBegin, &call.rowEnd,   &call.step,   &call.lengths,
          &call.dims,     &call.pointers, &call.strides};
}

LaunchShape cellrt::cuda::launchShape(int64_t rows, int64_t multiprocessors) {
  if (rows <= 0)
    return {0, 0};
  int64_t sms = std::max<int64_t>(multiprocessors, 1);
  int64_t lanes = rows <= 2 * sms ? 256 : rows <= 8 * sms ? 128 : 64;
  return {rows, lanes};
}

std::array<size_t, 7> cellrt::cuda::packedArgumentSizes() {
  KernelCall call;
  return {sizeof(call.rowBegin), sizeof(call.rowEnd),   sizeof(call.step),
          sizeof(call.lengths),  sizeof(call.dims),     sizeof(call.pointers),
          sizeof(call.strides)};
}

std::vector<std::string>
cellrt::cuda::entryParameterTypes(const std::string &ptx,
                                  const std::string &entry) {
  std::vector<std::string> types;
  size_t start = ptx.find(".entry " + entry + "(");
  if (start == std::string::npos)
    return types;
  size_t end = ptx.find(')', start);
  std::string list = ptx.substr(start, end - start);
  static const std::regex param(R"(\.param\s+(\.[a-z0-9]+)\s+\S+)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), param);
       it != std::sregex_iterator(); ++it)
    types.push_back((*it)[1]);
  return types;
}

size_t cellrt::cuda::ptxTypeSize(const std::string &type) {
  if (type == ".u64" || type == ".s64" || type == ".b64" || type == ".f64")
    return 8;
  if (type == ".u32" || type == ".s32" || type == ".b32" || type == ".f32")
    return 4;
  return 0;
}
