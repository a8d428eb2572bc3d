//===- models/nmt/Commands.h - nmt's commands -------------------*- C++ -*-===//
//
// The commands of the nmt driver besides `train` (models/common/Driver.h
// runs them): each is its options and what runs it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_COMMANDS_H
#define CELLC_MODELS_NMT_COMMANDS_H

#include "models/common/Driver.h"

namespace nmt {

/// `nmt translate`: raw lines with one model or an ensemble; --n-best.
models::DriverCommand translateCommand();
/// `nmt score`: corpus BLEU-4 or chrF2 with sacreBLEU's signature.
models::DriverCommand scoreCommand();
/// `nmt average`: the parameter mean of checkpoints of one model.
models::DriverCommand averageCommand();
/// `nmt task`: the embedded numbers task's text.
models::DriverCommand taskCommand();
/// `nmt analyze`: the ATR paper's gate analyses of a trained model.
models::DriverCommand analyzeCommand();

} // namespace nmt

#endif
