# The replay CLI tests (tests/CMakeLists.txt): ebt_arena --record, then ebt_replay.
#   -DCASE=identical  300 frames of a small arena replay identically, as recorded and in poll mode
#   -DCASE=tampered   one recorded answer changed: the first divergence is printed, exit 1
# Also: -DARENA=, -DREPLAY=, -DTAMPER= (the programs), -DDIR= (a scratch directory), -DEXPECTED= (tampered).

set(file "${DIR}/replay_${CASE}.ebtrec")
execute_process(COMMAND "${ARENA}" --agents 60 --seconds 15 --record "${file}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ebt_arena --record failed (${rc}): ${err}")
endif()
if(NOT out MATCHES "recording: +[^\n]* \\(300 frames; replay with ebt_replay\\)")
  message(FATAL_ERROR "ebt_arena did not report the recording:\n${out}")
endif()

function(replay expected_rc expected_out)
  execute_process(COMMAND "${REPLAY}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc OR NOT out STREQUAL "${expected_out}\n")
    message(FATAL_ERROR "ebt_replay ${ARGN}: exit ${rc} (expected ${expected_rc}), printed:\n${out}${err}\nexpected:\n${expected_out}")
  endif()
  message(STATUS "ebt_replay ${ARGN}: ${out}")
endfunction()

if(CASE STREQUAL "identical")
  replay(0 "identical after 300 frames" "${file}")
  replay(0 "identical after 300 frames" "${file}" --mode poll)
  replay(0 "identical after 300 frames" "${file}" --mode event --break-at 150)
elseif(CASE STREQUAL "tampered")
  execute_process(COMMAND "${TAMPER}" "${file}" "${file}.tampered" 100 RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ebt_tamper_recording failed (${rc})")
  endif()
  replay(1 "${EXPECTED}" "${file}.tampered")
  replay(1 "${EXPECTED}" "${file}.tampered" --mode poll)
  file(REMOVE "${file}.tampered")
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()
file(REMOVE "${file}")
