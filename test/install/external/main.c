/* Runs the cell compiled by cellc_add_cell through the installed cellrt. */
#include "cellrt/cellrt.h"
#include "tiny.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  cellrt_cell *cell = cellrt_cell_load(cellc_tiny_image());
  if (!cell) {
    fprintf(stderr, "%s\n", cellrt_last_error());
    return 1;
  }
  /* Dims in the cell's order; H was fixed to 4 at compile time. */
  int64_t dims[1] = {3};
  float x[2 * 1 * 3] = {1, 0, 0, 0, 1, 0};
  float w[4 * 3], u[4 * 4], out[2 * 1 * 4];
  for (int i = 0; i < 12; ++i)
    w[i] = 0.1f * (float)i;
  memset(u, 0, sizeof u);
  const float *inputs[] = {x};
  cellrt_param params[] = {{"W", w}, {"U", u}};
  cellrt_run_args args;
  memset(&args, 0, sizeof args);
  args.steps = 2;
  args.batch = 1;
  args.dims = dims;
  args.inputs = inputs;
  args.params = params;
  args.num_params = 2;
  args.output = out;
  if (cellrt_forward(cell, &args, NULL) != 0) {
    fprintf(stderr, "%s\n", cellrt_last_error());
    return 1;
  }
  /* With U = 0, out[t] = tanh(W x_t): row 2 of W is (0.6, 0.7, 0.8). */
  float expected = tanhf(0.6f);
  printf("out[0][2] = %f, expected %f\n", out[2], expected);
  cellrt_cell_free(cell);
  return fabsf(out[2] - expected) < 1e-5f ? 0 : 1;
}
