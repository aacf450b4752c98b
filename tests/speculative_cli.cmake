# speculative_cli: `strata serve` with a draft model of another vocabulary
# must refuse to start, naming both sizes (the draft loads like the target,
# then the engine checks it), and a draft_model config without a model must
# fail before any model loads.
# Args: STRATA_BIN, MODEL (the target), OTHER_VOCAB_MODEL (a draft of another vocab).
function(expect_refused config pattern)
  execute_process(
    COMMAND ${STRATA_BIN} serve ${MODEL} --port 0 --threads 1 --speculative-config ${config}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  if(rc EQUAL 0)
    message(FATAL_ERROR "serve started with ${config}:\n${out}\n${err}")
  endif()
  if(NOT "${out}${err}" MATCHES "${pattern}")
    message(FATAL_ERROR "serve with ${config}: expected '${pattern}', got (exit ${rc}):\n${out}\n${err}")
  endif()
endfunction()

expect_refused("{\"method\":\"draft_model\",\"model\":\"${OTHER_VOCAB_MODEL}\",\"num_speculative_tokens\":3}"
               "has a vocabulary of 352 tokens but the target has 320")
expect_refused("{\"method\":\"draft_model\",\"num_speculative_tokens\":3}"
               "model is required with method \"draft_model\"")
