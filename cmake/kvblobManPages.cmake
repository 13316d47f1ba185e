# Manual pages for the command-line tools, made by help2man from each tool's
# own --help and --version, so a page never says what the tool does not:
# share/man/man1/<tool>.1.gz in the tools package. Without help2man (Debian:
# help2man, installed by scripts/install-deps) the build says so and makes
# none.
find_program(HELP2MAN help2man)
if(NOT HELP2MAN)
  message(STATUS "Manual pages: not made (help2man not found)")
  return()
endif()
set(kvblob_man_dir ${PROJECT_BINARY_DIR}/man)
set(kvblob_man_pages)
set(kvblob_summary_kvblob-info "describe a kvblob store driver and why a host would refuse it")
set(kvblob_summary_kvblob-conformance "run the kvblob conformance battery against a store driver")
set(kvblob_summary_kvblob-soak "run a kvblob store driver for a long while and count what goes wrong")
set(kvblob_summary_kvblob-bench "measure a kvblob store driver against a baseline in the same run")
set(kvblob_summary_kvblob-engine "an engine that shares KV-cache blocks through the driver its config names")
foreach(tool IN ITEMS kvblob-info kvblob-conformance kvblob-soak kvblob-bench kvblob-engine)
  if(NOT TARGET ${tool})
    continue()
  endif()
  set(summary "${kvblob_summary_${tool}}")
  set(page ${kvblob_man_dir}/${tool}.1.gz)
  add_custom_command(OUTPUT ${page}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${kvblob_man_dir}
    COMMAND ${HELP2MAN} --no-info --section=1 --name=${summary} --output=${kvblob_man_dir}/${tool}.1
            $<TARGET_FILE:${tool}>
    COMMAND gzip -n -9 -f ${kvblob_man_dir}/${tool}.1
    DEPENDS ${tool}
    COMMENT "Manual page for ${tool}"
    VERBATIM)
  list(APPEND kvblob_man_pages ${page})
endforeach()
add_custom_target(man_pages ALL DEPENDS ${kvblob_man_pages})
install(FILES ${kvblob_man_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
