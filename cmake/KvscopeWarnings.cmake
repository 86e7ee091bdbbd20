# Warnings every kvscope target compiles with (C++ sources only).
# KVSCOPE_WERROR turns them into errors (the libcxx preset: the clang +
# libc++ build must have none, issue 35); off by default so that a newer
# compiler's new warning does not stop a user's build.
option(KVSCOPE_WERROR "Treat kvscope's compiler warnings as errors" OFF)
add_library(kvscope_warnings INTERFACE)
target_compile_options(kvscope_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${KVSCOPE_WERROR}>>:-Werror>)
