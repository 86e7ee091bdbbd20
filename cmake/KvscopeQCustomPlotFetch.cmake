# QCustomPlot for macOS, where Homebrew has no formula for it (MacPorts has
# a Qt 5 port only): the build downloads its release source at a pinned
# version, checks the archive's SHA-256, and compiles qcustomplot.cpp into a
# static library under the imported name Debian's package exports,
# QCustomPlotQt6::QCustomPlotQt6, so that ui/ links one name everywhere.
# Included by KvscopeQt.cmake on APPLE only, and only when no installed
# QCustomPlotQt6 config was found and the GUI is not switched off.
# Sets QCustomPlotQt6_FOUND and KVSCOPE_QCUSTOMPLOT_LICENSE (its GPL.txt,
# which the bundle carries: installer/macos/bundle.cmake).
#
# Written and reviewed for issue 35, never run: no Mac here, and this
# machine cannot reach qcustomplot.com. The hash is the one nixpkgs pins for
# this same URL (sha256-Xi0i3sd5248B81fL2yXlT7z5ca2u516ujXrSRESHGC8=, in
# hex below); a different archive stops the configure with CMake's hash error.
# FETCHCONTENT_SOURCE_DIR_QCUSTOMPLOT=<folder with qcustomplot.h/.cpp>
# builds from a local copy instead (offline machines).
include(FetchContent)
set(KVSCOPE_QCUSTOMPLOT_VERSION 2.1.1)
FetchContent_Declare(qcustomplot
  URL https://www.qcustomplot.com/release/${KVSCOPE_QCUSTOMPLOT_VERSION}/QCustomPlot-source.tar.gz
  URL_HASH SHA256=5e2d22dec779db8f01f357cbdb25e54fbcf971adaee75eae8d7ad2444487182f
  DOWNLOAD_EXTRACT_TIMESTAMP TRUE) # files dated at extraction (CMP0135's NEW)
# The archive has no CMakeLists.txt: this only downloads and unpacks it.
FetchContent_MakeAvailable(qcustomplot)

add_library(kvscope_qcustomplot STATIC
  ${qcustomplot_SOURCE_DIR}/qcustomplot.cpp ${qcustomplot_SOURCE_DIR}/qcustomplot.h)
target_link_libraries(kvscope_qcustomplot PUBLIC Qt6::Widgets Qt6::PrintSupport)
# SYSTEM: its header's warnings are not kvscope's (as /usr/include's copy on Debian).
target_include_directories(kvscope_qcustomplot SYSTEM PUBLIC ${qcustomplot_SOURCE_DIR})
set_target_properties(kvscope_qcustomplot PROPERTIES AUTOMOC ON)
add_library(QCustomPlotQt6::QCustomPlotQt6 ALIAS kvscope_qcustomplot)
set(QCustomPlotQt6_FOUND TRUE)
set(KVSCOPE_QCUSTOMPLOT_LICENSE ${qcustomplot_SOURCE_DIR}/GPL.txt)
message(STATUS "kvscope: QCustomPlot ${KVSCOPE_QCUSTOMPLOT_VERSION} built from its release source (no installed package)")
