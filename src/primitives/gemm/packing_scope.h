// packing_scope.h — one packed copy of a weight that several kernels pack
// the same way (a weight tied across layers, which exporters pass through
// Identity nodes to each layer's MatMul).
//
// While a PackingScope lives on a thread (exec::Plan::compile makes one
// around kernel creation), PackedMatrix::pack_a / pack_b of a source the
// scope knows (the storage of a constant, alive and unchanged while it is
// registered) return the copy packed earlier from the same source with the
// same arguments instead of packing it again. A source is unregistered
// before its storage is freed, so an address reused by later memory never
// matches. Outside a scope (runs) every call packs.
#pragma once

#include <map>
#include <set>
#include <tuple>

#include "primitives/gemm/sgemm.h"

namespace spindle::kernels::nn {

class PackingScope {
 public:
  PackingScope();   // the thread's current scope until destroyed
  ~PackingScope();  // restores the scope it replaced
  PackingScope(const PackingScope&) = delete;
  PackingScope& operator=(const PackingScope&) = delete;

  // data: the first byte of a constant's storage.
  void add_source(const void* data) { sources_.insert(data); }
  void remove_source(const void* data);

  // The thread's current scope, or null.
  static PackingScope* current();

  // (source, side 'a' / 'b', trans, rows, K, alpha bits, ld, groups, group offset)
  using Key = std::tuple<const void*, char, bool, int64_t, int64_t, uint32_t, int64_t, int64_t, int64_t>;
  // The copy packed for key, or null; remembers `packed` for key when its source is registered.
  const PackedMatrix* find(const Key& key) const;
  void remember(const Key& key, const PackedMatrix& packed);

 private:
  PackingScope* previous_;
  std::set<const void*> sources_;
  std::map<Key, PackedMatrix> packed_;
};

}  // namespace spindle::kernels::nn
