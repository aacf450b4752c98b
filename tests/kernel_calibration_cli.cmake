# kernel_calibration_cli: `strata generate --kernel-calibration force` then
# `auto` on the bundled model with a private cache directory.
# Args: STRATA_BIN, MODEL, CACHE (directory; emptied first).
file(REMOVE_RECURSE ${CACHE})
function(run_generate mode out_var)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env XDG_CACHE_HOME=${CACHE} --unset=STRATA_KERNEL_CALIBRATION
            ${STRATA_BIN} generate --model ${MODEL} --prompt-ids 1,2,3 --max-tokens 2
            --threads 1 --kernel-calibration ${mode}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "--kernel-calibration ${mode}: exit ${rc}\n${out}\n${err}")
  endif()
  set(${out_var} "${err}" PARENT_SCOPE)
endfunction()

run_generate(force forced)
if(NOT forced MATCHES "kernel calibration \\(force\\): [0-9]+ classes, 0 from cache")
  message(FATAL_ERROR "force did not measure:\n${forced}")
endif()
file(GLOB cache_files ${CACHE}/strata/kernel-calibration-*.txt)
list(LENGTH cache_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one cache file under ${CACHE}/strata, found ${n}")
endif()
run_generate(auto cached)
if(NOT cached MATCHES "kernel calibration \\(auto\\): ([0-9]+) classes, ([0-9]+) from cache")
  message(FATAL_ERROR "auto printed no summary:\n${cached}")
endif()
if(NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2)
  message(FATAL_ERROR "auto did not take every class from the cache:\n${cached}")
endif()
run_generate(off off_out)
if(NOT off_out MATCHES "kernel calibration off")
  message(FATAL_ERROR "off printed:\n${off_out}")
endif()
execute_process(COMMAND ${STRATA_BIN} generate --model ${MODEL} --prompt-ids 1 --kernel-calibration sometimes
  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT err MATCHES "must be off, auto or force")
  message(FATAL_ERROR "a bad mode was accepted (exit ${rc}): ${err}")
endif()
