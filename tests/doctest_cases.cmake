# Writes one CTest test per doctest case of a test executable (run after each build by
# ebt_add_doctest_cases() in tests/CMakeLists.txt, with cmake -P).
#
#   -D EXECUTABLE=<test executable>   -D OUTPUT=<file CTest includes>
#   -D LABELS=<label>                 -D TIMEOUT=<seconds per case>
#
# Each test is named as its case and runs `EXECUTABLE --test-case=<name>` (commas escaped, as doctest's
# filters split on them). Written here rather than with doctest's own doctest_discover_tests because
# that one splits case names at semicolons (a CMake list separator), and many of ours have one: the
# output is walked line by line as a string and every name is written as a bracket argument, so no
# name ever passes through a CMake list.
execute_process(
  COMMAND "${EXECUTABLE}" --list-test-cases
  OUTPUT_VARIABLE listing
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --list-test-cases failed (${result}):\n${listing}")
endif()

set(script "")
set(count 0)
string(APPEND listing "\n")
while(NOT listing STREQUAL "")
  string(FIND "${listing}" "\n" eol)
  string(SUBSTRING "${listing}" 0 ${eol} name)
  math(EXPR next "${eol} + 1")
  string(SUBSTRING "${listing}" ${next} -1 listing)
  # doctest's own lines: "[doctest] ..." and "=====..." rules.
  if(name STREQUAL "" OR name MATCHES "^\\[doctest\\] " OR name MATCHES "^=+$")
    continue()
  endif()
  if(name MATCHES "]==]")
    message(FATAL_ERROR "test case name '${name}' cannot be written as a CTest test name")
  endif()
  string(REPLACE "," "\\," filter "${name}")
  string(APPEND script
    "add_test([==[${name}]==] \"${EXECUTABLE}\" [==[--test-case=${filter}]==])\n"
    "set_tests_properties([==[${name}]==] PROPERTIES LABELS \"${LABELS}\" TIMEOUT ${TIMEOUT})\n")
  math(EXPR count "${count} + 1")
endwhile()

if(count EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} lists no test case")
endif()
file(WRITE "${OUTPUT}" "${script}")
