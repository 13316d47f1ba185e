# Debian packages with CPack (`cpack -G DEB` in the build folder):
#   libkvblob-host0  the host library
#   kvblob-dev       headers, the CMake package, the plugin version script,
#                    the contract and vendor guide, the driver template
#   kvblob-tools     kvblob-info, kvblob-conformance, kvblob-soak, kvblob-bench,
#                    kvblob-engine, their manual pages, the engine's example config
#   kvblob-drivers   the bundled drivers (memory, file, redis, tiered, mooncake, null)
#   python3-kvblob   the Python package
# Each install() names its component (or inherits one from
# CMAKE_INSTALL_DEFAULT_COMPONENT_NAME where its folder is added); shared
# library dependencies are found by dpkg-shlibdeps (SHA-256 is the host's
# own and XXH3 is compiled in from xxhash.h), the packages' own
# ones are declared below. tests/packaging/run.sh (ctest -L packaging) builds
# them, unpacks them into a scratch root and builds against that.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kvblob)
set(CPACK_PACKAGE_VENDOR kvblob)
# The packages' Maintainer and their changelog's signature, in one place so
# that a distributor building them names itself: -DKVBLOB_PACKAGE_MAINTAINER=...
set(KVBLOB_PACKAGE_MAINTAINER "kvblob maintainers <maintainers@kvblob.org>" CACHE STRING
    "Maintainer of the Debian packages (\"name <address>\"): their Maintainer field and changelog")
set(CPACK_PACKAGE_CONTACT "${KVBLOB_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${KVBLOB_PACKAGE_MAINTAINER}")
# CPackDeb makes the summary every package's synopsis (the Description's
# first line) unless it is CPack's own default; each package has its own
# synopsis below, so the summary is left at that default.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What lintian asks of every package: stripped binaries (the build keeps its
# debug information; the packages do not), and the host library's shlibs
# file with an ldconfig trigger, so that packages linking it get a versioned
# dependency and the dynamic linker's cache is refreshed on install.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # packages holding a library with a SONAME: the host library alone
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/debian/triggers CONTENT "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian/triggers)
# libkvblob_host.so is in the packages themselves, not yet on the system.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

# A runner-only build has no drivers: no package (nor copyright file) for them.
set(CPACK_COMPONENTS_ALL lib dev tools)
if(NOT KVBLOB_RUNNER_ONLY)
  list(APPEND CPACK_COMPONENTS_ALL drivers)
endif()
if(TARGET _kvblob)
  list(APPEND CPACK_COMPONENTS_ALL python)
endif()
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libkvblob-host${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_DEV_PACKAGE_NAME kvblob-dev)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME kvblob-tools)
set(CPACK_DEBIAN_DRIVERS_PACKAGE_NAME kvblob-drivers)
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-kvblob)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
# Each package's Description: a synopsis (no article, under 80 columns),
# then lines of at most 79 columns (CPackDeb indents them, it does not wrap).
set(kvblob_about "kvblob is a stable C ABI between LLM inference engines and KV-cache
stores: an engine loads a store's driver (a plugin library) through the
host library, which checks every call against the contract.")
set(CPACK_DEBIAN_LIB_DESCRIPTION "host library for kvblob KV-cache store drivers
${kvblob_about}
.
This package holds the host library, which loads, negotiates with and
guards the drivers an engine names.")
set(CPACK_DEBIAN_DEV_DESCRIPTION "development files for kvblob engines and store drivers
${kvblob_about}
.
This package holds the ABI and host headers, the CMake package
(find_package(kvblob)), the driver template, the contract and the
vendor guide, and depends on what building the template needs.")
# The programs this build made (a runner-only build makes three), and their
# manual pages where help2man made them (cmake/kvblobManPages.cmake).
set(kvblob_tools)
foreach(tool IN ITEMS kvblob-info kvblob-conformance kvblob-soak kvblob-bench kvblob-engine)
  if(TARGET ${tool})
    list(APPEND kvblob_tools ${tool})
  endif()
endforeach()
list(JOIN kvblob_tools ", " kvblob_tools)
set(kvblob_tools_pages "")
if(HELP2MAN)
  set(kvblob_tools_pages " and their manual pages")
endif()
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "command-line tools to inspect, test and measure kvblob drivers
${kvblob_about}
.
This package holds these programs${kvblob_tools_pages}:
${kvblob_tools}.")
set(CPACK_DEBIAN_DRIVERS_DESCRIPTION "bundled kvblob store drivers
${kvblob_about}
.
This package holds the bundled drivers: memory, file, redis, tiered,
mooncake (which opens Mooncake's own store library when it runs) and
null.")
set(CPACK_DEBIAN_PYTHON_DESCRIPTION "Python bindings for the kvblob host library
${kvblob_about}
.
This package holds the kvblob Python module and its example engines.")
# Component dependencies become Depends with the exact version.
set(CPACK_COMPONENT_DEV_DEPENDS lib)
set(CPACK_COMPONENT_TOOLS_DEPENDS lib)
set(CPACK_COMPONENT_PYTHON_DEPENDS lib)
# Dependencies no ELF file shows: kvblob-dev is for building a driver or an
# engine, so it brings what the template's build needs, CMake, a C and a C++
# compiler, the C library's headers (gcc only recommends them) and a build
# tool (an image installed with --no-install-recommends has none of them
# otherwise; scripts/package-install-check builds the template in one);
# the Python module needs the interpreter and numpy; the host finds drivers
# beside itself, so the tools and the Python package (whose
# kvblob.load('memory') names a bundled driver) recommend them.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "cmake (>= 3.22), gcc | c-compiler, g++ | c++-compiler, libc6-dev | libc-dev, make | ninja-build")
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, python3-numpy")
if(drivers IN_LIST CPACK_COMPONENTS_ALL)  # not in a runner-only build
  set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS kvblob-drivers)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_RECOMMENDS kvblob-drivers)
endif()
set(CPACK_DEBIAN_DRIVERS_PACKAGE_ENHANCES "${CPACK_DEBIAN_LIB_PACKAGE_NAME}")
# Debian's place for what may be done with each package: a copyright file
# in /usr/share/doc/<package>/. It says the truth: no licence chosen yet.
# And the changelog every Debian package carries (changelog.gz for a
# native package), in Debian's format, made from the version and contact
# above. Its date is SOURCE_DATE_EPOCH's where set, else the day this entry
# was written: a configure never rewrites it, so nothing rebuilds.
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  string(TIMESTAMP kvblob_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
else()
  set(kvblob_changelog_date "Fri, 04 Dec 2026 00:00:00 +0000")
endif()
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/debian/changelog CONTENT
  "kvblob (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium

  * Packages built from the kvblob source tree; the project has not made a
    release yet.

 -- ${CPACK_PACKAGE_CONTACT}  ${kvblob_changelog_date}
")
find_program(KVBLOB_GZIP gzip REQUIRED)
add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/debian/changelog.gz
  COMMAND ${KVBLOB_GZIP} -n -9 -c ${PROJECT_BINARY_DIR}/debian/changelog > ${PROJECT_BINARY_DIR}/debian/changelog.gz
  DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog VERBATIM)
add_custom_target(debian_changelog ALL DEPENDS ${PROJECT_BINARY_DIR}/debian/changelog.gz)
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} upper)
  install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian-copyright RENAME copyright
    DESTINATION share/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME} COMPONENT ${component})
  install(FILES ${PROJECT_BINARY_DIR}/debian/changelog.gz
    DESTINATION share/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME} COMPONENT ${component})
endforeach()
include(CPack)
