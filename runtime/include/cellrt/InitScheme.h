//===- cellrt/InitScheme.h - How a param's values start ---------*- C++ -*-===//
//
// A cell may say how each param starts (`param bf: [H] = 1`,
// `param U: [4*H, H] ~ orthogonal`); the plan carries it (`param bf H init
// constant 1`) and Cell::initParams draws it. This header is the one place
// that names the schemes and states their rules, so the front end, the
// dialect's verifier and the plan's parser agree. It depends on nothing
// else; the compiler links it as the runtime does.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_INITSCHEME_H
#define CELLRT_INITSCHEME_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cellrt {

/// One way of filling a param: a constant, or values drawn from a seed
/// (docs/cell-language.md, "Initialisers", says how, number by number).
struct InitScheme {
  enum class Kind {
    /// Nothing declared: the caller's fallback applies.
    None,
    /// Every element `value`.
    Constant,
    /// U(-value, value).
    Uniform,
    /// N(0, value^2).
    Normal,
    /// Orthonormal columns or rows, whichever are fewer (matrices only), as
    /// torch.nn.init.orthogonal_.
    Orthogonal,
    /// U(-1/sqrt(C), 1/sqrt(C)) for an [R, C] matrix, 1/sqrt(D) for a [D]
    /// vector.
    FanIn,
    /// U(-1/sqrt(R), 1/sqrt(R)) for an [R, C] matrix, 1/sqrt(D) for a [D]
    /// vector.
    FanOut,
  };

  Kind kind = Kind::None;
  /// Constant: the value; Uniform: the bound; Normal: the standard
  /// deviation; 0 for the kinds without an argument.
  double value = 0;

  static InitScheme none() { return {}; }
  static InitScheme constant(double c) { return {Kind::Constant, c}; }
  static InitScheme uniform(double bound) { return {Kind::Uniform, bound}; }
  static InitScheme normal(double stddev) { return {Kind::Normal, stddev}; }
  static InitScheme orthogonal() { return {Kind::Orthogonal, 0}; }
  static InitScheme fanIn() { return {Kind::FanIn, 0}; }
  static InitScheme fanOut() { return {Kind::FanOut, 0}; }

  bool isNone() const { return kind == Kind::None; }
  bool operator==(const InitScheme &other) const {
    return kind == other.kind && value == other.value;
  }
  bool operator!=(const InitScheme &other) const { return !(*this == other); }

  /// The plan's text: `none`, `constant 1`, `uniform 0.05`, `orthogonal`.
  std::string str() const;
  /// Parses str()'s text (the same tokens as the plan); nullopt when it is
  /// not one, or breaks the value rules (checkInitValue).
  static std::optional<InitScheme> parse(std::string_view text);
  /// Also takes a scheme as a cell writes it, for command lines and
  /// callers' fallbacks: `uniform(0.1)`, `fan_in()`, `constant(0)`.
  static std::optional<InitScheme> parseWritten(std::string_view text);
};

/// `constant`, `uniform`, `normal`, `orthogonal`, `fan_in`, `fan_out`,
/// `none`: the names the cell language and the plan use.
const char *initKindName(InitScheme::Kind kind);
std::optional<InitScheme::Kind> parseInitKind(std::string_view name);
/// The names a cell may write after `~` (not `constant`, written `= c`,
/// nor `none`).
std::vector<std::string> drawnInitKindNames();
/// Whether the kind takes one number: constant, uniform and normal do.
bool initKindTakesValue(InitScheme::Kind kind);
/// What the number means, for messages: "value", "bound", "standard
/// deviation".
const char *initValueRole(InitScheme::Kind kind);

/// "" or why the scheme's number cannot be: a constant must be a finite
/// float32, a bound or a standard deviation a positive finite float32, and
/// the kinds without an argument must have 0.
std::string checkInitValue(const InitScheme &scheme);
/// "" or why a param of `rank` dimensions (1: a vector, 2: a matrix)
/// cannot be drawn so: orthogonal needs a matrix.
std::string checkInitRank(const InitScheme &scheme, size_t rank);

/// The shortest text that reads back as `value` (`0.05`, `1`, `-2.5e-05`).
std::string formatInitValue(double value);

} // namespace cellrt

#endif // CELLRT_INITSCHEME_H
