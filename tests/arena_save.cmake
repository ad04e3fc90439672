# arena_save: `ebt_arena --save-at S FILE` then `ebt_arena --load FILE` ends in the same state hash
# as the run that was never interrupted, and prints the same per-second counts from the saved second
# on (docs/snapshots.md, "In the arena"). Run by CTest with -DARENA=<ebt_arena> -DWORK=<a directory>
# -DCASE=<case>:
#   event          event mode, 1 thread
#   event_threads  event mode, the loaded run on 2 threads
#   poll           poll mode
#   lod            event mode with --lod on
#   errors         bad uses of --load and bad files are refused with their messages, exit status 2
set(common --agents 600 --seconds 8)
if(CASE STREQUAL "event")
  set(options --mode event)
  set(load_options)
elseif(CASE STREQUAL "event_threads")
  set(options --mode event)
  set(load_options --threads 2)
elseif(CASE STREQUAL "poll")
  set(options --mode poll)
  set(load_options)
elseif(CASE STREQUAL "lod")
  set(options --lod on)
  set(load_options)
elseif(NOT CASE STREQUAL "errors")
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()
file(MAKE_DIRECTORY "${WORK}")
set(save "${WORK}/arena_save_${CASE}.ebtarena")

function(run_arena out_var)
  execute_process(COMMAND "${ARENA}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ebt_arena ${ARGN} failed (${rc}):\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# The state hash line, and the per-second lines after `from` seconds without their timing columns:
# time, patrol, respond, attack, flee, stunned, knocked back, intruders, alarms, events handled.
function(summarize out from hash_var seconds_var)
  string(REGEX MATCH "state hash: +[0-9a-f]+  \\(world [0-9a-f]+, sim [0-9a-f]+\\)" hash "${out}")
  if(hash STREQUAL "")
    message(FATAL_ERROR "no state hash in:\n${out}")
  endif()
  string(REGEX MATCHALL "\n +[0-9]+\\.[0-9]( +[0-9]+)( +[0-9]+)( +[0-9]+)( +[0-9]+)( +[0-9]+)( +[0-9]+)( +[0-9]+)( +[0-9]+)( +[0-9]+)" lines "${out}")
  set(kept)
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(REGEX MATCH "^[0-9]+" second "${line}")
    if(second GREATER from)
      string(REGEX REPLACE " +" " " line "${line}")
      list(APPEND kept "${line}")
    endif()
  endforeach()
  set(${hash_var} "${hash}" PARENT_SCOPE)
  set(${seconds_var} "${kept}" PARENT_SCOPE)
endfunction()

if(NOT CASE STREQUAL "errors")
  file(REMOVE "${save}")
  run_arena(whole ${common} ${options})
  run_arena(saving ${common} ${options} --save-at 4 "${save}")
  if(NOT saving MATCHES "saved at 4 s \\(frame 80\\) to ")
    message(FATAL_ERROR "the --save-at run did not say it saved:\n${saving}")
  endif()
  run_arena(loading --load "${save}" --seconds 8 ${load_options})
  if(NOT loading MATCHES "continuing the run saved in [^\n]* at 4 s \\(frame 80\\)")
    message(FATAL_ERROR "the --load run did not say what it continues:\n${loading}")
  endif()
  summarize("${whole}" 4 whole_hash whole_seconds)
  summarize("${saving}" 4 saving_hash saving_seconds)
  summarize("${loading}" 4 loading_hash loading_seconds)
  message(STATUS "uninterrupted: ${whole_hash}")
  message(STATUS "loaded:        ${loading_hash}")
  if(NOT saving_hash STREQUAL whole_hash)
    message(FATAL_ERROR "saving changed the run: '${saving_hash}' vs '${whole_hash}'")
  endif()
  if(NOT loading_hash STREQUAL whole_hash)
    message(FATAL_ERROR "the loaded run ended in another state: '${loading_hash}' vs '${whole_hash}'")
  endif()
  list(LENGTH whole_seconds count)
  if(NOT count EQUAL 4)
    message(FATAL_ERROR "expected 4 per-second lines after 4 s, got ${count}:\n${whole}")
  endif()
  if(NOT loading_seconds STREQUAL whole_seconds)
    message(FATAL_ERROR "the loaded run's seconds differ:\n${loading_seconds}\nvs\n${whole_seconds}")
  endif()
  return()
endif()

# ---- errors: each refused with exit status 2 and its message on stderr ----
function(refused expected)
  execute_process(COMMAND "${ARENA}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "ebt_arena ${ARGN}: exit status ${rc}, expected 2:\n${out}\n${err}")
  endif()
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "ebt_arena ${ARGN}: expected '${expected}' in:\n${err}")
  endif()
endfunction()

file(REMOVE "${save}")
run_arena(saving --agents 200 --seconds 2 --mode event --save-at 1 "${save}")
refused("error: --mode poll conflicts with --load ${save}, saved with --mode event (the loaded arena's configuration comes from its file: leave --mode out)"
  --load "${save}" --seconds 3 --mode poll)
refused("error: --agents 100 conflicts with --load ${save}, saved with --agents 200"
  --load "${save}" --seconds 3 --agents 100)
refused("error: --seconds 1: the run in ${save} is at 1 s already" --load "${save}" --seconds 1)
if(XML)  # without XML support --record is refused before (tests/CMakeLists.txt passes EBT_XML)
  refused("error: --record cannot be combined with --load: a recording starts from a new world"
    --load "${save}" --seconds 3 --record "${WORK}/never.ebtrec")
endif()
refused("error: --save-at 9 is after the end of the run (--seconds 2)" --seconds 2 --save-at 9 "${WORK}/never.ebtarena")
refused("error: --save-at: cannot write '${WORK}/no-such-dir/x.ebtarena': No such file or directory"
  --seconds 2 --save-at 1 "${WORK}/no-such-dir/x.ebtarena")
# Equal values are no conflict.
run_arena(same --load "${save}" --seconds 2 --agents 200 --mode event)

# A file that is not an arena save; one cut short.
file(WRITE "${WORK}/not_a_save.ebtarena" "hello, world\n")
refused("error: --load: ${WORK}/not_a_save.ebtarena: byte 0: not ebt arena save (its first bytes are not the ebt arena save magic)"
  --load "${WORK}/not_a_save.ebtarena")
file(READ "${save}" hex HEX)
string(SUBSTRING "${hex}" 0 200 cut)
# Write the first 100 bytes back (cmake has no binary write: go through a file of hex digits).
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" escaped "${cut}")
execute_process(COMMAND printf "${escaped}" OUTPUT_FILE "${WORK}/cut.ebtarena")
refused("error: --load: ${WORK}/cut.ebtarena: byte " --load "${WORK}/cut.ebtarena")
refused(": truncated: the file ends " --load "${WORK}/cut.ebtarena")
refused("error: --load: cannot open the arena save file '${WORK}/missing.ebtarena'" --load "${WORK}/missing.ebtarena")
