//===- models/common/OptionTable.h - A driver's options, listed once -*- C++
//-*-===//
//
// A driver's training options are one table: each row names the option,
// the member it sets, its help, its checks, and what --resume does with it.
// The table is a static function of the options struct:
//
//   template <class Self, class Visit> static void fields(Self &o, Visit &&v) {
//     v(Opt("cell", "the recurrent cell").group("Model"), o.cell);
//     v(Opt("lr", "Adam's learning rate").check(learningRate), o.lr);
//     v(Opt("out", "checkpoint").fromCommandLine(), o.out);
//   }
//
// and every use walks it: the CLI11 options (addOptionTable), the
// checkpoint's record of the options (toOptionMap, fromOptionMap, which
// runs the same checks on a checkpoint's values), which options a command
// line gave (givenTableOptions) and how a resumed run treats each
// (resumeRules). Adding an option is adding a row.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_OPTIONTABLE_H
#define CELLC_MODELS_COMMON_OPTIONTABLE_H

#include "models/common/CommandLine.h"
#include "models/common/Data.h"
#include "models/common/OptionMap.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace models {

/// One row of an option table.
class Opt {
public:
  /// How the option is written on a command line.
  enum class Form {
    Value,    // --NAME VALUE
    Flag,     // --NAME sets a bool
    NoFlag,   // --no-NAME clears a bool (--no-progress)
    Recorded, // kept in the checkpoint only (a cell file's text)
  };
  /// What `train --resume` does with the option.
  enum class Resume {
    Fixed,           // the checkpoint's; another value is refused
    Changeable,      // the checkpoint's unless the command line gives it
    FromCommandLine, // always this command line's (where a run writes)
  };

  Opt(const char *name, std::string help)
      : name_(name), help_(std::move(help)) {}

  Opt &group(const char *name) {
    group_ = name;
    return *this;
  }
  /// A check of the value, on the command line and in a checkpoint.
  Opt &check(const CLI::Validator &validator) {
    checks_.push_back(validator);
    return *this;
  }
  Opt &flag() {
    form_ = Form::Flag;
    return *this;
  }
  Opt &noFlag() {
    form_ = Form::NoFlag;
    return *this;
  }
  Opt &recorded() {
    form_ = Form::Recorded;
    return *this;
  }
  Opt &changeable() {
    resume_ = Resume::Changeable;
    return *this;
  }
  Opt &fromCommandLine() {
    resume_ = Resume::FromCommandLine;
    return *this;
  }
  /// The command line (or --config's file) must give it.
  Opt &required() {
    required_ = true;
    return *this;
  }
  /// The value names a file: a resume compares canonical paths.
  Opt &path() {
    path_ = true;
    return *this;
  }
  /// What a checkpoint without this option was trained with (the option
  /// came later, with another default).
  Opt &absentMeans(const char *value) {
    absent_ = value;
    return *this;
  }

  const std::string &name() const { return name_; }
  const std::string &help() const { return help_; }
  const std::string &groupName() const { return group_; }
  const std::vector<CLI::Validator> &checks() const { return checks_; }
  Form form() const { return form_; }
  Resume resume() const { return resume_; }
  bool isPath() const { return path_; }
  bool isRequired() const { return required_; }
  const std::optional<std::string> &absent() const { return absent_; }
  /// The option as the command line writes it, without the dashes.
  std::string commandLineName() const {
    return form_ == Form::NoFlag ? "no-" + name_ : name_;
  }

  /// Throws DataError `--NAME: ...` unless every check accepts `text`.
  void checkText(std::string text) const;

private:
  std::string name_, help_, group_;
  std::vector<CLI::Validator> checks_;
  Form form_ = Form::Value;
  Resume resume_ = Resume::Fixed;
  bool path_ = false, required_ = false;
  std::optional<std::string> absent_;
};

/// The rows every driver's table has, in the group "Output", over the
/// members `out`, `log`, `saveEvery` and `progress`: --out (`outHelp`),
/// --log, --save-every and --no-progress.
template <class Self, class Visit>
void runOutputRows(Self &o, Visit &v, const char *outHelp) {
  const char *group = "Output";
  v(Opt("out", outHelp).group(group).fromCommandLine(), o.out);
  v(Opt("log", "log file (default OUT.log; events in LOG.jsonl)")
        .group(group)
        .fromCommandLine(),
    o.log);
  v(Opt("save-every",
        "also save OUT every N updates (0: after each epoch only)")
        .group(group)
        .changeable(),
    o.saveEvery);
  v(Opt("progress", "no progress output on stderr")
        .group(group)
        .noFlag()
        .fromCommandLine(),
    o.progress);
}

/// --lr (Adam's), --clip, --epochs and --seed, alike in every driver, in
/// the group "Training", over the members `lr`, `clip`, `epochs`, `seed`.
template <class Self, class Visit> void trainingRows(Self &o, Visit &v) {
  const char *group = "Training";
  v(Opt("lr", "Adam's learning rate").group(group).check(learningRate), o.lr);
  v(Opt("clip", "gradient-norm clip (0: none)").group(group).check(clipNorm),
    o.clip);
  v(Opt("epochs", "epochs (a resumed run may be given more)")
        .group(group)
        .check(positiveCount)
        .changeable(),
    o.epochs);
  v(Opt("seed", "initialisation, batch order and dropout").group(group),
    o.seed);
}

