# monster_brains: `ebt_monster` prints the same state hash with the state machine and with the tree,
# in poll and event mode, and with the tree loaded from samples/monster.xml (when XML=1).
# Run by CTest with -DMONSTER=<ebt_monster> -DXML_TREE=<samples/monster.xml or empty>.
# Each run is "name|option|value|...".
set(runs "fsm|--brain|fsm" "tree_poll|--brain|tree|--mode|poll" "tree_event|--brain|tree|--mode|event")
if(XML_TREE)
  list(APPEND runs "tree_xml|--brain|tree|--tree|${XML_TREE}")
endif()
set(first "")
foreach(run IN LISTS runs)
  string(REPLACE "|" ";" args "${run}")
  list(POP_FRONT args name)
  execute_process(COMMAND "${MONSTER}" --monsters 40 --seconds 30 --seed 7 ${args}
    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ebt_monster ${args} failed (${rc}):\n${out}")
  endif()
  string(REGEX MATCH "state hash: [0-9a-f]+" hash "${out}")
  if(hash STREQUAL "")
    message(FATAL_ERROR "ebt_monster ${args} printed no state hash:\n${out}")
  endif()
  message(STATUS "${name}: ${hash}")
  if(first STREQUAL "")
    set(first "${hash}")
    set(first_name "${name}")
  elseif(NOT hash STREQUAL first)
    message(FATAL_ERROR "ebt_monster ${args} ended in another state than the ${first_name} run: '${hash}' vs '${first}'")
  endif()
endforeach()
