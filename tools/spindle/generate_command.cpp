// generate_command.cpp — spindle generate: greedy decoding with a
// decoder-only model and its key / value cache.
//
//   spindle generate MODEL --prompt-ids 1,2,3 --max-new-tokens N [--warmup N] [--json] [threading flags]
//
// The model's inputs are read from it: input_ids (int64 or int32, batch x
// sequence), and when present position_ids (the tokens' positions) and
// attention_mask (ones over past and new tokens); every other input must be a
// cache input past_key_values.N.key / .value (batch, heads, past, head size),
// whose output is present.N.key / .value (or present_key_values.N.*). After
// --warmup untimed prefills (default 1: first-run allocations and weight
// packing), the prompt runs once with an empty cache (prefill); then each step feeds the
// token it chose (the largest logit of the last row, the first on ties) with
// the previous step's present tensors as the past, handed over without a
// copy. Prints the generated ids, the prefill time, the median time of one
// decode step and the decode rate in tokens/s.
#include <algorithm>
#include <chrono>
#include <functional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "model_common.h"

namespace spindle::cli {
namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt_ids;
  int max_new_tokens = 16;
  int warmup = 1;
  bool json = false;
  ThreadingFlags threading;
};

struct CacheInput {
  std::string past, present;
  DataType dtype;
  Shape empty_shape;  // batch 1, past 0
};

// The model's inputs and outputs, as generate uses them.
struct DecoderIo {
  DataType ids_type = DataType::kInt64;
  bool has_positions = false, has_mask = false;
  DataType positions_type = DataType::kInt64, mask_type = DataType::kInt64;
  std::vector<CacheInput> cache;
  std::string logits;
};

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 0)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("--prompt-ids '{}': '{}' is not a token id (expected comma-separated integers >= 0)",
                              text, item));
    ids.push_back(v);
  }
  if (ids.empty()) throw Error(StatusCode::kInvalidArgument, "--prompt-ids is empty: expected at least one token id");
  return ids;
}

bool is_index_type(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

DecoderIo decoder_io(const InferenceSession& s) {
  DecoderIo io;
  bool has_ids = false;
  std::vector<std::string> outputs;
  for (const TensorInfo& o : s.outputs()) outputs.push_back(o.name);
  auto has_output = [&](const std::string& n) { return std::find(outputs.begin(), outputs.end(), n) != outputs.end(); };
  const std::string past_prefix = "past_key_values.";
  for (const TensorInfo& in : s.inputs()) {
    auto index_input = [&](DataType* type) {
      if (!is_index_type(in.dtype))
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("model input {} is {}, expected int64 or int32", in.name, dtype_name(in.dtype)));
      *type = in.dtype;
    };
    if (in.name == "input_ids") {
      index_input(&io.ids_type);
      has_ids = true;
    } else if (in.name == "position_ids") {
      index_input(&io.positions_type);
      io.has_positions = true;
    } else if (in.name == "attention_mask") {
      index_input(&io.mask_type);
      io.has_mask = true;
    } else if (in.name.rfind(past_prefix, 0) == 0) {
      const std::string rest = in.name.substr(past_prefix.size());
      CacheInput c{in.name, "", in.dtype, in.shape};
      for (const std::string& cand : {"present." + rest, "present_key_values." + rest})
        if (has_output(cand)) c.present = cand;
      if (c.present.empty())
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("model input {} has no output present.{} (or present_key_values.{}) to feed it back",
                                in.name, rest, rest));
      if (c.empty_shape.size() != 4)
        throw Error(StatusCode::kInvalidArgument,
                    fmt::format("model input {} has rank {}, expected 4 (batch, heads, past sequence, head size)", in.name,
                                c.empty_shape.size()));
      c.empty_shape[0] = 1;
      c.empty_shape[2] = 0;
      for (size_t i : {size_t{1}, size_t{3}})
        if (c.empty_shape[i] < 1)
          throw Error(StatusCode::kInvalidArgument,
                      fmt::format("model input {} has a dynamic dimension {} (heads or head size): spindle generate "
                                  "needs it fixed",
                                  in.name, i));
      io.cache.push_back(std::move(c));
    } else {
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("model input {} is none of input_ids, position_ids, attention_mask, "
                              "past_key_values.N.key / .value; the model's inputs are {}",
                              in.name, describe_inputs(s)));
    }
  }
  if (!has_ids)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("the model has no input_ids input; its inputs are {}", describe_inputs(s)));
  io.logits = has_output("logits") ? "logits" : "";
  for (const std::string& o : outputs)
    if (io.logits.empty() && o.rfind("present", 0) != 0) io.logits = o;
  if (io.logits.empty()) throw Error(StatusCode::kInvalidArgument, "the model has no logits output");
  return io;
}

Tensor index_tensor(DataType type, int64_t n, const std::function<int64_t(int64_t)>& value) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value(i);
  if (type == DataType::kInt64) return Tensor::from_vector<int64_t>({1, n}, v);
  return Tensor::from_vector<int32_t>({1, n}, std::vector<int32_t>(v.begin(), v.end()));
}

