# Compile options for project code only (dependencies are included as SYSTEM
# headers so their warnings never fail our build).
#
# -ffp-contract=off: no fused multiply-add contraction, so floating-point results
# do not depend on what the optimiser chose; part of the determinism contract.
add_library(bustle_options INTERFACE)
target_compile_options(bustle_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Werror
  # GCC 12 reports false -Wrestrict positives inside libstdc++'s std::string at
  # -O2 (GCC bug 105329); the warning fires on standard-library code, not ours.
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>
  -ffp-contract=off -fno-fast-math)
if(BUSTLE_SANITIZE)
  target_compile_options(bustle_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(bustle_options INTERFACE -fsanitize=address,undefined)
endif()
# Fuzzing (the `fuzz` preset): every project object gets libFuzzer's coverage
# instrumentation plus ASan and UBSan, and any UBSan report aborts, so it is a
# finding rather than a line in a log. The fuzz targets add -fsanitize=fuzzer
# at link time (tests/fuzz/CMakeLists.txt).
if(BUSTLE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "BUSTLE_FUZZ needs Clang (libFuzzer); configure with the `fuzz` preset")
  endif()
  target_compile_options(bustle_options INTERFACE
    -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(bustle_options INTERFACE -fsanitize=address,undefined)
endif()
add_library(bustle::options ALIAS bustle_options)

# Helper: declare a project library in its own folder with include/ and src/.
function(bustle_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(bustle_${name} STATIC ${ARG_SOURCES})
  add_library(bustle::${name} ALIAS bustle_${name})
  # Build-tree paths and the project's compile options stay out of what an
  # installed, exported target carries (clients/cpp installs some of these).
  target_include_directories(bustle_${name} PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
                                                   $<INSTALL_INTERFACE:include>)
  target_link_libraries(bustle_${name} PUBLIC ${ARG_PUBLIC_DEPS}
                        PRIVATE $<BUILD_INTERFACE:bustle::options> ${ARG_PRIVATE_DEPS})
endfunction()
