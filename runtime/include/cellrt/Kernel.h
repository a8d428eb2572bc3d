/*===- cellrt/Kernel.h - ABI between cellc's generated code and cellrt ----===*\
|*                                                                            *|
|* Every fused kernel cellc emits has the same C signature, so the runtime    *|
|* can run any cell through one executor without knowing its shape. An object *|
|* compiled from a cell exports one `cellrt_image` worth of symbols:          *|
|*   const char cellc_<cell>_plan[];             the plan's tables (binary)   *|
|*   const cellrt_kernel_fn cellc_<cell>_kernels[]; kernels, in plan order    *|
|*   const char *const cellc_<cell>_kernel_names[];                           *|
|*   const int64_t cellc_<cell>_num_kernels;                                  *|
|* The plan's format is described in docs/plan-format.md.                     *|
\*===----------------------------------------------------------------------===*/

#ifndef CELLRT_KERNEL_H
#define CELLRT_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A fused element-wise kernel. It processes rows [row_begin, row_end).
/// For per-step kernels a row is a batch entry b, active iff
/// step < lengths[b]; an inactive row copies each current state to its next
/// value and writes zeros to the output. Sequence-level kernels (run over all
/// T*B rows at once) get lengths == NULL and compute every row.
/// `dims` holds the values of the plan's symbolic dimensions, in plan order.
/// `ptrs[i]` points at row 0, column 0 of the kernel's i-th argument (the
/// runtime applies step and column offsets) and `strides[i]` is its row
/// stride in floats (0 broadcasts a vector parameter to every row).
/// The arguments of one call must not overlap in memory (beyond a vector
/// parameter's rows sharing storage): kernels are compiled assuming so, which
/// lets every element loop vectorise without run-time alias checks. One
/// exception: a backward kernel's stored gradient results that are the same
/// value may be the same array (the schedule shares one buffer between
/// them); the kernel stores that value to each in the same element
/// iteration and never reads them back.
/// A kernel with `scratch` lines in the plan finds its scratch buffers in
/// `ptrs` after its arguments and their row strides after the argument
/// strides (docs/plan-format.md); it allocates nothing itself.
typedef void (*cellrt_kernel_fn)(int64_t row_begin, int64_t row_end,
                                 int64_t step, const int32_t *lengths,
                                 const int64_t *dims, float *const *ptrs,
                                 const int64_t *strides);

/// What one compiled cell gives the runtime.
typedef struct cellrt_image {
  /** The plan's tables (cellrt/PlanTables.h); their header gives the size. */
  const char *plan;
  const cellrt_kernel_fn *kernels;
  const char *const *kernel_names;
  int64_t num_kernels;
} cellrt_image;

#ifdef __cplusplus
}
#endif

#endif /* CELLRT_KERNEL_H */