// The id of the largest value in the last row of logits (batch 1, sequence, vocabulary).
int64_t greedy_token(const Tensor& logits, const std::string& name) {
  if (logits.dtype() != DataType::kFloat32 || logits.rank() < 2 || logits.numel() == 0)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("output {} is {}, expected float32 logits (batch 1, sequence, vocabulary)", name,
                            logits.describe()));
  const int64_t vocab = logits.dim(static_cast<int>(logits.rank() - 1));
  const float* row = logits.data<float>() + logits.numel() - vocab;
  return std::max_element(row, row + vocab) - row;
}

void generate_command(const GenerateArgs& a) {
  if (a.warmup < 0) throw Error(StatusCode::kInvalidArgument, fmt::format("--warmup {}: expected 0 or more", a.warmup));
  if (a.max_new_tokens < 1)
    throw Error(StatusCode::kInvalidArgument, fmt::format("--max-new-tokens {}: expected at least 1", a.max_new_tokens));
  const std::vector<int64_t> prompt = parse_ids(a.prompt_ids);
  auto session = InferenceSession::create(a.model, session_options(a.threading));
  const DecoderIo io = decoder_io(*session);
  std::vector<std::string> fetch{io.logits};
  for (const CacheInput& c : io.cache) fetch.push_back(c.present);

  std::vector<Tensor> past;
  for (const CacheInput& c : io.cache) past.emplace_back(c.dtype, c.empty_shape);
  std::vector<int64_t> generated;
  std::vector<double> step_ms;
  int64_t length = 0;  // tokens in the cache
  auto step = [&](const std::vector<int64_t>& ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    Feeds feeds;
    feeds.emplace_back("input_ids", index_tensor(io.ids_type, n, [&](int64_t i) { return ids[static_cast<size_t>(i)]; }));
    if (io.has_positions)
      feeds.emplace_back("position_ids", index_tensor(io.positions_type, n, [&](int64_t i) { return length + i; }));
    if (io.has_mask) feeds.emplace_back("attention_mask", index_tensor(io.mask_type, length + n, [](int64_t) { return 1; }));
    for (size_t i = 0; i < io.cache.size(); ++i) feeds.emplace_back(io.cache[i].past, std::move(past[i]));
    const auto start = std::chrono::steady_clock::now();
    std::vector<Tensor> out = session->run(feeds, fetch);
    step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    for (size_t i = 0; i < io.cache.size(); ++i) past[i] = std::move(out[i + 1]);
    length += n;
    generated.push_back(greedy_token(out[0], io.logits));
  };
  for (int i = 0; i < a.warmup; ++i) {  // untimed prefills: first-run allocations and weight packing
    step(prompt);
    past.clear();
    for (const CacheInput& c : io.cache) past.emplace_back(c.dtype, c.empty_shape);
    generated.clear(), step_ms.clear(), length = 0;
  }
  step(prompt);
  while (static_cast<int>(generated.size()) < a.max_new_tokens) step({generated.back()});

  const double prefill_ms = step_ms.front();
  const std::vector<double> decode_ms(step_ms.begin() + 1, step_ms.end());
  double decode_total = 0;
  for (double ms : decode_ms) decode_total += ms;
  const double p50 = decode_ms.empty() ? 0.0 : percentile(decode_ms, 50);
  const double rate = decode_total > 0 ? 1e3 * static_cast<double>(decode_ms.size()) / decode_total : 0.0;
  const int dop = session->intra_op_pool() ? session->intra_op_pool()->dop() : 1;
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"intra_threads", dop},
                        {"prompt_tokens", prompt.size()},
                        {"generated_ids", generated},
                        {"prefill_ms", prefill_ms},
                        {"prefill_tokens_per_s", 1e3 * static_cast<double>(prompt.size()) / prefill_ms},
                        {"decode_steps", decode_ms.size()},
                        {"decode_p50_ms", p50},
                        {"decode_tokens_per_s", rate}};
    fmt::print("{}\n", j.dump(2));
    return;
  }
  std::string ids;
  for (int64_t t : generated) ids += fmt::format("{}{}", ids.empty() ? "" : ",", t);
  fmt::print("model      {}\n", a.model);
  fmt::print("threads    intra {}\n", dop);
  fmt::print("generated  {}\n", ids);
  fmt::print("prefill    {} tokens in {:.2f} ms ({:.1f} tokens/s)\n", prompt.size(), prefill_ms,
             1e3 * static_cast<double>(prompt.size()) / prefill_ms);
  if (decode_ms.empty())
    fmt::print("decode     no steps (--max-new-tokens 1 comes from the prefill)\n");
  else
    fmt::print("decode     {} steps, p50 {:.2f} ms per token, {:.1f} tokens/s\n", decode_ms.size(), p50, rate);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Greedy token generation with a decoder model and its key / value cache");
  cmd->add_option("model", args->model, "ONNX decoder model (input_ids, past_key_values.N.key / .value, ...)")->required();
  cmd->add_option("--prompt-ids", args->prompt_ids, "the prompt's token ids, comma-separated (1,2,3)")->required();
  cmd->add_option("--max-new-tokens", args->max_new_tokens, "tokens to generate (the first comes from the prefill)");
  cmd->add_option("--warmup", args->warmup, "untimed prefills of the prompt first");
  cmd->add_flag("--json", args->json, "print one JSON object (ids, prefill ms, decode p50 ms and tokens/s)");
  add_threading_flags(cmd, args->threading);
  cmd->callback([args] { generate_command(*args); });
}

}  // namespace spindle::cli
