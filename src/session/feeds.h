// feeds.h — validation of the feeds of a run against the model's inputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "spindle/session.h"

namespace spindle {

// Throws an Error naming `origin` and the input when a feed names no input
// (listing the model's inputs), is fed twice, is empty, or has the wrong
// kind (tensor, sequence, optional), element type or shape; and when inputs
// are missing. input_index maps each input's name to its index in `inputs`.
void validate_feeds(const Feeds& feeds, const std::vector<TensorInfo>& inputs,
                    const std::map<std::string, int>& input_index, const std::string& origin);

}  // namespace spindle
