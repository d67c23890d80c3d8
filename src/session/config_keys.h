// config_keys.h — the session config-key table's entry points inside spindle
// (SessionOptions::add_config_entry is the public one).
#pragma once

#include <string>

#include "spindle/session.h"

namespace spindle {

// Parses one KEY=VALUE into the typed field of `settings` the table maps KEY
// to; errors name the key and the value (an unknown key also the closest
// known one). ONNX Runtime keys spindle does not act on are kept as written
// in inert_config_entries, with a warning on stderr the first time each key
// is seen in the process.
Status parse_config_entry(SessionSettings& settings, const std::string& key, const std::string& value);

namespace detail {
// Tests: warn again about keys already warned about.
void forget_config_warnings();
}  // namespace detail

}  // namespace spindle
