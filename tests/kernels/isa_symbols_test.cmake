# isa_symbols_test.cmake — checks the rule of src/primitives/isa/dispatch.h on
# the compiled per-ISA objects: every weak (W/V), unique (u) or common
# symbol defined by a spindle_isa_<LEVEL> object must belong to that level,
# i.e. its name must contain the namespace spindle::kernels::<LEVEL>::.
# Otherwise the linker may keep that level's copy of an inline function or
# template for every caller, and a CPU without the level's instructions dies
# with SIGILL.
#
#   cmake -DNM=nm -DLEVEL=avx2 -DOBJECTS="a.o|b.o" -P isa_symbols_test.cmake
if(NOT NM OR NOT LEVEL OR NOT OBJECTS)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DLEVEL=<level> -DOBJECTS=<a.o|b.o> -P isa_symbols_test.cmake")
endif()
string(REPLACE "|" ";" objects "${OBJECTS}")
set(bad "")
set(strong 0)
foreach(obj IN LISTS objects)
  if(NOT EXISTS "${obj}")
    message(FATAL_ERROR "per-ISA object ${obj} does not exist (build the spindle target first)")
  endif()
  execute_process(COMMAND ${NM} --defined-only -C "${obj}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${obj}: ${err}")
  endif()
  string(REPLACE ";" "\\;" out "${out}")
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) (.*)$")
      set(type "${CMAKE_MATCH_1}")
      set(name "${CMAKE_MATCH_2}")
      if(type STREQUAL "T")
        math(EXPR strong "${strong} + 1")
      endif()
      # DW.ref.__gxx_personality_v0: the exception personality's address
      # (data, no code), present in any object with unwind tables.
      if(type MATCHES "^[WwVvuC]$" AND NOT name MATCHES "spindle::kernels::${LEVEL}::"
         AND NOT name MATCHES "^DW\\.ref\\.")
        get_filename_component(base "${obj}" NAME)
        list(APPEND bad "  ${base}: ${type} ${name}")
      endif()
    endif()
  endforeach()
endforeach()
if(strong EQUAL 0)
  message(FATAL_ERROR "no function defined in the ${LEVEL} objects: is ${NM} reading them?")
endif()
if(bad)
  list(LENGTH bad n)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "${n} symbol(s) of the ${LEVEL} objects could be shared with other levels "
                      "(weak/unique, outside namespace spindle::kernels::${LEVEL}); the linker may keep "
                      "this level's copy for every caller (src/primitives/isa/dispatch.h):\n${bad}")
endif()
message(STATUS "${LEVEL}: ${strong} functions, no weak symbol outside spindle::kernels::${LEVEL}")
