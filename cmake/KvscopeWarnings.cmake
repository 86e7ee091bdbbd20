# Warnings every kvscope target compiles with (C++ sources only).
add_library(kvscope_warnings INTERFACE)
target_compile_options(kvscope_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>)
