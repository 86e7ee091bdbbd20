# Which parts of kvscope need Qt, and whether it is there.
#   KVSCOPE_GUI=ON|OFF   the desktop app (ui/, app/gui) with Qt Widgets and
#                        QCustomPlot. Default: ON when they are installed,
#                        OFF where they are missing. OFF builds the engine
#                        and kvscope-cli, which link no Qt at all: a server
#                        installs no GUI stack.
#   KVSCOPE_HAVE_QT_TEST the tests are Qt Test programs (QtCore + QtTest
#                        only, no widgets outside tests/ui and
#                        tests/dashboards); without them they are not built.
find_package(Qt6 QUIET COMPONENTS Core Test)
find_package(Qt6 QUIET COMPONENTS Gui Widgets PrintSupport)
find_package(QCustomPlotQt6 CONFIG QUIET) # after Qt6: its config does not find Qt
# macOS: Homebrew has no QCustomPlot; its pinned release is built here instead.
if(APPLE AND NOT QCustomPlotQt6_FOUND AND Qt6Widgets_FOUND AND Qt6PrintSupport_FOUND
   AND (NOT DEFINED KVSCOPE_GUI OR KVSCOPE_GUI))
  include(KvscopeQCustomPlotFetch)
endif()

set(kvscope_gui_default OFF)
if(Qt6Widgets_FOUND AND Qt6PrintSupport_FOUND AND QCustomPlotQt6_FOUND)
  set(kvscope_gui_default ON)
endif()
option(KVSCOPE_GUI "Build the desktop app kvscope (Qt Widgets, QCustomPlot)" ${kvscope_gui_default})
if(KVSCOPE_GUI)
  find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets PrintSupport)
  if(NOT QCustomPlotQt6_FOUND)
    find_package(QCustomPlotQt6 CONFIG REQUIRED)
  endif()
endif()

set(KVSCOPE_HAVE_QT_TEST OFF)
if(Qt6Core_FOUND AND Qt6Test_FOUND)
  set(KVSCOPE_HAVE_QT_TEST ON)
endif()
if(Qt6Core_FOUND)
  qt_standard_project_setup() # AUTOMOC for ui/ and the tests
  get_target_property(KVSCOPE_QT_MOC Qt6::moc LOCATION)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/moc_without_includes.sh.in
                 ${CMAKE_BINARY_DIR}/moc_without_includes.sh @ONLY
                 FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                  WORLD_READ WORLD_EXECUTE)
endif()

# AUTOMOC for TARGET runs moc without the include path (see
# moc_without_includes.sh.in). Only for targets whose moc output does not
# depend on headers: the tests, whose Q_OBJECT classes are test cases with
# argument-less slots. Not for ui/: moc registers a signal's argument type
# only when it has seen that type's Q_DECLARE_METATYPE in a header.
function(kvscope_moc_without_includes target)
  set_target_properties(${target} PROPERTIES AUTOMOC_EXECUTABLE ${CMAKE_BINARY_DIR}/moc_without_includes.sh)
endfunction()
message(STATUS "kvscope: desktop app (KVSCOPE_GUI) ${KVSCOPE_GUI}, Qt tests ${KVSCOPE_HAVE_QT_TEST}")
