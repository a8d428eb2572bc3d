//===- PlanCommand.cpp - `cellc plan` prints the plan a file carries ------===//
//
// Objects and shared libraries carry each cell's plan as binary tables
// (`cellc_<cell>_plan`); `-emit=tables` writes them alone. `cellc plan FILE`
// decodes them with the runtime's own reader and prints their text, so a
// person can see what an object will run, and which cellc it needs.
//
//===----------------------------------------------------------------------===//

#include "tools/cellc/Subcommands.h"

#include "cellrt/PlanTables.h"

#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

namespace {

/// Prints the plan of the tables at `bytes`, or the error naming `what`.
bool printTables(llvm::StringRef bytes, const std::string &what) {
  // A symbol's bytes run to the end of its section: the header says where
  // the tables end. Without the magic the runtime's image reader says why.
  size_t size = bytes.size() >= cellrt::kPlanTablesHeaderSize
                    ? cellrt::planTablesSize(bytes.data())
                    : 0;
  cellrt::Expected<cellrt::Plan> plan =
      size == 0 ? cellrt::decodePlanImage(bytes.str().c_str())
                : cellrt::decodePlan(size <= bytes.size()
                                         ? bytes.substr(0, size)
                                         : bytes);
  if (!plan) {
    llvm::errs() << "cellc: error: " << what << ": " << plan.error() << "\n";
    return false;
  }
  llvm::outs() << cellrt::printPlan(*plan);
  return true;
}

/// The bytes from `symbol` to the end of its section.
llvm::Expected<llvm::StringRef> symbolBytes(const llvm::object::SymbolRef &symbol) {
  auto section = symbol.getSection();
  if (!section)
    return section.takeError();
  auto address = symbol.getAddress();
  if (!address)
    return address.takeError();
  auto contents = (*section)->getContents();
  if (!contents)
    return contents.takeError();
  uint64_t offset = *address - (*section)->getAddress();
  if (offset > contents->size())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the symbol lies outside its section");
  return contents->substr(offset);
}

/// Prints the plan of every `cellc_<cell>_plan` in the object; false on an
/// error or when there is none.
bool printObjectPlans(llvm::object::ObjectFile &object,
                      const std::string &path) {
  int found = 0;
  bool ok = true;
  for (const llvm::object::SymbolRef &symbol : object.symbols()) {
    auto name = symbol.getName();
    if (!name || !name->startswith("cellc_") || !name->endswith("_plan"))
      continue;
    auto bytes = symbolBytes(symbol);
    if (!bytes) {
      llvm::errs() << "cellc: error: " << path << ": " << *name << ": "
                   << llvm::toString(bytes.takeError()) << "\n";
      ok = false;
      continue;
    }
    if (found++)
      llvm::outs() << "\n";
    ok &= printTables(*bytes, path + ": " + name->str());
  }
  if (found == 0)
    llvm::errs() << "cellc: error: " << path
                 << " holds no cell's plan (no cellc_<cell>_plan symbol)\n";
  return ok && found > 0;
}

} // namespace

int cellc::planCommand(int argc, char **argv) {
  if (argc != 2 || llvm::StringRef(argv[1]).startswith("-")) {
    llvm::outs() << "usage: cellc plan FILE\n\n"
                    "Prints the plan that FILE carries, as text: FILE is an "
                    "object or shared\nlibrary compiled by cellc, or the "
                    "tables of `cellc -emit=tables`.\n";
    return argc == 2 ? 0 : 1;
  }
  std::string path = argv[1];
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/true);
  if (!buffer) {
    llvm::errs() << "cellc: error: " << path
                 << ": cannot read: " << buffer.getError().message() << "\n";
    return 1;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.startswith(llvm::StringRef(cellrt::kPlanTablesMagic, 8)) ||
      bytes.startswith("cellc-plan"))
    return printTables(bytes, path) ? 0 : 1;
  auto object =
      llvm::object::ObjectFile::createObjectFile((*buffer)->getMemBufferRef());
  if (!object) {
    llvm::consumeError(object.takeError());
    llvm::errs() << "cellc: error: " << path
                 << " is neither an object file nor a plan's tables\n";
    return 1;
  }
  return printObjectPlans(**object, path) ? 0 : 1;
}
