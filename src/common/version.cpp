// version.cpp — spindle::version() (include/spindle/version.h, generated):
// the version libspindle was built with, as opposed to the SPINDLE_VERSION_*
// macros an application was compiled with.
#include "spindle/version.h"

namespace spindle {

const char* version() noexcept { return SPINDLE_VERSION_STRING; }

}  // namespace spindle
