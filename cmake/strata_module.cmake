# strata_module(NAME SOURCES a.cc b.cc DEPS other_modules...)
#   One static library per module, target name strata_<NAME>, include root src/.
#   Modules include each other as "module/file.h".
function(strata_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(strata_${name} STATIC ${M_SOURCES})
  target_include_directories(strata_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(strata_${name} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
endfunction()

# strata_test(NAME SOURCES a_test.cc DEPS strata_x [LABELS unit])
#   A gtest binary registered with ctest (label "unit" unless told otherwise).
#   Label "unit" also makes it part of the strata_unit_tests target (built and
#   run under ASan + UBSan by scripts/sanitize.sh), label "concurrency" part of
#   strata_concurrency_tests (run under ThreadSanitizer).
function(strata_test name)
  if(NOT STRATA_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT 300
    ENVIRONMENT "STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  strata_test_groups(${name} "${T_LABELS}")
endfunction()

# strata_test_groups(TARGET LABELS)
#   Adds TARGET to the build targets of the test groups its labels name, for
#   tests registered with add_test directly (their programs must be built too).
function(strata_test_groups target labels)
  if("unit" IN_LIST labels)
    add_dependencies(strata_unit_tests ${target})
  endif()
  if("concurrency" IN_LIST labels)
    add_dependencies(strata_concurrency_tests ${target})
  endif()
endfunction()
