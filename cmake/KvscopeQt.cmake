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

set(kvscope_gui_default OFF)
if(Qt6Widgets_FOUND AND Qt6PrintSupport_FOUND AND QCustomPlotQt6_FOUND)
  set(kvscope_gui_default ON)
endif()
option(KVSCOPE_GUI "Build the desktop app kvscope (Qt Widgets, QCustomPlot)" ${kvscope_gui_default})
if(KVSCOPE_GUI)
  find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets PrintSupport)
  find_package(QCustomPlotQt6 CONFIG REQUIRED)
endif()

set(KVSCOPE_HAVE_QT_TEST OFF)
if(Qt6Core_FOUND AND Qt6Test_FOUND)
  set(KVSCOPE_HAVE_QT_TEST ON)
endif()
if(Qt6Core_FOUND)
  qt_standard_project_setup() # AUTOMOC for ui/ and the tests
endif()
message(STATUS "kvscope: desktop app (KVSCOPE_GUI) ${KVSCOPE_GUI}, Qt tests ${KVSCOPE_HAVE_QT_TEST}")
