//===- CheckCommand.cpp - `cellc check` runs cellc-check ------------------===//
//
// cellc-check links LibTorch (its reference interpreter); cellc stays free of
// it and runs the tool from its own folder.
//
//===----------------------------------------------------------------------===//

#include "tools/cellc/Subcommands.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

int cellc::checkCommand(int argc, char **argv, const char *cellcArgv0) {
  std::string cellc = llvm::sys::fs::getMainExecutable(
      cellcArgv0, reinterpret_cast<void *>(&cellc::checkCommand));
  llvm::SmallString<256> tool(llvm::sys::path::parent_path(cellc));
  llvm::sys::path::append(tool, "cellc-check");
  if (!llvm::sys::fs::can_execute(tool)) {
    llvm::errs() << "cellc: error: `cellc check` needs " << tool
                 << " (built only where LibTorch is installed)\n";
    return 1;
  }
  std::vector<llvm::StringRef> args = {tool};
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  std::string message;
  int code =
      llvm::sys::ExecuteAndWait(tool, args, std::nullopt, {}, 0, 0, &message);
  if (code < 0) {
    llvm::errs() << "cellc: error: running " << tool << ": " << message << "\n";
    return 1;
  }
  return code;
}
