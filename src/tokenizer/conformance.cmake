# Tokenizer conformance (label "conformance"): a ctest fixture runs the node
# oracle (tools/tokenizer-oracle, npm `tokenizers`) to write the expected ids,
# then tokenizer_conformance_test compares. Needs
#   npm ci --prefix tools/tokenizer-oracle
# and skips (GTEST_SKIP) when those node_modules are absent.
# Extra tokenizers (e.g. the bundled tiny model's): -DSTRATA_TOKENIZER_CONFORMANCE_EXTRA=name=/path/tokenizer.json;...
if(NOT STRATA_BUILD_TESTS)
  return()
endif()

set(STRATA_TOKENIZER_CONFORMANCE_EXTRA "" CACHE STRING
    "Extra name=path/tokenizer.json entries for the tokenizer conformance test")
set(_oracle_dir ${PROJECT_SOURCE_DIR}/tools/tokenizer-oracle)
set(_expected ${CMAKE_BINARY_DIR}/tokenizer_conformance.json)
find_program(STRATA_NODE_EXECUTABLE node)

strata_test(tokenizer_conformance_test
  SOURCES conformance_test.cc
  DEPS strata_tokenizer
  LABELS conformance)
set_tests_properties(tokenizer_conformance_test PROPERTIES
  ENVIRONMENT "STRATA_SOURCE_DIR=${PROJECT_SOURCE_DIR};STRATA_TOKENIZER_CONFORMANCE=${_expected}"
  SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
  TIMEOUT 600)

if(STRATA_NODE_EXECUTABLE)
  set(_extra_args "")
  set(_extra_entries ${STRATA_TOKENIZER_CONFORMANCE_EXTRA})
  # The bundled model's tokenizer is always part of the conformance set.
  set(_bundled ${PROJECT_SOURCE_DIR}/models/strata-tiny/tokenizer.json)
  if(EXISTS ${_bundled})
    list(APPEND _extra_entries strata-tiny=${_bundled})
  endif()
  foreach(entry IN LISTS _extra_entries)
    list(APPEND _extra_args --extra ${entry})
  endforeach()
  add_test(NAME tokenizer_conformance_generate
    COMMAND ${STRATA_NODE_EXECUTABLE} ${_oracle_dir}/generate.js --out ${_expected} ${_extra_args})
  set_tests_properties(tokenizer_conformance_generate PROPERTIES
    FIXTURES_SETUP tokenizer_oracle LABELS conformance TIMEOUT 600)
  set_tests_properties(tokenizer_conformance_test PROPERTIES FIXTURES_REQUIRED tokenizer_oracle)
endif()
