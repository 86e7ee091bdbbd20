# Nothing includes upward (docs/architecture.md). Run as
#   cmake -DROOT=<source tree> -P cmake/check_layers.cmake
# It reads every #include in ROOT's layer folders and fails, naming each
# file, line and rule, when one reaches a layer above its own (or Qt, or a
# socket library, where a layer must not). ctest runs it on the tree
# (test_layers) and on a tree that breaks the rules (test_layers_catches).
if(NOT ROOT)
  message(FATAL_ERROR "check_layers: pass -DROOT=<source tree>")
endif()

# folder;forbidden include prefix;why. "<Q" is any Qt header.
set(rules
  "kernels;engine/;kernels include nothing of the engine"
  "kernels;net/;kernels are the bottom layer"
  "kernels;ui/;kernels are the bottom layer"
  "kernels;app/;kernels are the bottom layer"
  "kernels;<Q;kernels know no Qt"
  "engine;net/;the engine knows no network"
  "engine;ui/;the engine knows no widgets"
  "engine;app/;the engine is below app/"
  "engine;<Q;the engine knows no Qt"
  "engine;<httplib;the engine opens no sockets"
  "engine;<zmq;the engine opens no sockets"
  "engine;<curl;the engine opens no sockets"
  "engine;<boost/;the engine opens no sockets (Boost.Asio and Beast are net/serve's)"
  "net;ui/;net/ is below ui/"
  "net;app/;net/ is below app/"
  "net;<Q;net/ knows no Qt"
  "net/client;net/serve/;a client leans on no server"
  "net/client;net/attach/;the clients are below attach/"
  "net/serve;net/attach/;the server does not watch servers"
  "net/serve;net/client/;the server needs no client"
  "ui;app/;ui/ is below app/, which holds main()s only")
# Inside ui/: the shell (main window) assembles the features and nothing
# reaches up into it; the dashboards are plots that know no feature.
foreach(feature bridge blockmap chat compare dashboards playground server settings)
  list(APPEND rules "ui/${feature};ui/shell/;only the shell assembles the window")
endforeach()
foreach(feature blockmap chat compare playground server settings)
  list(APPEND rules "ui/dashboards;ui/${feature}/;the dashboards are plots that know no feature")
endforeach()

set(violations "")
list(LENGTH rules n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 3)
  math(EXPR j "${i} + 1")
  math(EXPR k "${i} + 2")
  list(GET rules ${i} folder)
  list(GET rules ${j} forbidden)
  list(GET rules ${k} why)
  file(GLOB_RECURSE sources LIST_DIRECTORIES false
    "${ROOT}/${folder}/*.h" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.cu" "${ROOT}/${folder}/*.cuh")
  foreach(source IN LISTS sources)
    file(STRINGS "${source}" lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]?([^\">]*).*$" "\\1" included "${line}")
      string(REGEX MATCH "^[ \t]*#[ \t]*include[ \t]*<" angled "${line}")
      if(angled)
        set(included "<${included}>")
      endif()
      string(FIND "${included}" "${forbidden}" at)  # a prefix
      if(at EQUAL 0)
        file(RELATIVE_PATH rel "${ROOT}" "${source}")
        string(APPEND violations "  ${rel}: #include ${included}: ${why}\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "check_layers: includes that run up the layers:\n${violations}")
endif()
message(STATUS "check_layers: no include runs up the layers")
