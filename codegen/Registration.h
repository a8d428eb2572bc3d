//===- codegen/Registration.h - Dialects and passes of cellc ---*- C++ -*-===//

#ifndef CELLC_CODEGEN_REGISTRATION_H
#define CELLC_CODEGEN_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace cellc {
/// The cell dialect plus the upstream dialects its lowering produces.
void registerAllCellDialects(mlir::DialectRegistry &registry);
/// cellc's own passes, so `cell-opt --cell-...` and pipelines find them.
void registerAllCellPasses();
} // namespace cellc

#endif // CELLC_CODEGEN_REGISTRATION_H
