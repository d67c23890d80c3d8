// text.cpp — the text operators: StringNormalizer (opset 10) and
// TfIdfVectorizer (opset 9).
//
// StringNormalizer drops stop words (exactly, or ignoring case) and changes
// case. Case is changed per Unicode code point with the `locale` attribute's
// rules (default en_US.UTF-8; C.UTF-8 when the system lacks that locale);
// text that is not valid UTF-8 is an error naming the element.
//
// TfIdfVectorizer counts, per row, the n-grams of the pool found in the
// input (items i, i+s+1, ..., i+(n-1)(s+1) for each skip s up to
// max_skip_count; unigrams once per position) and writes TF counts, IDF
// weights or TF*IDF at each n-gram's output index. Rows run in parallel;
// each output row is written by one block.
#include <algorithm>
#include <limits>
#include <locale>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace spindle::kernels {
namespace {

// ---------------------------------------------------------------- UTF-8

// Decodes `s` into code points; false on malformed UTF-8.
bool decode_utf8(const std::string& s, std::u32string& out) {
  out.clear();
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + static_cast<size_t>(len) > s.size()) return false;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    out.push_back(cp);
    i += static_cast<size_t>(len);
  }
  return true;
}

void encode_utf8(const std::u32string& cps, std::string& out) {
  out.clear();
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
}

// ---------------------------------------------------------------- StringNormalizer

class StringNormalizerKernel final : public OpKernel {
 public:
  enum class Case { kNone, kLower, kUpper };

  explicit StringNormalizerKernel(const NodeInfo& node)
      : case_sensitive_(node.attrs.get_int("is_case_sensitive", 0) != 0) {
    const std::string action = node.attrs.get_string("case_change_action", "NONE");
    if (action == "LOWER") case_ = Case::kLower;
    else if (action == "UPPER") case_ = Case::kUpper;
    else if (action != "NONE")
      fail(node, fmt::format("case_change_action '{}' is not one of NONE, LOWER, UPPER", action));
    std::string name = node.attrs.get_string("locale", "en_US");
    if (name.find('.') == std::string::npos) name += ".UTF-8";
    for (const std::string& candidate : {name, std::string("C.UTF-8")}) {
      try {
        locale_ = std::locale(candidate);
        ctype_ = &std::use_facet<std::ctype<wchar_t>>(locale_);
        break;
      } catch (const std::runtime_error&) {
      }
    }
    if (!ctype_ && case_ != Case::kNone)
      fail_unsupported(node, fmt::format("neither the locale {} nor C.UTF-8 is installed; case changes need one", name));
    if (!ctype_ && !case_sensitive_)
      fail_unsupported(node, fmt::format("neither the locale {} nor C.UTF-8 is installed; case-insensitive stop words need one", name));
    if (node.attrs.has("stopwords"))
      for (const std::string& w : node.attrs.get_strings("stopwords"))
        stopwords_.push_back(case_sensitive_ ? w : fold(node, w, Case::kLower, -1));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    if (x.dtype() != DataType::kString) fail(node, fmt::format("input X is {}, expected a string tensor", x.describe()));
    const bool two_d = x.rank() == 2;
    if (!(x.rank() == 1 || (two_d && x.dim(0) == 1)))
      fail(node, fmt::format("input X is {}, expected shape [C] or [1, C]", x.describe()));
    const std::string* in = x.data<std::string>();
    std::vector<std::string> kept;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const std::string key = case_sensitive_ ? in[i] : fold(node, in[i], Case::kLower, i);
      if (std::find(stopwords_.begin(), stopwords_.end(), key) != stopwords_.end()) continue;
      kept.push_back(case_ == Case::kNone ? in[i] : fold(node, in[i], case_, i));
    }
    // All filtered out: one empty string, as the ONNX reference gives.
    if (kept.empty()) kept.emplace_back();
    const auto c = static_cast<int64_t>(kept.size());
    Tensor& y = ctx.output(0, DataType::kString, two_d ? Shape{1, c} : Shape{c});
    std::move(kept.begin(), kept.end(), y.mutable_data<std::string>());
  }

 private:
  // `s` in lower or upper case; `index` names the element in errors (-1:
  // a stop word).
  std::string fold(const NodeInfo& node, const std::string& s, Case to, int64_t index) const {
    std::u32string cps;
    if (!decode_utf8(s, cps))
      fail(node, index < 0 ? fmt::format("stop word \"{}\" is not valid UTF-8", s)
                           : fmt::format("element {} of X is not valid UTF-8", index));
    for (char32_t& cp : cps) {
      const auto w = static_cast<wchar_t>(cp);
      cp = static_cast<char32_t>(to == Case::kLower ? ctype_->tolower(w) : ctype_->toupper(w));
    }
    std::string out;
    encode_utf8(cps, out);
    return out;
  }

  bool case_sensitive_;
  Case case_ = Case::kNone;
  std::locale locale_;
  const std::ctype<wchar_t>* ctype_ = nullptr;
  std::vector<std::string> stopwords_;  // lower-cased unless case sensitive
};

