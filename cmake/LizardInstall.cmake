# Install rules, the CMake package `lizard` (find_package(lizard CONFIG)),
# pkg-config files and the Debian packages (CPack DEB, scripts/package).
#
# Components (each its own export set, so a consumer asking for some loads
# and needs only those and what they depend on):
#   workspace    lizard::workspace    the contract (standard library only)
#   local        lizard::local        LocalWorkspaceBackend
#   conformance  lizard::conformance  the generic suite and its runner API (GoogleTest)
#   sandbox      lizard::sandbox      the Lizard API client and LizardSandboxBackend (libcurl)
#   mock         lizard::mock         the embedded mock (cpp-httplib)
#   tools        lizard-conformance, lizard-mock, lizard-sweep, lizard-workspace-serve
include(CMakePackageConfigHelpers)

set(LIZARD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lizard)

# name;target;header files (relative to their include root)
set(_lizard_components workspace local conformance sandbox mock)
set(_lizard_workspace_target lizard_workspace)
set(_lizard_workspace_root ${PROJECT_SOURCE_DIR}/backend/include)
set(_lizard_workspace_headers lizard/workspace/backend.h lizard/workspace/checks.h
                              lizard/workspace/errors.h lizard/workspace/types.h
                              lizard/workspace/utf8.h)
set(_lizard_local_target lizard_local)
set(_lizard_local_root ${PROJECT_SOURCE_DIR}/backend/include)
set(_lizard_local_headers lizard/workspace/local_workspace_backend.h)
set(_lizard_conformance_target lizard_conformance)
set(_lizard_conformance_root ${PROJECT_SOURCE_DIR}/conformance/include)
set(_lizard_conformance_headers
    lizard/conformance/backend_factory.h lizard/conformance/forwarding_backend.h
    lizard/conformance/platform_control.h lizard/conformance/rules.h
    lizard/conformance/runner.h lizard/conformance/suite.h)
set(_lizard_sandbox_target lizard_sandbox)
set(_lizard_sandbox_root ${PROJECT_SOURCE_DIR}/backend/include)
set(_lizard_sandbox_headers lizard/workspace/lizard_sandbox_backend.h lizard/api/client.h
                            lizard/api/codec.h lizard/api/errors.h lizard/api/transport.h)
set(_lizard_mock_target lizard_mock)
set(_lizard_mock_root ${PROJECT_SOURCE_DIR}/mockserver/include)
set(_lizard_mock_headers lizard/mock/mock_server.h)

set(LIZARD_INSTALLED_COMPONENTS "")
foreach(_component IN LISTS _lizard_components)
  set(_target ${_lizard_${_component}_target})
  if(NOT TARGET ${_target})
    continue()
  endif()
  list(APPEND LIZARD_INSTALLED_COMPONENTS ${_component})
  install(TARGETS ${_target} EXPORT lizard-${_component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  foreach(_header IN LISTS _lizard_${_component}_headers)
    get_filename_component(_dir ${_header} DIRECTORY)
    install(FILES ${_lizard_${_component}_root}/${_header}
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${_dir} COMPONENT dev)
  endforeach()
  install(EXPORT lizard-${_component}-targets NAMESPACE lizard:: DESTINATION ${LIZARD_CMAKE_DIR}
          COMPONENT dev)
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lizard-config.cmake.in
                              ${PROJECT_BINARY_DIR}/lizard-config.cmake
                              INSTALL_DESTINATION ${LIZARD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lizard-config-version.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lizard-config.cmake
              ${PROJECT_BINARY_DIR}/lizard-config-version.cmake
        DESTINATION ${LIZARD_CMAKE_DIR} COMPONENT dev)

# pkg-config: the contract, and the Lizard backend (with the contract).
# Relocatable: the prefix is found from where the .pc file is (${pcfiledir}),
# so a staged install (cmake --install --prefix) or an unpacked package works.
file(RELATIVE_PATH LIZARD_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" LIZARD_PC_TO_PREFIX "${LIZARD_PC_TO_PREFIX}")
foreach(_pc lizard-workspace lizard-sandbox)
  if(_pc STREQUAL "lizard-sandbox" AND NOT TARGET lizard_sandbox)
    continue()
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${_pc}.pc.in ${PROJECT_BINARY_DIR}/${_pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${_pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT dev)
endforeach()

# The tools.
foreach(_tool lizard-conformance lizard-mock lizard-sweep lizard-workspace-serve)
  if(TARGET ${_tool})
    install(TARGETS ${_tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
  endif()
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT tools
        OPTIONAL)

# Debian packages: lizard-tools (the programs) and lizard-dev (headers, static
# libraries, CMake and pkg-config files). scripts/package builds them.
set(CPACK_PACKAGE_NAME lizard)
set(CPACK_PACKAGE_VENDOR "lizard-workspace")
set(CPACK_PACKAGE_CONTACT "lizard-workspace maintainers <maintainers@lizard-workspace.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Workspace backends over Lizard cloud sandboxes, and their conformance suite")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL tools dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME lizard-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
    "lizard-conformance (the workspace conformance suite's runner), lizard-mock (a mock of the\n\
 Lizard sandbox API with isolated sandboxes), lizard-sweep and lizard-workspace-serve.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME lizard-dev)
# What the installed CMake package and pkg-config files look for.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libgtest-dev, libgmock-dev, libcurl4-openssl-dev, libcpp-httplib-dev, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "The workspace contract, LocalWorkspaceBackend, LizardSandboxBackend and its API client,\n\
 the embedded mock, and the conformance suite as static libraries with their headers,\n\
 CMake package (find_package(lizard)) and pkg-config files.")
include(CPack)
