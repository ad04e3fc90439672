# The ebt_trace test (tools/CMakeLists.txt): writes a known log with ebt_make_trace_log, runs ebt_trace
# on it with filters and in both output forms, and on a cut log, a log of another version and bad
# command lines; compares stdout with tools/tests/expected/*, and the exit status and stderr exactly.
#
#   cmake -DMAKE_LOG=... -DEBT_TRACE=... -DWORK_DIR=... -DEXPECTED_DIR=... -P run_ebt_trace_test.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(log "${WORK_DIR}/guard.ebtlog")
execute_process(COMMAND "${MAKE_LOG}" "${log}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ebt_make_trace_log failed (${rc})")
endif()

# run(NAME EXIT_CODE EXPECTED_STDOUT_FILE_OR_EMPTY EXPECTED_STDERR ARGS...)
function(run name code expected_out expected_err)
  execute_process(COMMAND "${EBT_TRACE}" ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "${code}")
    message(FATAL_ERROR "${name}: ebt_trace ${ARGN} exited with ${rc}, expected ${code}\nstdout:\n${out}\nstderr:\n${err}")
  endif()
  if(expected_out)
    file(READ "${EXPECTED_DIR}/${expected_out}" want)
    if(NOT out STREQUAL want)
      file(WRITE "${WORK_DIR}/${expected_out}" "${out}")
      message(FATAL_ERROR "${name}: the output differs from ${EXPECTED_DIR}/${expected_out} (got: ${WORK_DIR}/${expected_out}):\n${out}")
    endif()
  endif()
  if(NOT err STREQUAL expected_err)
    message(FATAL_ERROR "${name}: stderr was\n[${err}]\nexpected\n[${expected_err}]")
  endif()
  set(last_stdout "${out}" PARENT_SCOPE)
endfunction()

run(all 0 all.txt "" "${log}")
run(json 0 seer_ticks_2_3.jsonl "" "${log}" --agent 1:1 --ticks 2..3 --json)
run(patrol 0 patrol_updates.txt "" "${log}" --node "*Patrol*" --kind update,terminate --agent 0,1 --ticks 1..3)
run(changes 0 changes.txt "" "${log}" --kind change)

# A log cut by a crash: the records of its whole blocks are printed, then where it was cut. Status 3.
run(cut 3 cut.txt "ebt_trace: ${log}.cut: byte 275: truncated: the file ends inside a block of 137 bytes (133 there; a crash while writing?)\nebt_trace: the 5 records before it were read\n" "${log}.cut")
run(version 1 "" "ebt_trace: ${log}.v9: byte 12: trace log format version 9; this build of ebt reads versions 1 to 1\n" "${log}.v9")
run(not_a_log 1 "" "ebt_trace: ${EXPECTED_DIR}/all.txt: byte 0: not a trace log (an ebt trace log starts with \"EBTLOG\")\n" "${EXPECTED_DIR}/all.txt")
run(missing 1 "" "ebt_trace: ${WORK_DIR}/none.ebtlog: byte 0: cannot open the file for reading\n" "${WORK_DIR}/none.ebtlog")

set(see_help "(ebt_trace --help shows the options)\n")
run(no_file 2 "" "ebt_trace: no log file given\n${see_help}")
run(bad_ticks 2 "" "ebt_trace: --ticks: the range 5..2 is empty (its start is after its end)\n${see_help}" "${log}" --ticks 5..2)
run(bad_range 2 "" "ebt_trace: --ticks: 'x..2' is not a tick range (A..B, A.., ..B or A)\n${see_help}" "${log}" --ticks x..2)
run(bad_kind 2 "" "ebt_trace: --kind: unknown kind 'updates' (the kinds: initialize, update, terminate, guard, condition, error, change)\n${see_help}" "${log}" --kind updates)
run(bad_agent 2 "" "ebt_trace: --agent: '1:0' is not a handle (INDEX:GENERATION, e.g. 12:1, or INDEX)\n${see_help}" "${log}" --agent 1:0)
run(bad_option 2 "" "ebt_trace: unknown option '--frobnicate'\n${see_help}" "${log}" --frobnicate)
run(two_files 2 "" "ebt_trace: one log at a time: '${log}' and 'other'\n${see_help}" "${log}" other)
run(help 0 "" "" --help)
if(NOT last_stdout MATCHES "^usage: ebt_trace FILE")
  message(FATAL_ERROR "help: no usage line:\n${last_stdout}")
endif()
message(STATUS "ebt_trace: every case passed")
