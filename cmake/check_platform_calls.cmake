# Nothing calls a Linux-only (or macOS-only) interface outside the one
# platform file of its concern (issue 35, "portable by construction"). Run as
#   cmake -DROOT=<source tree> -P cmake/check_platform_calls.cmake
# It reads every source under ROOT's engine/, kernels/, net/, app/, ui/ and
# tests/ (not tests/data, nor the fixture tree of tests/platform) and fails,
# naming each file:line and what it found, where one of the names below
# appears in a file the allowlist does not hold. Comments count too: a
# platform file says which call it makes. ctest runs it on the tree
# (test_platform_calls) and on a tree that breaks the rule
# (test_platform_calls_catches).
cmake_minimum_required(VERSION 3.25) # IN_LIST, continue()
if(NOT ROOT)
  message(FATAL_ERROR "check_platform_calls: pass -DROOT=<source tree>")
endif()

# What is looked for: interfaces that exist on one system only (no regex
# characters in them).
set(platform_names
  "/proc/"            # Linux's process file system
  "MADV_"             # madvise advice (MADV_HUGEPAGE, MADV_DONTNEED's drop: Linux)
  "getauxval"         # Linux's auxiliary vector (CPU features on ARM)
  "epoll"             # Linux's event loop (Asio picks it or kqueue itself)
  "malloc_trim"       # glibc's allocator
  "mallopt"           # glibc's allocator
  "sysctlbyname"      # the BSDs' and macOS's sysctl by name
  "sched_getaffinity" # Linux's CPU affinity
  "memfd_create"      # Linux's in-memory files
  "MSG_NOSIGNAL")     # Linux's send flag (macOS has SO_NOSIGPIPE instead)

# The platform files: path under ROOT;why it may name them. One per concern
# (a header and its source are one).
set(allowlist
  "kernels/cpu/os_memory.h;page size, huge pages, releasing mapped pages: the interface"
  "kernels/cpu/os_memory.cpp;page size, huge pages, releasing mapped pages: the calls"
  "kernels/cpu/cpu_topology.h;default thread count: the interface"
  "kernels/cpu/cpu_topology.cpp;default thread count: affinity mask (Linux), performance cores (macOS)"
  "kernels/cpu/cpu_features.h;CPU features: the interface"
  "kernels/cpu/cpu_features.cpp;CPU features: CPUID, getauxval (Linux ARM), sysctlbyname (macOS)"
  "net/serve/allocator_policy.h;glibc's allocator knobs: the interface"
  "net/serve/allocator_policy.cpp;glibc's allocator knobs: mallopt, malloc_trim"
  "tests/support/process_memory.h;tests: a process's resident memory (/proc on Linux, getrusage elsewhere)"
  "tests/support/socket_send.h;tests: send without SIGPIPE (MSG_NOSIGNAL or SO_NOSIGPIPE)"
  "tests/kernels/test_cpu_features.cpp;tests: CPU features against /proc/cpuinfo where Linux has it"
  "tests/kernels/test_cpu_topology.cpp;tests: the thread count follows a Linux affinity mask"
  "tests/net/hub/test_hub_pull.cpp;tests: a blocked flock seen in /proc/locks, skipped without it"
  "tests/fuzz/fuzz_gguf.cpp;libFuzzer target (Linux CI only): a memfd read by its /proc/self/fd path"
  "tests/fuzz/fuzz_engine.cpp;libFuzzer target (Linux CI only): a memfd read by its /proc/self/fd path"
  "tests/fuzz/fuzz_http_request.cpp;libFuzzer target (Linux CI only): a memfd read by its /proc/self/fd path"
  "tests/net/serve/load/idle_connections.py;load test run by hand on Linux (docs/serving.md): a server's VmRSS")

set(allowed "")
list(LENGTH allowlist n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
  list(GET allowlist ${i} path)
  list(APPEND allowed "${path}")
endforeach()

set(excluded "tests/data/" "tests/platform/calls_outside/")
set(sources "")
foreach(folder engine kernels net app ui tests)
  file(GLOB_RECURSE found LIST_DIRECTORIES false
    "${ROOT}/${folder}/*.h" "${ROOT}/${folder}/*.hpp" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.cc"
    "${ROOT}/${folder}/*.c" "${ROOT}/${folder}/*.cu" "${ROOT}/${folder}/*.cuh" "${ROOT}/${folder}/*.mm"
    "${ROOT}/${folder}/*.py" "${ROOT}/${folder}/*.sh")
  list(APPEND sources ${found})
endforeach()

# One alternation of the names. A name that starts a word must start one
# here (MADV_ is not POSIX_MADV_, which is POSIX's).
set(alternatives "")
foreach(name IN LISTS platform_names)
  if(name MATCHES "^[A-Za-z_]")
    list(APPEND alternatives "(^|[^A-Za-z0-9_])${name}")
  else()
    list(APPEND alternatives "${name}")
  endif()
endforeach()
list(JOIN alternatives "|" pattern)

set(violations "")
foreach(source IN LISTS sources)
  file(RELATIVE_PATH rel "${ROOT}" "${source}")
  set(skip OFF)
  foreach(prefix IN LISTS excluded)
    string(FIND "${rel}" "${prefix}" at)
    if(at EQUAL 0)
      set(skip ON)
    endif()
  endforeach()
  if(skip OR rel IN_LIST allowed)
    continue()
  endif()
  file(STRINGS "${source}" hits REGEX "${pattern}")
  if(NOT hits)
    continue()
  endif()
  # Only files with a hit are read line by line (for the line numbers):
  # the text as a list of lines, with what a CMake list would split or
  # bracket on taken out first.
  file(READ "${source}" text)
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    string(REGEX MATCH "${pattern}" found "${line}")
    if(found)
      string(REGEX REPLACE "^[^A-Za-z0-9_/]" "" found "${found}")
      string(STRIP "${line}" shown)
      string(APPEND violations "  ${rel}:${number}: ${found}: ${shown}\n")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "check_platform_calls: platform-specific names outside the platform files "
                      "(move the call behind one, or add the file to the allowlist with its reason):\n"
                      "${violations}")
endif()
list(LENGTH sources scanned)
message(STATUS "check_platform_calls: ${scanned} files read, no platform-specific name outside the platform files")
