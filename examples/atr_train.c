/*===- atr_train.c - Train a cellc-compiled ATR cell from plain C ----------===*\
|*                                                                            *|
|* The C API end to end: load the cell, run forward in training mode, get    *|
|* the gradients of a squared-error loss with cellrt_backward, take plain    *|
|* gradient steps, and watch the loss fall. Also runs one decoding step.     *|
|*   cellc cells/atr.cell -o atr.o && cellc cells/atr.cell -emit=header      *|
|*   cc atr_train.c atr.o -lcellrt                                           *|
\*===----------------------------------------------------------------------===*/

#include "atr.h"
#include "cellrt/cellrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T = 8, B = 4, I = 6, H = 5 };

static float uniform(unsigned *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return ((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
}

int main(void) {
  cellrt_cell *cell = cellrt_cell_load(cellc_atr_image());
  if (!cell) {
    fprintf(stderr, "atr_train: %s\n", cellrt_last_error());
    return 1;
  }
  /* The dims in the cell's order (H, I for ATR). */
  int64_t dims[2];
  for (int64_t i = 0; i < cellrt_cell_num_dims(cell); ++i)
    dims[i] = strcmp(cellrt_cell_dim_name(cell, i), "H") == 0 ? H : I;

  static float x[T * B * I], target[T * B * H], out[T * B * H];
  static float wx[H * I], wh[H * H], dwx[H * I], dwh[H * H], dout[T * B * H];
  unsigned seed = 42;
  for (int i = 0; i < T * B * I; ++i)
    x[i] = uniform(&seed);
  for (int i = 0; i < T * B * H; ++i)
    target[i] = 0.5f * uniform(&seed);
  for (int i = 0; i < H * I; ++i)
    wx[i] = uniform(&seed);
  for (int i = 0; i < H * H; ++i)
    wh[i] = uniform(&seed);
  int32_t lengths[B] = {T, T - 1, 3, 1};
  const float *inputs[] = {x};
  cellrt_param params[] = {{"Wx", wx}, {"Wh", wh}};
  cellrt_param grads[] = {{"Wx", dwx}, {"Wh", dwh}};

  cellrt_run_args args;
  memset(&args, 0, sizeof args);
  args.steps = T;
  args.batch = B;
  args.dims = dims;
  args.inputs = inputs;
  args.lengths = lengths;
  args.params = params;
  args.num_params = 2;
  args.output = out;

  cellrt_tape *tape = cellrt_tape_new();
  float first = 0, loss = 0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    if (cellrt_forward(cell, &args, tape) != 0) {
      fprintf(stderr, "atr_train: %s\n", cellrt_last_error());
      return 1;
    }
    loss = 0;
    for (int i = 0; i < T * B * H; ++i) {
      float diff = out[i] - target[i];
      loss += 0.5f * diff * diff;
      dout[i] = diff;
    }
    if (iteration == 0)
      first = loss;
    memset(dwx, 0, sizeof dwx);
    memset(dwh, 0, sizeof dwh);
    cellrt_gradients gradients;
    memset(&gradients, 0, sizeof gradients);
    gradients.output_gradient = dout;
    gradients.param_gradients = grads;
    gradients.num_param_gradients = 2;
    if (cellrt_backward(cell, &args, &gradients, tape) != 0) {
      fprintf(stderr, "atr_train: %s\n", cellrt_last_error());
      return 1;
    }
    for (int i = 0; i < H * I; ++i)
      wx[i] -= 0.1f * dwx[i];
    for (int i = 0; i < H * H; ++i)
      wh[i] -= 0.1f * dwh[i];
  }
  printf("atr_train: loss %.5f -> %.5f after 100 gradient steps\n", first,
         loss);

  /* One decoding step for the first B rows, from zero states. */
  float next[B * H], step_out[B * H];
  float *finals[] = {next};
  cellrt_run_args step = args;
  step.lengths = NULL;
  step.output = step_out;
  step.final_states = finals;
  if (cellrt_step(cell, &step, NULL) != 0) {
    fprintf(stderr, "atr_train: %s\n", cellrt_last_error());
    return 1;
  }
  printf("atr_train: one step, h'[0] = %.5f (output %.5f)\n", next[0],
         step_out[0]);

  /* Errors come back as values: a param the cell does not have. */
  cellrt_param wrong[] = {{"Wq", wx}};
  args.params = wrong;
  args.num_params = 1;
  if (cellrt_forward(cell, &args, NULL) == 0) {
    fprintf(stderr, "atr_train: expected an error for param 'Wq'\n");
    return 1;
  }
  printf("atr_train: bad call reports: %s\n", cellrt_last_error());
  cellrt_tape_free(tape);
  cellrt_cell_free(cell);
  return loss < 0.7f * first ? 0 : 1;
}