/// --init and --init-scale (models/common/Init.h), alike in every driver,
/// in the group "Model", over the members `init` and `initScale`.
template <class Self, class Visit> void initRows(Self &o, Visit &v) {
  const char *group = "Model";
  v(Opt("init", "how a param without an initialiser in its cell file "
                "starts: paper (uniform +-init-scale, the ATR paper's) or "
                "fan_in (uniform +-1/sqrt(columns), PyTorch's default; "
                "narrower as layers widen)")
        .group(group)
        .check(CLI::IsMember({"paper", "fan_in"})),
    o.init);
  v(Opt("init-scale", "uniform init range (--init paper)")
        .group(group)
        .check(CLI::Range(0.0, 10.0)),
    o.initScale);
}

/// The rows every driver's train command has: initRows, trainingRows and
/// runOutputRows (`outHelp` describes --out).
template <class Self, class Visit>
void sharedRows(Self &o, Visit &v, const char *outHelp) {
  initRows(o, v);
  trainingRows(o, v);
  runOutputRows(o, v, outHelp);
}

/// Adds one CLI11 option of `cmd` per row of the table of `options` (of
/// the rows of group `onlyGroup` alone, when given).
template <class Options>
void addOptionTable(CLI::App &cmd, Options &options,
                    const std::string &onlyGroup = "") {
  Options::fields(options, [&](const Opt &row, auto &field) {
    using Field = std::remove_reference_t<decltype(field)>;
    if (!onlyGroup.empty() && row.groupName() != onlyGroup)
      return;
    CLI::Option *opt = nullptr;
    switch (row.form()) {
    case Opt::Form::Recorded:
      return;
    case Opt::Form::Value:
      opt = option(cmd, row.name(), field, row.help());
      for (const CLI::Validator &validator : row.checks())
        opt->check(validator);
      opt->required(row.isRequired());
      break;
    case Opt::Form::Flag:
    case Opt::Form::NoFlag:
      if constexpr (std::is_same_v<Field, bool>) {
        bool set = row.form() == Opt::Form::Flag;
        opt = cmd.add_flag_function(
            "--" + row.commandLineName(),
            [&field, set](int64_t count) {
              if (count > 0)
                field = set;
            },
            row.help());
      }
      break;
    }
    if (opt && !row.groupName().empty())
      opt->group(row.groupName());
  });
}

/// The options as the key=value text a checkpoint stores.
template <class Options> OptionMap toOptionMap(const Options &options) {
  OptionMap map;
  Options::fields(options, [&](const Opt &row, const auto &field) {
    map[row.name()] = optionText(field);
  });
  return map;
}

/// The defaults, overridden by the map's keys (a key the map lacks takes
/// the row's absentMeans value; unknown keys are ignored: a newer driver's
/// checkpoint may have more). Each value passes the row's checks, or
/// DataError names the option.
template <class Options> Options fromOptionMap(const OptionMap &map) {
  Options options;
  Options::fields(options, [&](const Opt &row, auto &field) {
    auto it = map.find(row.name());
    const std::string *text = it != map.end() ? &it->second
                              : row.absent()  ? &*row.absent()
                                              : nullptr;
    if (!text)
      return;
    if (!text->empty())
      row.checkText(*text);
    parseOption(row.name(), *text, field);
  });
  return options;
}

/// What a driver's options struct derives from to get its checkpoint
/// record from its table: `struct TrainOptions : TableOptions<TrainOptions>`.
template <class Options> struct TableOptions {
  OptionMap toMap() const {
    return toOptionMap(static_cast<const Options &>(*this));
  }
  static Options fromMap(const OptionMap &map) {
    return fromOptionMap<Options>(map);
  }
};

/// The names (table keys) of the options the parsed `cmd` was given.
template <class Options>
std::set<std::string> givenTableOptions(const CLI::App &cmd) {
  std::set<std::string> given;
  Options defaults;
  Options::fields(defaults, [&](const Opt &row, const auto &) {
    if (row.form() == Opt::Form::Recorded)
      return;
    const CLI::Option *opt =
        cmd.get_option_no_throw("--" + row.commandLineName());
    if (opt && opt->count() > 0)
      given.insert(row.name());
  });
  return given;
}

/// How a resumed run treats each option of a table (RunFiles.h).
struct ResumeRules {
  std::set<std::string> changeable, fromCommandLine, paths;
};

template <class Options> ResumeRules resumeRules() {
  ResumeRules rules;
  Options defaults;
  Options::fields(defaults, [&](const Opt &row, const auto &) {
    if (row.resume() != Opt::Resume::Fixed)
      rules.changeable.insert(row.name());
    if (row.resume() == Opt::Resume::FromCommandLine)
      rules.fromCommandLine.insert(row.name());
    if (row.isPath())
      rules.paths.insert(row.name());
  });
  return rules;
}

} // namespace models

#endif
