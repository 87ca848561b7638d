# Every dependency comes from a Debian package (see scripts/setup).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(CURL REQUIRED)

# RapidJSON is header-only; our own INTERFACE target includes it as SYSTEM so
# its warnings never fail our -Werror build.
find_package(RapidJSON CONFIG QUIET)
find_path(LIZARD_RAPIDJSON_INCLUDE_DIR rapidjson/document.h
          HINTS ${RapidJSON_INCLUDE_DIRS} ${RAPIDJSON_INCLUDE_DIRS} REQUIRED)
add_library(lizard_rapidjson INTERFACE)
target_include_directories(lizard_rapidjson SYSTEM INTERFACE ${LIZARD_RAPIDJSON_INCLUDE_DIR})
# std::string support in the DOM API; SSE2 scanning of whitespace is safe on x86-64.
target_compile_definitions(lizard_rapidjson INTERFACE RAPIDJSON_HAS_STDSTRING=1)
add_library(lizard::rapidjson ALIAS lizard_rapidjson)

# Debian's cpp-httplib 0.11.4 is a compiled library with a pkg-config file.
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
add_library(lizard_httplib INTERFACE)
target_link_libraries(lizard_httplib INTERFACE PkgConfig::HTTPLIB Threads::Threads)
get_target_property(_httplib_inc PkgConfig::HTTPLIB INTERFACE_INCLUDE_DIRECTORIES)
if(_httplib_inc)
  target_include_directories(lizard_httplib SYSTEM INTERFACE ${_httplib_inc})
endif()
add_library(lizard::httplib ALIAS lizard_httplib)

if(LIZARD_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(LIZARD_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
