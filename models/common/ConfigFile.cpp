//===- models/common/ConfigFile.cpp - A command's options in a file -------===//

#include "models/common/ConfigFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <sys/stat.h>

namespace models {

namespace {

/// Flags take no value on the command line; true or false in a file.
bool isFlag(const CLI::Option *opt) { return opt->get_expected_max() == 0; }

bool isList(const CLI::Option *opt) {
  return opt->get_items_expected_max() > 1;
}

/// Whether a flag's results (true, false, or counts) set it.
bool flagSet(const std::vector<std::string> &results) {
  int64_t count = 0;
  for (const std::string &result : results) {
    try {
      count += CLI::detail::to_flag_value(result);
    } catch (const std::exception &) {
    }
  }
  return count > 0;
}

bool isNumber(const std::string &text) {
  if (text.empty())
    return false;
  char *end = nullptr;
  std::strtod(text.c_str(), &end);
  return *end == '\0';
}

/// A value as TOML: numbers of numeric options bare, other text quoted.
std::string tomlValue(const CLI::Option *opt, const std::string &value) {
  std::string type = opt->get_type_name();
  type = type.substr(0, type.find_first_of(": "));
  bool numeric =
      type == "INT" || type == "UINT" || type == "FLOAT" || type == "NUMBER";
  return numeric && isNumber(value) ? value : tomlString(value);
}

/// "nmt train" (a program named by its path: by the file's name).
std::string commandName(const CLI::App &cmd) {
  const CLI::App *parent = cmd.get_parent();
  if (!parent)
    return cmd.get_name();
  std::string program = parent->get_name();
  return program.substr(program.rfind('/') + 1) + " " + cmd.get_name();
}

} // namespace

std::string tomlString(const std::string &text) {
  // CLI11 reads either quote and no escapes: a literal string unless the
  // text holds a single quote.
  if (text.find('\'') == std::string::npos)
    return "'" + text + "'";
  return "\"" + text + "\"";
}

CommandConfig::CommandConfig(CLI::App &cmd) : cmd(cmd) {
  configOption =
      cmd.add_option("--config",
                     "read the options from this TOML file, the long names "
                     "as keys (max-updates = 20, cell = \"gru\"); the "
                     "command line overrides it")
          ->type_name("FILE")
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
          ->configurable(false);
  printOption = cmd.add_flag("--print-config",
                             "print every option with its value (defaults "
                             "included) as a --config file, and exit")
                    ->configurable(false);
  for (const auto &[key, opt] : keyed()) {
    // The bound variable's value before parsing: its default, whether or
    // not --help shows it.
    std::string shown = opt->get_default_str();
    opt->capture_default_str();
    defaults[opt] = opt->get_default_str();
    opt->default_str(shown);
    if (opt->get_required()) {
      required.push_back(opt);
      opt->required(false);
    }
  }
}

void CommandConfig::restoreRequired() {
  for (CLI::Option *opt : required)
    opt->required(true);
}

std::vector<std::pair<std::string, CLI::Option *>>
CommandConfig::keyed() const {
  std::vector<std::pair<std::string, CLI::Option *>> keys;
  for (CLI::Option *opt : cmd.get_options()) {
    if (opt == cmd.get_help_ptr() || opt == cmd.get_help_all_ptr() ||
        opt == configOption || opt == printOption)
      continue;
    const std::vector<std::string> &longNames = opt->get_lnames();
    keys.push_back(
        {longNames.empty() ? opt->get_name() : longNames.front(), opt});
  }
  return keys;
}

bool CommandConfig::printRequested() const { return printOption->count() > 0; }

void CommandConfig::finish() {
  if (configOption->count() > 0) {
    std::string path = configOption->as<std::string>();
    struct stat info;
    if (::stat(path.c_str(), &info) != 0)
      throw CLI::FileError("--config " + path +
                           ": cannot read the file: " + std::strerror(errno));
    if (S_ISDIR(info.st_mode))
      throw CLI::FileError("--config " + path + ": a folder, not a file");
    std::vector<CLI::ConfigItem> items;
    try {
      items = CLI::ConfigTOML().from_file(path);
    } catch (const CLI::Error &error) {
      throw CLI::FileError("--config " + path + ": " + error.what());
    }
    auto keys = keyed();
    for (const CLI::ConfigItem &item : items) {
      std::string where = path + ", key '" + item.name + "'";
      if (!item.parents.empty())
        throw CLI::ConfigError(path + ", section [" + item.parents[0] +
                               "]: sections are not read; write the "
                               "options of " +
                               commandName(cmd) + " at the top");
      CLI::Option *opt = nullptr;
      for (const auto &[key, candidate] : keys)
        if (key == item.name)
          opt = candidate;
      if (!opt)
        throw CLI::ConfigError(where + ": " + commandName(cmd) +
                               " has no option --" + item.name + " (see " +
                               commandName(cmd) + " --help)");
      // The command line wins; an empty list gives nothing.
      if (opt->count() > 0 || (item.inputs.empty() && !isFlag(opt)))
        continue;
      try {
        if (isFlag(opt)) {
          const std::string value =
              item.inputs.size() == 1 ? item.inputs[0] : "";
          if (value != "true" && value != "false")
            throw CLI::ConversionError("a flag is true or false");
          opt->add_result(value);
        } else {
          if (item.inputs.size() > 1 && !isList(opt))
            throw CLI::ConversionError("one value, not a list");
          opt->add_result(item.inputs);
        }
        opt->run_callback();
      } catch (const CLI::Error &error) {
        throw CLI::ConfigError(where + ": " + error.what());
      }
    }
  }
  if (printRequested())
    return;
  for (CLI::Option *opt : required)
    if (opt->count() == 0)
      throw CLI::RequiredError(opt->get_name());
}

std::vector<std::string> CommandConfig::valuesOf(const CLI::Option *opt) const {
  if (opt->count() > 0) {
    if (isFlag(opt))
      return {flagSet(opt->results()) ? "true" : "false"};
    return opt->reduced_results();
  }
  if (isFlag(opt))
    return {"false"};
  auto found = defaults.find(opt);
  std::string text = found == defaults.end() ? "" : found->second;
  if (!isList(opt))
    return {text};
  // CLI11 shows a list as [a,b].
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  std::vector<std::string> list;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');)
    list.push_back(item);
  return list;
}

std::string CommandConfig::text() const {
  std::ostringstream out;
  out << "# " << commandName(cmd) << ": every option; `" << commandName(cmd)
      << " --config FILE` reads them back,\n# options on its command line "
         "override them\n";
  // By --help's groups, in their order.
  std::vector<std::string> groups;
  for (const auto &[key, opt] : keyed())
    if (std::find(groups.begin(), groups.end(), opt->get_group()) ==
        groups.end())
      groups.push_back(opt->get_group());
  for (const std::string &group : groups) {
    out << "\n# " << group << "\n";
    for (const auto &[key, opt] : keyed())
      if (opt->get_group() == group)
        writeOption(out, key, opt);
  }
  return out.str();
}

void CommandConfig::writeOption(std::ostream &out, const std::string &key,
                                const CLI::Option *opt) const {
  std::vector<std::string> values = valuesOf(opt);
  out << key << " = ";
  if (isFlag(opt)) {
    out << values[0] << "\n";
    return;
  }
  if (!isList(opt)) {
    out << tomlValue(opt, values.empty() ? "" : values[0]) << "\n";
    return;
  }
  out << "[";
  for (size_t i = 0; i < values.size(); ++i)
    out << (i ? ", " : "") << tomlValue(opt, values[i]);
  out << "]\n";
}

} // namespace models
