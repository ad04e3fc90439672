# CTest "package_consumer": install the ebt build tree into a private prefix,
# then configure, build and run tests/consumer against that prefix.
#
# cmake -DEBT_BUILD_DIR=<ebt build dir>
#       -DEBT_CONSUMER_SOURCE_DIR=<tests/consumer>
#       [-DEBT_GENERATOR=...] [-DEBT_MAKE_PROGRAM=...] [-DEBT_CXX_COMPILER=...]
#       [-DEBT_BUILD_TYPE=...] [-DEBT_EXPECTED_VERSION=...] [-DEBT_EXPECTED_HAS_XML=0|1]
#       [-DEBT_BOOST_DIR=...]
#       -P run_consumer_test.cmake
cmake_minimum_required(VERSION 3.21)

foreach(var EBT_BUILD_DIR EBT_CONSUMER_SOURCE_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer_test.cmake: ${var} is required")
  endif()
endforeach()

set(prefix "${EBT_BUILD_DIR}/consumer-prefix")
set(consumer_build "${EBT_BUILD_DIR}/consumer-build")

# Start clean every time: a stale prefix or cache would hide a broken install.
file(REMOVE_RECURSE "${prefix}" "${consumer_build}")

function(run_step what)
  message(STATUS "package_consumer: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "package_consumer: ${what} failed (${rc})")
  endif()
endfunction()

# 1. Install.
set(install_cmd "${CMAKE_COMMAND}" --install "${EBT_BUILD_DIR}" --prefix "${prefix}")
if(EBT_BUILD_TYPE)
  list(APPEND install_cmd --config "${EBT_BUILD_TYPE}")
endif()
run_step("install into ${prefix}" ${install_cmd})

# 2. Configure the consumer against the prefix only.
set(configure_cmd "${CMAKE_COMMAND}"
  -S "${EBT_CONSUMER_SOURCE_DIR}"
  -B "${consumer_build}"
  "-DCMAKE_PREFIX_PATH=${prefix}"
  "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"
  "-DEBT_EXPECTED_PREFIX=${prefix}")
if(EBT_GENERATOR)
  list(APPEND configure_cmd -G "${EBT_GENERATOR}")
endif()
if(EBT_MAKE_PROGRAM)
  list(APPEND configure_cmd "-DCMAKE_MAKE_PROGRAM=${EBT_MAKE_PROGRAM}")
endif()
if(EBT_CXX_COMPILER)
  list(APPEND configure_cmd "-DCMAKE_CXX_COMPILER=${EBT_CXX_COMPILER}")
endif()
if(EBT_BUILD_TYPE)
  list(APPEND configure_cmd "-DCMAKE_BUILD_TYPE=${EBT_BUILD_TYPE}")
endif()
if(EBT_EXPECTED_VERSION)
  list(APPEND configure_cmd "-DEBT_EXPECTED_VERSION=${EBT_EXPECTED_VERSION}")
endif()
if(DEFINED EBT_EXPECTED_HAS_XML)
  list(APPEND configure_cmd "-DEBT_EXPECTED_HAS_XML=${EBT_EXPECTED_HAS_XML}")
endif()
if(EBT_BOOST_DIR)
  # Use the same Boost as the ebt build.
  list(APPEND configure_cmd "-DBoost_DIR=${EBT_BOOST_DIR}")
endif()
run_step("configure consumer" ${configure_cmd})

# 3. Build.
set(build_cmd "${CMAKE_COMMAND}" --build "${consumer_build}")
if(EBT_BUILD_TYPE)
  list(APPEND build_cmd --config "${EBT_BUILD_TYPE}")
endif()
run_step("build consumer" ${build_cmd})

# 4. Run.
set(exe "${consumer_build}/bin/ebt_consumer")
if(CMAKE_HOST_WIN32)
  string(APPEND exe ".exe")
endif()
run_step("run ${exe}" "${exe}")

message(STATUS "package_consumer: OK")
