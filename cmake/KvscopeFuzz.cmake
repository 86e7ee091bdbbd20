# Sanitizer and fuzzing builds (the `asan` and `tsan` presets in
# CMakePresets.json set these; see tests/README.md).
#   KVSCOPE_SANITIZE=address,undefined | thread | (empty)
#       compiles and links everything with -fsanitize=<list>. A UBSan
#       finding aborts (-fno-sanitize-recover) so that its test fails
#       instead of printing a line nobody reads.
#   KVSCOPE_FUZZ=ON  builds the libFuzzer targets in tests/fuzz (clang
#       only) and compiles every kvscope target with -fsanitize=fuzzer-no-link,
#       the coverage the fuzzers are guided by; the build's other programs
#       link as usual.
set(KVSCOPE_SANITIZE "" CACHE STRING "Sanitizers to build with, as for -fsanitize= (e.g. address,undefined or thread)")
option(KVSCOPE_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

if(KVSCOPE_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${KVSCOPE_SANITIZE};-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=${KVSCOPE_SANITIZE})
endif()

if(KVSCOPE_FUZZ)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "AppleClang")
    message(FATAL_ERROR "KVSCOPE_FUZZ needs libFuzzer, which Apple clang does not ship: on macOS build with "
                        "-DKVSCOPE_FUZZ=OFF (installer/kvscope.sh test does) or with Homebrew llvm's clang++")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KVSCOPE_FUZZ needs clang, which has libFuzzer (Debian: clang and libclang-rt-14-dev; "
                        "-DCMAKE_CXX_COMPILER=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
message(STATUS "kvscope: sanitizers '${KVSCOPE_SANITIZE}', fuzzers ${KVSCOPE_FUZZ}")
