# The plan's enums are listed once, in schedule/PlanEnums.td (the sched
# dialect's); the runtime gets them as X-macros, made at configure time from
# llvm-tblgen's dump of the records, so no target waits on them. Editing the
# .td reconfigures.
set(CELLRT_GENERATED_INCLUDE_DIR ${PROJECT_BINARY_DIR}/runtime/include)
set(plan_enums_td ${PROJECT_SOURCE_DIR}/schedule/PlanEnums.td)
set(plan_enums_py ${PROJECT_SOURCE_DIR}/cmake/plan_enums.py)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${plan_enums_td} ${plan_enums_py})
file(MAKE_DIRECTORY ${CELLRT_GENERATED_INCLUDE_DIR}/cellrt)
set(plan_enums_includes)
foreach(dir ${MLIR_INCLUDE_DIRS})
  list(APPEND plan_enums_includes -I ${dir})
endforeach()
execute_process(
  COMMAND ${LLVM_TOOLS_BINARY_DIR}/llvm-tblgen --dump-json
          ${plan_enums_includes} ${plan_enums_td}
          -o ${PROJECT_BINARY_DIR}/runtime/PlanEnums.json
  RESULT_VARIABLE plan_enums_rc)
if(NOT plan_enums_rc EQUAL 0)
  message(FATAL_ERROR "llvm-tblgen could not read ${plan_enums_td}")
endif()
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${plan_enums_py}
          ${PROJECT_BINARY_DIR}/runtime/PlanEnums.json
          ${CELLRT_GENERATED_INCLUDE_DIR}/cellrt/PlanEnums.inc
  RESULT_VARIABLE plan_enums_rc)
if(NOT plan_enums_rc EQUAL 0)
  message(FATAL_ERROR "cmake/plan_enums.py failed")
endif()
