# public_headers_test.cmake — every public header compiles on its own: for
# each include/spindle/*.h (and the generated version.h) a one-line
# translation unit `#include "spindle/X.h"` is compiled with the project's C++
# standard, seeing only the public include folders (as an installed copy
# would), so a header that forgets one of its own includes fails here (the
# project's warning flags; warnings are printed, not errors). The
# headers are listed when the test runs, so a new one is covered at once.
#
#   cmake -DCXX=<compiler> -DSTD=20 -DSOURCE_INCLUDE=<repo>/include
#         -DBINARY_INCLUDE=<build>/include -DWORK=<dir> -P public_headers_test.cmake
foreach(var CXX STD SOURCE_INCLUDE BINARY_INCLUDE WORK)
  if(NOT ${var})
    message(FATAL_ERROR "usage: cmake -DCXX=<compiler> -DSTD=<17|20|...> -DSOURCE_INCLUDE=<dir> "
                        "-DBINARY_INCLUDE=<dir> -DWORK=<dir> -P public_headers_test.cmake")
  endif()
endforeach()
file(GLOB headers RELATIVE ${SOURCE_INCLUDE} ${SOURCE_INCLUDE}/spindle/*.h)
file(GLOB generated RELATIVE ${BINARY_INCLUDE} ${BINARY_INCLUDE}/spindle/*.h)
list(APPEND headers ${generated})
list(REMOVE_DUPLICATES headers)
list(SORT headers)
if(NOT headers)
  message(FATAL_ERROR "no public headers under ${SOURCE_INCLUDE}/spindle")
endif()
file(MAKE_DIRECTORY ${WORK})
set(failed "")
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER "${header}" stem)
  set(tu ${WORK}/${stem}.cpp)
  file(WRITE ${tu} "#include \"${header}\"\n")
  execute_process(
    COMMAND ${CXX} -std=c++${STD} -fsyntax-only -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -I${SOURCE_INCLUDE} -I${BINARY_INCLUDE} ${tu}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(STATUS "ok    ${header}")
  else()
    message(STATUS "FAIL  ${header}\n${out}${err}")
    list(APPEND failed ${header})
  endif()
endforeach()
list(LENGTH headers n)
if(failed)
  list(JOIN failed ", " names)
  message(FATAL_ERROR "public headers that do not compile on their own: ${names}")
endif()
message(STATUS "all ${n} public headers compile on their own")
