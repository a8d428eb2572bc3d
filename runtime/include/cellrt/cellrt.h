/*===- cellrt/cellrt.h - The C API of the cellc runtime -------------------===*\
|*                                                                            *|
|* Runs cells compiled by cellc from C (or any language with a C FFI):        *|
|*                                                                            *|
|*   #include "atr.h"          // cellc cells/atr.cell -emit=header -o atr.h  *|
|*   cellrt_cell *cell = cellrt_cell_load(cellc_atr_image());                 *|
|*   int64_t dims[] = {512, 256};   // values of cellrt_cell_dim_name(cell,i) *|
|*   cellrt_param params[] = {{"Wx", wx}, {"Wh", wh}};                        *|
|*   cellrt_run_args args = {T, B, dims, inputs, lengths, NULL, params, 2};   *|
|*   args.output = out;                                                       *|
|*   if (cellrt_forward(cell, &args, NULL) != 0)                              *|
|*     fprintf(stderr, "%s\n", cellrt_last_error());                          *|
|*                                                                            *|
|* Every array is dense, row-major float32; shapes follow from the plan and  *|
|* `dims`: inputs [T, B, LEN], states [B, LEN], output [T, B, OUT], params    *|
|* as declared in the cell. Functions return 0 on success and nonzero on     *|
|* error, with the message in cellrt_last_error() (per thread).              *|
\*===----------------------------------------------------------------------===*/

#ifndef CELLRT_CELLRT_H
#define CELLRT_CELLRT_H

#include "cellrt/Kernel.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cellrt_cell cellrt_cell;
typedef struct cellrt_tape cellrt_tape;

/// A parameter (or its gradient) by the name the cell declares.
typedef struct cellrt_param {
  const char *name;
  float *data;
} cellrt_param;

/// One run over a padded batch of sequences.
typedef struct cellrt_run_args {
  int64_t steps, batch;
  /// Values of the cell's symbolic dimensions, in cellrt_cell_dim_name order.
  const int64_t *dims;
  /// One per input, [T, B, LEN].
  const float *const *inputs;
  /// B lengths, 1 <= length <= T; NULL: every sequence has T steps.
  const int32_t *lengths;
  /// One per state, [B, LEN]; NULL (or a NULL entry): zeros.
  const float *const *initial_states;
  const cellrt_param *params;
  int64_t num_params;
  /// Nonzero: each sequence runs from its last step down to its first.
  int reverse;
  /// [T, B, OUT], zeros at padded steps; NULL: not written.
  float *output;
  /// One per state, [B, LEN]; NULL (or a NULL entry): not written.
  float *const *final_states;
  /// One per probe of a cell compiled with `cellc --probe` (in
  /// cellrt_cell_probe_name order), [T, B, LEN]; NULL (or a NULL entry):
  /// not written. Zero-initialise the struct (memset) so older code leaves
  /// it NULL.
  float *const *probes;
} cellrt_run_args;

/// Gradients for cellrt_backward; it ADDS to every gradient array.
typedef struct cellrt_gradients {
  /// dL/d(output) [T, B, OUT]; NULL: zero.
  const float *output_gradient;
  /// One per state, dL/d(final state) [B, LEN]; NULL: zero.
  const float *const *final_state_gradients;
  /// One per input [T, B, LEN]; NULL (or NULL entry): not wanted.
  float *const *input_gradients;
  /// One per state [B, LEN]; NULL (or NULL entry): not wanted.
  float *const *initial_state_gradients;
  /// Param gradients by name; params not listed are not computed.
  const cellrt_param *param_gradients;
  int64_t num_param_gradients;
} cellrt_gradients;

/// Loads a compiled cell (cellc_<cell>_image()); NULL on error.
cellrt_cell *cellrt_cell_load(cellrt_image image);
void cellrt_cell_free(cellrt_cell *cell);

