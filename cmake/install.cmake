# install.cmake — what `cmake --install` and `cpack -G DEB` ship (included at
# the end of CMakeLists.txt; docs/packaging.md is the user's side of it).
#
#   <prefix>/bin/spindle                            the CLI
#   <prefix>/include/spindle/*.h                    public headers (+ generated version.h)
#   <libdir>/libspindle.so.X.Y.Z, .so.<SOVERSION>   shared library, SONAME libspindle.so.<SOVERSION>
#   <libdir>/libspindle.a                           static library (threading layer folded in)
#   <libdir>/cmake/spindle/                         find_package(spindle CONFIG)
#   <libdir>/pkgconfig/spindle.pc                   pkg-config
#   <libdir>/libonnxruntime.so.1.30.0, .so.1, .so    ONNX Runtime's C API over spindle (docs/capi.md)
#   <prefix>/include/onnxruntime/onnxruntime_c_api.h its header, and the C++ API's
#       (onnxruntime_cxx_api.h, _cxx_inline.h, _float16.h, the config key headers)
#
# The build tree keeps its two static libraries (spindle, spindle_threading)
# for the tests; the installed libraries are made from their object files (and
# the per-ISA kernel objects), so nothing is compiled twice. Both land in
# <build>/lib, away from the build tree's own libspindle.a.
#
# Dependencies: the public headers include only the standard library, so a
# user of the shared library needs nothing but the headers and -pthread:
# onnx, protobuf, fmt, spdlog, hwloc and BLAS are the .so's own DT_NEEDED entries, and
# its RUNPATH names the serial BLAS folder (which is outside the loader's
# default path on Debian). The static library declares them as link-only
# dependencies, found by spindleConfig.cmake when the `static` component is
# asked for.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# While the major version is 0 every minor release may break the ABI, so the
# SONAME carries both (libspindle.so.0.1); from 1.0 on only the major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(SPINDLE_SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
else()
  set(SPINDLE_SOVERSION ${PROJECT_VERSION_MAJOR})
endif()

# The BLAS library spindle links, as files: read from the spindle target, so
# this follows however CMakeLists.txt finds it (a path or an imported target).
set(SPINDLE_BLAS_FILES "")
get_target_property(_spindle_links spindle LINK_LIBRARIES)
foreach(item IN LISTS _spindle_links)
  if(NOT item MATCHES "[Bb][Ll][Ii][Ss]|[Bb][Ll][Aa][Ss]")
    continue()
  endif()
  if(TARGET ${item})
    get_target_property(_loc ${item} IMPORTED_LOCATION)
    if(_loc)
      list(APPEND SPINDLE_BLAS_FILES ${_loc})
    endif()
    get_target_property(_iface ${item} INTERFACE_LINK_LIBRARIES)
    if(_iface)
      list(APPEND SPINDLE_BLAS_FILES ${_iface})
    endif()
  else()
    list(APPEND SPINDLE_BLAS_FILES ${item})
  endif()
endforeach()
set(SPINDLE_BLAS_RUNPATH "")
foreach(file IN LISTS SPINDLE_BLAS_FILES)
  if(IS_ABSOLUTE "${file}")
    get_filename_component(_dir "${file}" DIRECTORY)
    list(APPEND SPINDLE_BLAS_RUNPATH ${_dir})
  endif()
endforeach()
list(REMOVE_DUPLICATES SPINDLE_BLAS_RUNPATH)
# Binaries linked with spindle already get that runpath when spindle passes it
# as a link option; otherwise the install sets it.
get_target_property(_spindle_link_options spindle INTERFACE_LINK_OPTIONS)
set(SPINDLE_INSTALL_RPATH "${SPINDLE_BLAS_RUNPATH}")
if(_spindle_link_options MATCHES "rpath")
  set(SPINDLE_INSTALL_RPATH "")
endif()

# Objects: the two libraries' own, plus the object libraries added to spindle
# as sources (the per-ISA kernels), read from its SOURCES.
set(_spindle_objects $<TARGET_OBJECTS:spindle> $<TARGET_OBJECTS:spindle_threading>)
get_target_property(_spindle_sources spindle SOURCES)
foreach(src IN LISTS _spindle_sources)
  if(src MATCHES "^\\$<TARGET_OBJECTS:")
    list(APPEND _spindle_objects ${src})
  endif()
