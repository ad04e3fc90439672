# The arena's trace log end to end (tools/CMakeLists.txt): `ebt_arena --log FILE --log-agents 3,7` on a
# small world, then ebt_trace prints guard 3's first frame, exactly.
#
#   cmake -DARENA=... -DEBT_TRACE=... -DWORK_DIR=... -P run_arena_log_test.cmake

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(log "${WORK_DIR}/arena.ebtlog")
execute_process(COMMAND "${ARENA}" --agents 120 --seconds 2 --log "${log}" --log-agents 3,7
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "trace log: +[^\n]*arena.ebtlog \\([0-9]+ records, [0-9]+ bytes; read it with ebt_trace\\)")
  message(FATAL_ERROR "ebt_arena --log exited with ${rc}:\n${out}\n${err}")
endif()
execute_process(COMMAND "${EBT_TRACE}" "${log}" --agent 3 --ticks 0
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(want "0 3:1 initialize /ActiveSelector
0 3:1 guard /ActiveSelector/Sequence[0] false
0 3:1 guard /ActiveSelector/Sequence[1] false
0 3:1 guard /ActiveSelector/Sequence[2] false
0 3:1 guard /ActiveSelector/Sequence[3] false
0 3:1 initialize /ActiveSelector/Action 'Patrol'[4]
0 3:1 update /ActiveSelector/Action 'Patrol'[4] Running
")
if(NOT rc EQUAL 0 OR NOT out STREQUAL want)
  message(FATAL_ERROR "ebt_trace on the arena's log exited with ${rc}:\n${out}\nexpected:\n${want}\n${err}")
endif()
# Only the chosen guards are in the log.
execute_process(COMMAND "${EBT_TRACE}" "${log}" --json RESULT_VARIABLE rc OUTPUT_VARIABLE out)
string(REGEX MATCHALL "\"agent\":\"[0-9]+:[0-9]+\"" agents "${out}")
list(REMOVE_DUPLICATES agents)
list(SORT agents)
if(NOT agents STREQUAL "\"agent\":\"3:1\";\"agent\":\"7:1\"")
  message(FATAL_ERROR "the log holds agents ${agents}, expected 3:1 and 7:1")
endif()
message(STATUS "ebt_arena --log: passed")
