# Realistic breaks of the installed driver template, each a copy of
# examples/minimal_driver/minimal_driver.c with one line changed, built as a
# driver and run through the battery as a vendor would: the first FAIL must
# name the rule broken, with its figures, and no FAIL a rule not broken
# (tests/conformance/template_break.sh). Included by tests/CMakeLists.txt
# beside the absent-key break (conformance_blocked_not_blamed), built there
# the same way; template_c names the template.
file(READ ${template_c} template_text)

# kvblob_template_break(NAME FIND REPLACE): the driver libkvblob_<NAME>.so
# from the template with FIND replaced by REPLACE; configuring fails, naming
# the line, when the template no longer has FIND.
function(kvblob_template_break name find replace)
  string(FIND "${template_text}" "${find}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${template_c} no longer has the line tests/conformance/template_breaks.cmake breaks for ${name}: ${find}")
  endif()
  string(REPLACE "${find}" "${replace}" broken "${template_text}")
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/broken_template/${name}.c CONTENT "${broken}" @ONLY)
  add_library(${name} MODULE ${CMAKE_CURRENT_BINARY_DIR}/broken_template/${name}.c)
  set_target_properties(${name} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
    LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/broken)
  target_compile_definitions(${name} PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(${name} PRIVATE kvblob::abi Threads::Threads)
  kvblob_driver(${name} NAME ${name})
endfunction()

# (a) Refuses keys longer than half the max_key_bytes it declares.
kvblob_template_break(template_short_keys
  "if (row->key_len > MAX_KEY_BYTES) return \"[R-ADM-4] a key longer than max_key_bytes\";"
  "if (row->key_len > MAX_KEY_BYTES) return \"[R-ADM-4] a key longer than max_key_bytes\";
        if (row->key_len > MAX_KEY_BYTES / 2) return \"key too long for the backend\"; /* broken on purpose */")
# (b) A put keeps only the first 4096 bytes of a larger value.
kvblob_template_break(template_put_4k
  "obj->size = s->length;"
  "obj->size = s->length < 4096 ? s->length : 4096; /* broken on purpose */")
# (c) A get writes one byte past its span (a C string's terminator).
kvblob_template_break(template_get_overrun
  "memcpy(s->region->base + s->offset, obj->bytes, obj->size);"
  "memcpy(s->region->base + s->offset, obj->bytes, obj->size);
        s->region->base[s->offset + obj->size] = 0; /* broken on purpose */")
# (d) A put is never counted out of the calls in progress, so drain waits
# for it to its deadline: a deadlock, which asks the machine for no CPU
# (conformance_template_drain_stuck: FAIL, not TIMEOUT (machine starved)).
kvblob_template_break(template_drain_stuck
  "if (--d->calls_in_progress == 0) pthread_cond_broadcast(&d->idle);"
  "if (kind != OP_PUT && --d->calls_in_progress == 0) pthread_cond_broadcast(&d->idle); /* broken on purpose */")

foreach(case short_keys put_4k get_overrun drain_stuck)
  add_test(NAME conformance_template_${case}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/conformance/template_break.sh ${case} $<TARGET_FILE:kvblob-conformance>
            $<TARGET_FILE:template_${case}>)
  set_tests_properties(conformance_template_${case} PROPERTIES LABELS conformance
    PASS_REGULAR_EXPRESSION "template_break.sh ${case}: first FAIL ")
endforeach()
