//===- cell-opt.cpp - mlir-opt with the cell dialect and passes -----------===//

#include "codegen/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  cellc::registerAllCellDialects(registry);
  cellc::registerAllCellPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "cellc optimizer driver\n", registry));
}
