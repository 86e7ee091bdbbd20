# kvscope.app on macOS: kvscope_macos_bundle(TARGET) makes the app's target a
# MACOSX_BUNDLE with Info.plist.in and an .icns icon drawn at build time from
# resources/kvscope.svg. Included from app/CMakeLists.txt under if(APPLE), in
# the directory that creates the target (the icon's custom command and its
# MACOSX_PACKAGE_LOCATION must live there). installer/kvscope.sh package
# turns the bundle into a .dmg (macdeployqt, codesign, hdiutil).
#
# Written and reviewed for issue 35, never run: there is no Mac here. Linux
# never includes this file.

# The oldest macOS the bundle claims (Info.plist's LSMinimumSystemVersion;
# Finder refuses to open it on older ones). Qt's own floor is macOS 12 for
# Qt 6.8 and 13 for Qt 6.10 (doc.qt.io/qt-6.N/macos.html), but the binaries,
# and the Homebrew libraries macdeployqt copies into the bundle, are built
# for the deployment target, which is the build machine's own macOS unless
# CMAKE_OSX_DEPLOYMENT_TARGET names another: that is the true floor.
if(CMAKE_OSX_DEPLOYMENT_TARGET)
  set(kvscope_macos_floor ${CMAKE_OSX_DEPLOYMENT_TARGET})
else()
  execute_process(COMMAND sw_vers -productVersion OUTPUT_VARIABLE kvscope_macos_floor
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
endif()
# A cache entry, not a variable of the function below: CMake configures the
# Info.plist at generate time, in the scope of the target's directory.
set(KVSCOPE_MACOS_MINIMUM ${kvscope_macos_floor} CACHE STRING
    "The oldest macOS kvscope.app says it runs on (LSMinimumSystemVersion)")

find_program(KVSCOPE_RSVG_CONVERT rsvg-convert)  # Homebrew's librsvg (deps.sh)
find_program(KVSCOPE_ICONUTIL iconutil)          # part of macOS

# The sizes iconutil takes in an .iconset: each point size at 1x and 2x
# (icon_16x16.png is 16 px, icon_16x16@2x.png 32 px, up to 1024 px).
set(KVSCOPE_ICONSET_POINTS 16 32 128 256 512)

# TARGET's .icns, drawn from the SVG: a rule for OUTPUT (a path ending in
# NAME.icns) from PNGs in a NAME.iconset folder beside it.
function(kvscope_macos_icns output)
  cmake_path(REPLACE_EXTENSION output .iconset OUTPUT_VARIABLE iconset)
  set(svg ${PROJECT_SOURCE_DIR}/resources/kvscope.svg)
  set(draw)
  foreach(points IN LISTS KVSCOPE_ICONSET_POINTS)
    math(EXPR pixels2x "${points} * 2")
    list(APPEND draw
      COMMAND ${KVSCOPE_RSVG_CONVERT} --width=${points} --height=${points}
              --output=${iconset}/icon_${points}x${points}.png ${svg}
      COMMAND ${KVSCOPE_RSVG_CONVERT} --width=${pixels2x} --height=${pixels2x}
              --output=${iconset}/icon_${points}x${points}@2x.png ${svg})
  endforeach()
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${iconset}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${iconset}
    ${draw}
    COMMAND ${KVSCOPE_ICONUTIL} -c icns -o ${output} ${iconset}
    DEPENDS ${svg} COMMENT "iconutil: ${output}" VERBATIM)
endfunction()

function(kvscope_macos_bundle target)
  set_target_properties(${target} PROPERTIES
    MACOSX_BUNDLE TRUE
    MACOSX_BUNDLE_INFO_PLIST ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/Info.plist.in
    MACOSX_BUNDLE_GUI_IDENTIFIER ${KVSCOPE_APP_ID}
    MACOSX_BUNDLE_BUNDLE_NAME ${target}
    MACOSX_BUNDLE_INFO_STRING "${PROJECT_DESCRIPTION}"
    MACOSX_BUNDLE_SHORT_VERSION_STRING ${PROJECT_VERSION}
    MACOSX_BUNDLE_BUNDLE_VERSION ${PROJECT_VERSION}
    MACOSX_BUNDLE_COPYRIGHT "The kvscope developers")
  if(KVSCOPE_RSVG_CONVERT AND KVSCOPE_ICONUTIL)
    set(icns ${CMAKE_CURRENT_BINARY_DIR}/${target}.icns)
    kvscope_macos_icns(${icns})
    target_sources(${target} PRIVATE ${icns})
    set_source_files_properties(${icns} PROPERTIES MACOSX_PACKAGE_LOCATION Resources)
    set_target_properties(${target} PROPERTIES MACOSX_BUNDLE_ICON_FILE ${target}.icns)
  else()
    message(STATUS "kvscope: kvscope.app has no icon: rsvg-convert or iconutil not found (installer/deps.sh)")
  endif()
  # QCustomPlot is compiled into the app on macOS (cmake/KvscopeQCustomPlotFetch.cmake):
  # its licence goes with it.
  if(KVSCOPE_QCUSTOMPLOT_LICENSE)
    target_sources(${target} PRIVATE ${KVSCOPE_QCUSTOMPLOT_LICENSE})
    set_source_files_properties(${KVSCOPE_QCUSTOMPLOT_LICENSE} PROPERTIES MACOSX_PACKAGE_LOCATION Resources/QCustomPlot)
  endif()
endfunction()