int64_t cellrt_cell_num_dims(const cellrt_cell *cell);
const char *cellrt_cell_dim_name(const cellrt_cell *cell, int64_t index);
int64_t cellrt_cell_num_inputs(const cellrt_cell *cell);
int64_t cellrt_cell_num_states(const cellrt_cell *cell);
/// The probes the cell was compiled with (`cellc --probe`), in order.
int64_t cellrt_cell_num_probes(const cellrt_cell *cell);
const char *cellrt_cell_probe_name(const cellrt_cell *cell, int64_t index);
/// Nonzero when the cell was compiled with its backward pass.
int cellrt_cell_has_backward(const cellrt_cell *cell);
/// What the cell's products read: "f32", or "bf16" (operands rounded to
/// bfloat16, sums in f32; `cellc --precision bf16`).
const char *cellrt_cell_precision(const cellrt_cell *cell);
/// Makes the cell's products read "f32" or "bf16" (Cell::withPrecision);
/// not while a call on the cell runs, and a tape recorded before is
/// refused by backward. 0 on success.
int cellrt_cell_set_precision(cellrt_cell *cell, const char *precision);

/* What a cell takes, for callers that did not compile it (ctypes, other
 * languages). Names are valid while the cell lives; sizes are evaluated for
 * `dims`, the values of the cell's dims in cellrt_cell_dim_name order. A bad
 * index gives NULL or -1. */
const char *cellrt_cell_input_name(const cellrt_cell *cell, int64_t index);
int64_t cellrt_cell_input_length(const cellrt_cell *cell, int64_t index,
                                 const int64_t *dims);
const char *cellrt_cell_state_name(const cellrt_cell *cell, int64_t index);
int64_t cellrt_cell_state_length(const cellrt_cell *cell, int64_t index,
                                 const int64_t *dims);
int64_t cellrt_cell_num_params(const cellrt_cell *cell);
const char *cellrt_cell_param_name(const cellrt_cell *cell, int64_t index);
/** 1 for a vector [LEN], 2 for a matrix [ROWS, COLS]. */
int64_t cellrt_cell_param_rank(const cellrt_cell *cell, int64_t index);
int64_t cellrt_cell_param_extent(const cellrt_cell *cell, int64_t index,
                                 int64_t axis, const int64_t *dims);
/** The width of what the cell emits per step. */
int64_t cellrt_cell_output_width(const cellrt_cell *cell, const int64_t *dims);

/* Initial params (Cell::initParams). A scheme is written as in the plan,
 * "constant 1", "uniform 0.05", "normal 0.02", "orthogonal", "fan_in",
 * "fan_out", "none", or as in a cell, "uniform(0.05)". */
/** The initialiser param `index` declares in its cell (`~ uniform(0.05)`
 * gives "uniform 0.05"), or "none"; NULL for a bad index. */
const char *cellrt_cell_param_init(const cellrt_cell *cell, int64_t index);
/** Draws each of `params` (host arrays shaped for `dims`, in
 * cellrt_cell_dim_name order) from `seed`: by its cell's initialiser, or,
 * for a param without one, by `fallback` ("none": left as it is). The
 * same seed gives the same floats as the C++ API, on every platform, and a
 * param's values do not depend on the other params. 0 on success. */
int cellrt_init_params(const cellrt_cell *cell, const int64_t *dims,
                       const cellrt_param *params, int64_t num_params,
                       uint64_t seed, const char *fallback);

cellrt_tape *cellrt_tape_new(void);
void cellrt_tape_free(cellrt_tape *tape);

/// Inference, or (with a tape) training-mode forward for cellrt_backward.
int cellrt_forward(const cellrt_cell *cell, const cellrt_run_args *args,
                   cellrt_tape *tape);
/// Backpropagates the forward recorded in `tape`; `args` must be the same.
int cellrt_backward(const cellrt_cell *cell, const cellrt_run_args *args,
                    const cellrt_gradients *gradients, cellrt_tape *tape);
/// One step for B rows (decoders): like a run with T = 1; `source_rows`
/// (may be NULL) gathers each row's state from that row (beam search).
int cellrt_step(const cellrt_cell *cell, const cellrt_run_args *args,
                const int32_t *source_rows);

/// The last error of this thread ("" if none).
const char *cellrt_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* CELLRT_CELLRT_H */