// ---------------------------------------------------------------- TfIdfVectorizer

class TfIdfVectorizerKernel final : public OpKernel {
 public:
  explicit TfIdfVectorizerKernel(const NodeInfo& node)
      : min_n_(node.attrs.get_int("min_gram_length")),
        max_n_(node.attrs.get_int("max_gram_length")),
        max_skip_(node.attrs.get_int("max_skip_count")) {
    const std::string mode = node.attrs.get_string("mode");
    if (mode == "TF") mode_ = Mode::kTF;
    else if (mode == "IDF") mode_ = Mode::kIDF;
    else if (mode == "TFIDF") mode_ = Mode::kTFIDF;
    else fail(node, fmt::format("mode '{}' is not one of TF, IDF, TFIDF", mode));
    if (min_n_ < 1 || max_n_ < min_n_)
      fail(node, fmt::format("min_gram_length {} and max_gram_length {} must satisfy 1 <= min <= max", min_n_, max_n_));
    if (max_skip_ < 0) fail(node, fmt::format("max_skip_count {} is negative", max_skip_));
    const auto counts = node.attrs.get_ints("ngram_counts");
    const auto indexes = node.attrs.get_ints("ngram_indexes");
    strings_ = node.attrs.has("pool_strings");
    if (strings_ == node.attrs.has("pool_int64s"))
      fail(node, "expected exactly one of the attributes pool_strings and pool_int64s");
    const int64_t pool_size = strings_ ? static_cast<int64_t>(node.attrs.get_strings("pool_strings").size())
                                       : static_cast<int64_t>(node.attrs.get_ints("pool_int64s").size());
    if (strings_) pool_strings_ = node.attrs.get_strings("pool_strings");
    else pool_ints_ = node.attrs.get_ints("pool_int64s");
    if (static_cast<int64_t>(counts.size()) < max_n_)
      fail(node, fmt::format("ngram_counts has {} entries, expected one per n-gram length up to max_gram_length {}",
                             counts.size(), max_n_));
    // Pool entries of length n are pool[counts[n-1] .. counts[n]) (the last
    // length runs to the end), n items each; the k-th n-gram of the pool
    // goes to ngram_indexes[k].
    int64_t ngram = 0;
    for (size_t n = 1; n <= counts.size(); ++n) {
      const int64_t begin = counts[n - 1];
      const int64_t end = n < counts.size() ? counts[n] : pool_size;
      if (begin < 0 || end < begin || end > pool_size || (end - begin) % static_cast<int64_t>(n) != 0)
        fail(node, fmt::format("ngram_counts {} does not split a pool of {} items into n-grams of length {}",
                               fmt::join(counts, ","), pool_size, n));
      for (int64_t at = begin; at < end; at += static_cast<int64_t>(n), ++ngram) {
        if (ngram >= static_cast<int64_t>(indexes.size()))
          fail(node, fmt::format("ngram_indexes has {} entries, fewer than the pool's n-grams", indexes.size()));
        const int64_t out = indexes[static_cast<size_t>(ngram)];
        if (out < 0) fail(node, fmt::format("ngram_indexes holds the negative index {}", out));
        if (static_cast<int64_t>(n) < min_n_ || static_cast<int64_t>(n) > max_n_) continue;
        ValueKey key;
        for (size_t k = 0; k < n; ++k) {
          const size_t p = static_cast<size_t>(at) + k;
          if (strings_) key.strings.push_back(pool_strings_[p]);
          else key.ints.push_back(pool_ints_[p]);
        }
        values_.emplace(std::move(key), out);
      }
    }
    // Every index, used or not, sizes the output: an index of 2^63 - 1 made
    // i + 1 overflow (fuzz_graph).
    for (int64_t i : indexes) {
      if (i < 0 || i >= std::numeric_limits<int64_t>::max())
        fail(node, fmt::format("ngram_indexes holds the index {}, expected 0 <= index < 2^63 - 1", i));
      output_size_ = std::max(output_size_, i + 1);
    }
    weights_ = node.attrs.get_floats("weights", {});
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < output_size_)
      fail(node, fmt::format("weights has {} entries, expected {} (one per output index)", weights_.size(), output_size_));
  }

  void compute(KernelContext& ctx) const override {
    const NodeInfo& node = ctx.node();
    const Tensor& x = ctx.input(0);
    const bool is_string = x.dtype() == DataType::kString;
    if (is_string != strings_ || (!is_string && x.dtype() != DataType::kInt32 && x.dtype() != DataType::kInt64))
      fail(node, fmt::format("input X is {}, expected {}", x.describe(),
                             strings_ ? "a string tensor (the pool is pool_strings)" : "int32 or int64 (the pool is pool_int64s)"));
    if (x.rank() != 1 && x.rank() != 2) fail(node, fmt::format("input X is {}, expected shape [C] or [N, C]", x.describe()));
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t cols = x.dim(-1);
    Tensor& y = ctx.output(0, DataType::kFloat32, x.rank() == 2 ? Shape{rows, output_size_} : Shape{output_size_});
    float* out = y.mutable_data<float>();
    std::vector<int64_t> ints;
    if (!is_string) ints = x.to_int64_vector();
    const std::string* strs = is_string ? x.data<std::string>() : nullptr;
    // In double: max_skip_count comes from the model (a skip past the row
    // only ends the loop, so the row length bounds the work).
    const double skips = static_cast<double>(std::min<int64_t>(max_skip_, cols)) + 1.0;
    const double cost = static_cast<double>(cols) * static_cast<double>(max_n_ - min_n_ + 1) * skips * 50.0;
    parallel_for(ctx.pool(), rows, Cost{0, static_cast<double>(output_size_) * 4, cost}, [&](int64_t r0, int64_t r1) {
      ValueKey key;
      std::vector<float> counts(static_cast<size_t>(output_size_));
      for (int64_t r = r0; r < r1; ++r) {
        std::fill(counts.begin(), counts.end(), 0.0f);
        const int64_t base = r * cols;
        for (int64_t i = 0; i < cols; ++i) {
          for (int64_t n = min_n_; n <= max_n_; ++n) {
            // Unigrams do not depend on the skip: counted once per position.
            const int64_t skips = n == 1 ? 0 : max_skip_;
            for (int64_t s = 0; s <= skips; ++s) {
              if (i + (n - 1) * (s + 1) >= cols) break;
              key.ints.clear();
              key.strings.clear();
              for (int64_t k = 0; k < n; ++k) {
                const int64_t at = base + i + k * (s + 1);
                if (is_string) key.strings.push_back(strs[at]);
                else key.ints.push_back(ints[static_cast<size_t>(at)]);
              }
              auto it = values_.find(key);
              if (it != values_.end()) counts[static_cast<size_t>(it->second)] += 1.0f;
            }
          }
        }
        float* row = out + r * output_size_;
        for (int64_t k = 0; k < output_size_; ++k) {
          const float c = counts[static_cast<size_t>(k)];
          const float w = weights_.empty() ? 1.0f : weights_[static_cast<size_t>(k)];
          row[k] = mode_ == Mode::kTF ? c : mode_ == Mode::kIDF ? (c > 0 ? w : 0.0f) : c * w;
        }
      }
    });
  }

 private:
  enum class Mode { kTF, kIDF, kTFIDF };
  // An n-gram by value: ints for pool_int64s, strings for pool_strings.
  struct ValueKey {
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    bool operator<(const ValueKey& o) const { return ints != o.ints ? ints < o.ints : strings < o.strings; }
  };
  int64_t min_n_, max_n_, max_skip_;
  Mode mode_ = Mode::kTF;
  bool strings_ = false;
  std::vector<std::string> pool_strings_;
  std::vector<int64_t> pool_ints_;
  std::map<ValueKey, int64_t> values_;  // n-gram -> output index
  std::vector<float> weights_;
  int64_t output_size_ = 0;
};

}  // namespace

void register_text_kernels(KernelRegistry& r) {
  r.add("", "StringNormalizer", 10, 17, factory_of<StringNormalizerKernel>());
  r.add("", "TfIdfVectorizer", 9, 17, factory_of<TfIdfVectorizerKernel>());
  r.allow_strings("", "StringNormalizer");
  r.allow_strings("", "TfIdfVectorizer");
}

}  // namespace spindle::kernels