endforeach()
set(_spindle_includes
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# Shared: linking the build tree's spindle privately brings its dependencies
# (and the BLAS runpath); its archive adds no object, every symbol already
# being defined by the objects above.
add_library(spindle_shared SHARED ${_spindle_objects})
target_include_directories(spindle_shared PUBLIC ${_spindle_includes})
target_link_libraries(spindle_shared PUBLIC Threads::Threads PRIVATE spindle)
target_link_options(spindle_shared PRIVATE -Wl,--no-undefined)
set_target_properties(spindle_shared PROPERTIES
  OUTPUT_NAME spindle EXPORT_NAME spindle
  VERSION ${PROJECT_VERSION} SOVERSION ${SPINDLE_SOVERSION}
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib
  INSTALL_RPATH "${SPINDLE_INSTALL_RPATH}")

# Static: link-only dependencies, written into the export by their target
# names and found again by spindleConfig.cmake.
add_library(spindle_static STATIC ${_spindle_objects})
target_include_directories(spindle_static PUBLIC ${_spindle_includes})
target_link_libraries(spindle_static PUBLIC Threads::Threads
  PRIVATE onnx onnx_proto protobuf::libprotobuf fmt::fmt spdlog::spdlog PkgConfig::HWLOC ${SPINDLE_BLAS_FILES})
if(SPINDLE_BLAS_RUNPATH)
  list(JOIN SPINDLE_BLAS_RUNPATH ":" _runpath)
  target_link_options(spindle_static INTERFACE "-Wl,-rpath,${_runpath}")
endif()
set_target_properties(spindle_static PROPERTIES
  OUTPUT_NAME spindle EXPORT_NAME spindle_static
  ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)

set_target_properties(spindle_cli PROPERTIES INSTALL_RPATH "${SPINDLE_INSTALL_RPATH}")

set(SPINDLE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/spindle)
install(TARGETS spindle_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS spindle_shared EXPORT spindleTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS spindle_static EXPORT spindleStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/spindle DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
# The drop-in libonnxruntime.so.1 (spindle linked in, only ONNX Runtime's
# entry points exported) and the C header programs compile against.
set_target_properties(spindle_onnxruntime PROPERTIES INSTALL_RPATH "${SPINDLE_INSTALL_RPATH}")
install(TARGETS spindle_onnxruntime LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/onnxruntime/onnxruntime_c_api.h include/onnxruntime/onnxruntime_cxx_api.h
  include/onnxruntime/onnxruntime_cxx_inline.h include/onnxruntime/onnxruntime_float16.h
  include/onnxruntime/onnxruntime_session_options_config_keys.h
  include/onnxruntime/onnxruntime_run_options_config_keys.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/onnxruntime)
install(FILES ${PROJECT_BINARY_DIR}/include/spindle/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/spindle)
install(EXPORT spindleTargets NAMESPACE spindle:: DESTINATION ${SPINDLE_CMAKE_DIR})
install(EXPORT spindleStaticTargets NAMESPACE spindle:: DESTINATION ${SPINDLE_CMAKE_DIR})
configure_package_config_file(cmake/spindleConfig.cmake.in ${PROJECT_BINARY_DIR}/spindleConfig.cmake
  INSTALL_DESTINATION ${SPINDLE_CMAKE_DIR})
# 0.x: a newer minor release is not compatible (see SPINDLE_SOVERSION).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_compat SameMinorVersion)
else()
  set(_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spindleConfigVersion.cmake COMPATIBILITY ${_compat})
install(FILES ${PROJECT_BINARY_DIR}/spindleConfig.cmake ${PROJECT_BINARY_DIR}/spindleConfigVersion.cmake
  DESTINATION ${SPINDLE_CMAKE_DIR})

# pkg-config: relocatable (paths relative to the .pc file), so an install
# with `cmake --install build --prefix DIR` works as well as /usr.
file(RELATIVE_PATH SPINDLE_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" SPINDLE_PC_TO_PREFIX "${SPINDLE_PC_TO_PREFIX}")
# Named here rather than as Requires.private: pkg-config reads those even for
# --cflags, which would make a shared-library user install their -dev packages.
set(SPINDLE_PC_LIBS_PRIVATE "-lonnx -lonnx_proto -lprotobuf -lfmt -lspdlog -lhwloc")
foreach(file IN LISTS SPINDLE_BLAS_FILES)
  string(APPEND SPINDLE_PC_LIBS_PRIVATE " ${file}")
endforeach()
if(SPINDLE_BLAS_RUNPATH)
  string(APPEND SPINDLE_PC_LIBS_PRIVATE " -Wl,-rpath,${_runpath}")
endif()
configure_file(cmake/spindle.pc.in ${PROJECT_BINARY_DIR}/spindle.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spindle.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES LICENSE README.md CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# cpack -G DEB (run in the build folder): one package, spindle_X.Y.Z_amd64.deb,
# installing under /usr. Its Depends come from dpkg-shlibdeps (dpkg-dev), which
# follows the libraries' RUNPATH to the BLAS library.
set(CPACK_PACKAGE_NAME spindle)
set(CPACK_PACKAGE_VENDOR "spindle")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "CPU inference runtime for ONNX models: library, headers and the spindle CLI")
set(CPACK_PACKAGE_CONTACT "spindle maintainers <spindle@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps names the virtual libblis4, which apt may satisfy with the
# pthread or OpenMP build; spindle's runpath points at the serial one.
if(SPINDLE_BLAS_FILES MATCHES "blis-serial")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libblis4-serial")
endif()
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Static linking and the CMake package's `static` component also need the
# development packages of the link-only dependencies.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libonnx-dev, libprotobuf-dev, libfmt-dev, libspdlog-dev, libhwloc-dev, libblis-serial-dev")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "spindle runs ONNX models on the CPU with ONNX Runtime's and PyTorch's threading knobs.\n This package holds libspindle (shared and static), its C++ headers, the CMake\n package (find_package(spindle)), spindle.pc, the spindle command, and\n libonnxruntime.so.1 with onnxruntime_c_api.h and onnxruntime_cxx_api.h: ONNX Runtime 1.30's C and C++ API over spindle.")
include(CPack)
