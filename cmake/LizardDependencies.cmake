# Every dependency comes from a Debian package (see scripts/setup).
# Each is looked for only when something that needs it is built.
find_package(Threads REQUIRED)
if(LIZARD_BUILD_SANDBOX)
  find_package(CURL REQUIRED)
endif()

# RapidJSON is header-only; our own INTERFACE target includes it as SYSTEM so
# its warnings never fail our -Werror build.
find_package(RapidJSON CONFIG QUIET)
find_path(LIZARD_RAPIDJSON_INCLUDE_DIR rapidjson/document.h
          HINTS ${RapidJSON_INCLUDE_DIRS} ${RAPIDJSON_INCLUDE_DIRS} REQUIRED)
add_library(lizard_rapidjson INTERFACE)
target_include_directories(lizard_rapidjson SYSTEM INTERFACE ${LIZARD_RAPIDJSON_INCLUDE_DIR})
# std::string support in the DOM API. Not RAPIDJSON_SSE2: Debian's RapidJSON
# 1.1.0 then writes and parses some escaped strings wrongly (the hostile-string
# matrix's env and file-name cases came back "Invalid escape character").
target_compile_definitions(lizard_rapidjson INTERFACE RAPIDJSON_HAS_STDSTRING=1)
add_library(lizard::rapidjson ALIAS lizard_rapidjson)

# Debian's cpp-httplib 0.11.4 is a compiled library with a pkg-config file.
if(LIZARD_BUILD_MOCK)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
  add_library(lizard_httplib INTERFACE)
  target_link_libraries(lizard_httplib INTERFACE PkgConfig::HTTPLIB Threads::Threads)
  get_target_property(_httplib_inc PkgConfig::HTTPLIB INTERFACE_INCLUDE_DIRECTORIES)
  if(_httplib_inc)
    target_include_directories(lizard_httplib SYSTEM INTERFACE ${_httplib_inc})
  endif()
  add_library(lizard::httplib ALIAS lizard_httplib)
endif()

# GoogleTest: the conformance suite is a GoogleTest library, so a consumer of
# lizard::conformance gets GTest's targets too (global, so that a project
# adding this one with add_subdirectory or FetchContent can link
# GTest::gtest_main without a find_package of its own).
find_package(GTest REQUIRED)
foreach(_gtest_target GTest::gtest GTest::gtest_main GTest::gmock GTest::gmock_main)
  if(TARGET ${_gtest_target})
    get_target_property(_aliased ${_gtest_target} ALIASED_TARGET)
    if(_aliased)
      set(_gtest_target ${_aliased})
    endif()
    get_target_property(_global ${_gtest_target} IMPORTED_GLOBAL)
    if(NOT _global)
      set_target_properties(${_gtest_target} PROPERTIES IMPORTED_GLOBAL TRUE)
    endif()
  endif()
endforeach()
include(GoogleTest)
if(LIZARD_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
