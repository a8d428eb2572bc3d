# cellc_compile_cells(OUT_VAR GEN_DIR CELLS file.cell... [OPTIONS flag...])
# Compiles each .cell with the in-tree cellc at build time into
# GEN_DIR/<stem>.o and GEN_DIR/<stem>.h (cellc_<cell>_image()) and puts the
# objects in OUT_VAR. Used by the examples, tests, models and benchmarks;
# users of an installed cellc have cellc_add_cell() instead.
function(cellc_compile_cells out_var gen_dir)
  cmake_parse_arguments(ARG "" "" "CELLS;OPTIONS" ${ARGN})
  set(objects)
  foreach(cell_file ${ARG_CELLS})
    get_filename_component(cell ${cell_file} NAME_WE)
    add_custom_command(
      OUTPUT ${gen_dir}/${cell}.o ${gen_dir}/${cell}.h
      COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
      COMMAND cellc ${cell_file} ${ARG_OPTIONS} -o ${gen_dir}/${cell}.o
      COMMAND cellc ${cell_file} ${ARG_OPTIONS} -emit=header
              -o ${gen_dir}/${cell}.h
      DEPENDS cellc ${cell_file}
      COMMENT "cellc ${cell}.cell ${ARG_OPTIONS}")
    list(APPEND objects ${gen_dir}/${cell}.o)
  endforeach()
  set(${out_var} ${objects} PARENT_SCOPE)
endfunction()
