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
  # Test code compiles at -O1 (tests/CMakeLists.txt, property BUSTLE_TEST_CODE),
  # where GCC 12 also reports false -Warray-bounds and -Wstringop-overflow
  # positives inside libstdc++'s std::string operator+ (same bug family).
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>,$<BOOL:$<TARGET_PROPERTY:BUSTLE_TEST_CODE>>>:-Wno-array-bounds>
  $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>,$<BOOL:$<TARGET_PROPERTY:BUSTLE_TEST_CODE>>>:-Wno-stringop-overflow>
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

# Precompiled headers: a target whose sources mostly include the same heavy
# header (the generated wire code, about 3 s of parsing per source; Catch2;
# the core's world.hpp) parses it once. BUSTLE_PCH=OFF builds without them,
# which also proves every source includes what it uses (the fuzz preset
# does). bustle_precompile(target header...) names the headers as they are
# included (<catch2/catch.hpp>, "bustle/proto/wire.hpp").
#
# With unity batches (BUSTLE_UNITY, below) a target is one to eight
# translation units, and a precompiled header costs more than it saves:
# net_tests' header took 18.5 s of CPU, its one batch 20.6 s with it and
# 22.5 s without. So the headers are precompiled only when BUSTLE_UNITY is
# OFF.
option(BUSTLE_PCH "Precompile the heavy shared headers of large targets (without BUSTLE_UNITY)" ON)
function(bustle_precompile target)
  if(BUSTLE_PCH AND NOT BUSTLE_UNITY)
    set(headers)
    foreach(h ${ARGN})
      if(h MATCHES "^<")
        list(APPEND headers "${h}")
      else()
        list(APPEND headers "\"${h}\"")  # a project header, by its include path
      endif()
    endforeach()
    target_precompile_headers(${target} PRIVATE ${headers})
  endif()
endfunction()

# Unity builds: each target's sources compile in batches of
# BUSTLE_UNITY_BATCH, a batch being one translation unit, so the headers
# they share (Asio, spdlog, CLI11, the generated wire code, Catch2) are parsed
# and their inline code compiled and optimised once per batch instead of once
# per source. Names with internal linkage (anonymous namespaces, static
# functions) must therefore be unique within a target. CMake compiles a
# source with its own compile options alone (server/core's batch kernels).
# BUSTLE_UNITY=OFF compiles every source on its own; the fuzz preset does,
# so that each source still proves it includes what it uses.
option(BUSTLE_UNITY "Compile each target's sources in unity batches" ON)
set(BUSTLE_UNITY_BATCH 8 CACHE STRING "Sources per unity batch (BUSTLE_UNITY)")
if(BUSTLE_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${BUSTLE_UNITY_BATCH})
endif()
