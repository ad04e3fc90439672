# arena_threads: `ebt_arena --threads 2` and `--threads 1` print the same state hash (World::set_threads;
# docs/world.md, "Threads"). Run by CTest with -DARENA=<ebt_arena>.
foreach(threads 1 2)
  execute_process(COMMAND "${ARENA}" --agents 2000 --seconds 10 --threads ${threads}
    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ebt_arena --threads ${threads} failed (${rc}):\n${out}")
  endif()
  string(REGEX MATCH "state hash: +[0-9a-f]+" hash_${threads} "${out}")
  if(hash_${threads} STREQUAL "")
    message(FATAL_ERROR "ebt_arena --threads ${threads} printed no state hash:\n${out}")
  endif()
  message(STATUS "--threads ${threads}: ${hash_${threads}}")
endforeach()
if(NOT hash_1 STREQUAL hash_2)
  message(FATAL_ERROR "--threads 2 ended in another state than --threads 1: '${hash_2}' vs '${hash_1}'")
endif()
