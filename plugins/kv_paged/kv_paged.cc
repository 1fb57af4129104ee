// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// KvPaged: configuration, request bookkeeping, the step protocol (declare, admit, plan, commit,
// abort_step) and prefix chains. Tier transfers, publishing and deltas are in kv_paged_tiers.cc.
#include "kv_paged.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace mstar::kv {

using namespace mstar::sdk;

namespace {

int64_t Positive(const Config& config, const char* key, int64_t fallback) {
  Config node = config[key];
  if (!node.exists()) {
    if (fallback > 0) return fallback;
    throw InvalidArgument(config.where() + ": kv_paged needs '" + key + "' (a positive integer)");
  }
  int64_t v = node.as_int();
  if (v <= 0 || v > INT32_MAX) {
    throw InvalidArgument(node.where() + ": must be a positive integer below 2^31, got " +
                          std::to_string(v));
  }
  return v;
}

DLDataType ParseDType(const Config& config) {
  std::string name = config.get("dtype", "float32");
  if (name == "float32") return DLDataType{kDLFloat, 32, 1};
  if (name == "float16") return DLDataType{kDLFloat, 16, 1};
  if (name == "bfloat16") return DLDataType{kDLBfloat, 16, 1};
  throw InvalidArgument(config["dtype"].where() + ": dtype '" + name +
                        "' is not one of float32, float16, bfloat16");
}

// Request index's token ids for the step into *out (the host's input_tokens: host memory, 1-D,
// int32 or int64, one per token); false when the host gave none or an id does not fit 32 bits.
bool StepTokens(const StepDecl& step, uint32_t index, std::vector<int32_t>* out) {
  TensorView tokens = step.input_tokens(index);
  if (!tokens.valid() || tokens.numel() != step.num_tokens(index)) return false;
  const auto n = static_cast<size_t>(tokens.numel());
  out->resize(n);
  if (SameDType(tokens.dtype(), DTypeOf<int32_t>())) {
    if (n > 0) std::memcpy(out->data(), tokens.data<int32_t>(), n * sizeof(int32_t));
    return true;
  }
  if (!SameDType(tokens.dtype(), DTypeOf<int64_t>())) return false;
  const int64_t* v = tokens.data<int64_t>();
  for (size_t i = 0; i < n; ++i) {
    if (v[i] < INT32_MIN || v[i] > INT32_MAX) return false;
    (*out)[i] = static_cast<int32_t>(v[i]);
  }
  return true;
}

// num_pages, checked before anything is sized by it: every token position of the pool (the scratch
// page's too) fits the int32 slot and length tensors, and the pool's bytes fit 64 bits.
int32_t CheckedNumPages(const Config& config) {
  const int64_t pages = Positive(config, "num_pages", 0);
  const int64_t page_size = Positive(config, "page_size", 16);
  if ((pages + 1) * page_size > INT32_MAX) {
    throw InvalidArgument(config["num_pages"].where() + ": " + std::to_string(pages) +
                          " pages of " + std::to_string(page_size) +
                          " tokens hold more positions than int32 token indices reach (at most " +
                          std::to_string(INT32_MAX / page_size - 1) + " pages)");
  }
  uint64_t bytes = static_cast<uint64_t>(pages + 1) * static_cast<uint64_t>(page_size) * 2u;
  for (const char* key : {"layers", "kv_heads", "head_dim"}) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(Positive(config, key, 0)), &bytes))
      throw InvalidArgument(config.where() + ": the KV pool's size overflows 64 bits");
  }
  if (__builtin_mul_overflow(bytes, uint64_t{4}, &bytes))  // float32, the widest dtype
    throw InvalidArgument(config.where() + ": the KV pool's size overflows 64 bits");
  return static_cast<int32_t>(pages);
}

std::string Prefix(const std::vector<std::string>& labels, size_t l) {
  return l == 0 ? std::string() : labels[l] + ".";
}

}  // namespace

KvPaged::KvPaged(const mstar_create_args_t& args)
    : Resource(args),
      page_size_(static_cast<int32_t>(Positive(Config(args.host, args.config), "page_size", 16))),
      num_pages_(CheckedNumPages(Config(args.host, args.config))),
      cache_(num_pages_, page_size_),
      staging_(args.host, args.context) {
  Config c = config();
  layers_ = Positive(c, "layers", 0);
  kv_heads_ = Positive(c, "kv_heads", 0);
  head_dim_ = Positive(c, "head_dim", 0);
  dtype_ = ParseDType(c);
  salt_ = c.get("salt", "");
  prefix_cache_ = c.get("prefix_cache", true);
  // Only the leader of a group ships its moves; a single rank's log would grow unread.
  cache_.set_recording(c.get("resident_deltas", args.world_size > 1));
  Config labels = c["labels"];
  if (labels.exists()) {
    if (labels.kind() != MSTAR_CONFIG_ARRAY || labels.size() == 0) {
      throw InvalidArgument(labels.where() + ": labels must be a non-empty array of strings");
    }
    for (uint32_t i = 0; i < labels.size(); ++i) {
      std::string label = labels.at(i).as_string();
      if (label.empty() || std::count(labels_.begin(), labels_.end(), label) != 0) {
        throw InvalidArgument(labels.where() + ": label '" + label + "' is empty or repeated");
      }
      labels_.push_back(label);
    }
  } else {
    labels_ = {"main"};
  }
  cache_.set_num_labels(static_cast<uint32_t>(labels_.size()));
  chunk_bytes_ = static_cast<uint64_t>(page_size_) * static_cast<uint64_t>(kv_heads_ * head_dim_) *
                 (dtype_.bits / 8u);
  block_bytes_ = chunk_bytes_ * 2u * static_cast<uint64_t>(layers_);
  const int64_t capture_context = c.get("capture_context", int64_t{0});
  if (capture_context < 0 || capture_context > INT32_MAX)
    throw InvalidArgument(c["capture_context"].where() + ": must be a token count >= 0");
  capture_pages_ = static_cast<int32_t>((capture_context + page_size_ - 1) / page_size_);
  // Every captured row's block table is this wide; no sequence holds more than the cache.
  capture_pages_ = std::min(capture_pages_, num_pages_);
  // With capture, one more page than the cache manages: padding rows write there.
  pool_pages_ = num_pages_ + (capture_pages_ > 0 ? 1 : 0);
  pool_ = Alloc(dtype_, {pool_pages_, layers_, 2, page_size_, kv_heads_, head_dim_});
  nonce_ = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const bool host_pool = device().device_type == kDLCPU || device().device_type == kDLCUDAHost;
  block_device_ = host_pool ? DLDevice{kDLCPU, 0} : device();
  for (uint32_t t = 0; t < args.num_tiers; ++t) tier_reads_pool_.push_back(ReadTierReadsPool(t));
}

ResourceInfo KvPaged::Info() {
  uint32_t flags = MSTAR_RESOURCE_PUBLISHES;
  if (cache_.recording()) flags |= MSTAR_RESOURCE_RESIDENT_DELTA;
  if (args().num_tiers > 0) flags |= MSTAR_RESOURCE_EVICTABLE;
  return {flags, "pages"};
}

void KvPaged::AddRequest(const RequestInfo& request) {
  const mstar_request_info_t* raw = request.raw();
  std::string identity(reinterpret_cast<const char*>(args().checkpoint_identity),
                       args().checkpoint_identity_size);
  std::string tenant(reinterpret_cast<const char*>(raw->tenant_salt), raw->tenant_salt_size);
  Chain chain;
  for (const std::string& label : labels_)
    chain.roots.push_back(ChainRoot({identity, salt_, tenant, label}));
  chain.keys.resize(labels_.size());
  for (size_t l = 0; l < labels_.size(); ++l) cache_.AddSeq(Seq(request.id(), l));
  chains_[request.id()] = std::move(chain);
}

void KvPaged::RemoveRequest(mstar_request_id_t id) {
  auto pending = pending_.find(id);
  if (pending != pending_.end()) {
    RollBack(id, pending->second);
    pending_.erase(pending);
  }
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence* seq = cache_.Find(Seq(id, l));
    if (seq == nullptr) continue;
    DropTierBlocks(Seq(id, l));  // the blocks of its offloaded pages, if any
    cache_.RemoveSeq(Seq(id, l));
  }
  chains_.erase(id);
}

void KvPaged::RollBack(mstar_request_id_t id, const Pending& pending) {
  for (size_t l = 0; l < labels_.size(); ++l) cache_.Truncate(Seq(id, l), pending.old_pages[l]);
}

void KvPaged::RollBackAll() {
  for (const auto& [id, pending] : pending_) RollBack(id, pending);
  pending_.clear();
}

void KvPaged::Declare(const StepDecl& step) {
  (void)step;
  RollBackAll();  // a second declare replaces an undispatched step
}

void KvPaged::AbortStep(const StepDecl& step) {
  (void)step;
  RollBackAll();
}

bool KvPaged::MakeFree(int32_t n, const std::vector<int32_t>& keep) {
  const PagePool& pool = cache_.pool();
  std::vector<bool> kept(static_cast<size_t>(pool.num_pages()), false);
  int32_t kept_cached = 0;
  for (int32_t p : keep) {
    if (!pool.in_lru(p) || kept[static_cast<size_t>(p)]) continue;
    kept[static_cast<size_t>(p)] = true;
    ++kept_cached;
  }
  if (pool.available() - kept_cached < n) return false;
  for (int32_t p = pool.LruOldest(); pool.free_count() < n;) {
    const int32_t next = pool.LruNext(p);
    if (!kept[static_cast<size_t>(p)]) cache_.CacheEvict(p);
    p = next;
  }
  return true;
}

Admission KvPaged::Admit(const StepDecl& step, uint32_t index) {
  mstar_request_id_t id = step.id(index);
  auto chain_it = chains_.find(id);
  if (chain_it == chains_.end()) {
    throw FailedPrecondition("kv_paged: admit of request " + std::to_string(id) +
                             ", which was never added");
  }
  if (pending_.count(id) != 0) return Admission::Ready();
  if (IsOffloaded(id)) return Admission::NotReady(MSTAR_WAIT_RELOAD);
  const int64_t n = step.num_tokens(index);
  const PagePool& pool = cache_.pool();

  const Sequence& first = *cache_.Find(Seq(id, 0));
  Pending pending;
  pending.start = first.len;
  // The ids matter only to a chain that can still grow (a copy per admit otherwise wasted).
  if (prefix_cache_ && chain_it->second.anchored)
    pending.tokens_known = StepTokens(step, index, &pending.tokens);
  const std::vector<std::vector<int32_t>> hits = FindHits(id, chain_it->second, n, pending);

  int64_t total = 0, fresh = 0;
  std::vector<int64_t> fresh_per_label(labels_.size());
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence& seq = *cache_.Find(Seq(id, l));
    int64_t need = (seq.len + n + page_size_ - 1) / page_size_;
    total += need;
    int64_t have = static_cast<int64_t>(seq.pages.size() + hits[l].size());
    fresh_per_label[l] = std::max<int64_t>(0, need - have);
    fresh += fresh_per_label[l];
    pending.old_pages.push_back(static_cast<uint32_t>(seq.pages.size()));
    pending.new_len.push_back(seq.len + n);
  }
  if (total > num_pages_) {
    throw ResourceExhausted("kv_paged: request " + std::to_string(id) + " needs " +
                            std::to_string(total) + " pages of " + std::to_string(page_size_) +
                            " tokens for " + std::to_string(first.len + n) + " tokens over " +
                            std::to_string(labels_.size()) + " label(s); the pool has " +
                            std::to_string(num_pages_) + " pages");
  }
  int64_t revived = 0;
  for (const std::vector<int32_t>& label_hits : hits)
    for (int32_t p : label_hits) revived += pool.in_lru(p) ? 1 : 0;
  int64_t available = pool.available() - revived;
  if (fresh > available) {
    return Admission::NotReady(MSTAR_WAIT_CAPACITY, static_cast<uint64_t>(fresh - available));
  }
  // A freed page may still be the target of a reload's copy (device builds): let it land first.
  WaitStaging();
  // Every label's hits leave the LRU list before any fresh page is taken: TakePage evicts the
  // least recently used cached page, which may be a later label's hit. Once the hits are held,
  // exactly `available` pages remain to take, as counted above.
  for (size_t l = 0; l < labels_.size(); ++l)
    for (int32_t p : hits[l]) cache_.Append(Seq(id, l), p);
  for (size_t l = 0; l < labels_.size(); ++l)
    for (int64_t k = 0; k < fresh_per_label[l]; ++k) cache_.Append(Seq(id, l), cache_.TakePage());
  pending.cached = static_cast<uint32_t>(hits[0].size()) * static_cast<uint32_t>(page_size_);
  pending_[id] = std::move(pending);
  return Admission::Ready();
}

std::vector<std::vector<int32_t>> KvPaged::FindHits(mstar_request_id_t id, const Chain& chain,
                                                    int64_t n, const Pending& pending) {
  std::vector<std::vector<int32_t>> hits(labels_.size());
  // Only for a first step with its token ids, leaving the last token to compute.
  if (!prefix_cache_ || !chain.anchored || !pending.tokens_known || n <= 1 || chain.keyed() != 0 ||
      !chain.tokens.empty()) {
    return hits;
  }
  const int64_t known = std::min<int64_t>(n - 1, static_cast<int64_t>(pending.tokens.size()));
  size_t common = SIZE_MAX;
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence& seq = *cache_.Find(Seq(id, l));
    if (seq.len != 0 || !seq.pages.empty()) return std::vector<std::vector<int32_t>>(hits.size());
    PrefixKey parent = chain.roots[l];
    for (int64_t k = 0; (k + 1) * page_size_ <= known && hits[l].size() < common; ++k) {
      parent = hasher_.Next(parent, pending.tokens.data() + k * page_size_,
                            static_cast<size_t>(page_size_));
      int32_t page = cache_.Lookup(parent);
      if (page < 0) break;
      hits[l].push_back(page);
    }
    common = std::min(common, hits[l].size());
  }
  // Every label reports the same cached count, so the model skips the same tokens in each.
  for (std::vector<int32_t>& label_hits : hits) label_hits.resize(common);
  return hits;
}

// A view index tensor: in host memory, or, for a captured step of a device pool, on the pool's
// device, copied from values on stream (a captured graph reads device buffers only); the caller
// keeps values' buffer and synchronizes stream before it goes.
template <typename T>
Tensor KvPaged::ViewTensor(const std::vector<T>& values, std::vector<int64_t> shape, bool on_device,
                           mstar_stream_t* stream) const {
  if (!on_device || device().device_type == kDLCPU) return FromVector(values, std::move(shape));
  Tensor out = Alloc(DTypeOf<T>(), shape);
  if (!values.empty()) {
    Check(host(), host()->memory_copy(out.raw()->dl.data, device(), values.data(), kCpu,
                                      values.size() * sizeof(T), stream));
  }
  return out;
}

void KvPaged::Plan(const StepDecl& step, TensorMapRef view, mstar_stream_t* stream) {
  const uint32_t b = step.size();
  uint32_t padding = step.raw()->padded_rows;
  // Without capture support the view is the usual one (a node may capture while its model reads
  // this resource only eagerly): no padding rows, the batch's own width.
  if (capture_pages_ == 0) padding = 0;
  const uint32_t rows = b + padding;
  std::vector<const Pending*> pending(b);
  int64_t t = padding;  // a padding row has one token
  for (uint32_t i = 0; i < b; ++i) {
    auto it = pending_.find(step.id(i));
    if (it == pending_.end()) {
      throw FailedPrecondition("kv_paged: plan of request " + std::to_string(step.id(i)) +
                               ", which this step has not admitted");
    }
    pending[i] = &it->second;
    t += step.num_tokens(i);
  }
  // A captured step (a leased slot) gets the static width when every request fits it.
  const bool captured = step.slot() >= 0 && capture_pages_ > 0;
  // What the device copies read, kept (moving a vector keeps its buffer) until the stream has
  // run them: one synchronization after the last label, or before the buffers go when a throw
  // leaves the plan midway.
  struct CopySources {
    const mstar_host_api_t* host;
    mstar_stream_t* stream;
    bool unsynchronized;
    std::vector<std::vector<int32_t>> read32;
    std::vector<std::vector<int64_t>> read64;
    ~CopySources() {
      if (unsynchronized) host->status_release(host->stream_synchronize(stream));
    }
  } sources{host(), stream, captured && device().device_type != kDLCPU, {}, {}};
  const bool copies = sources.unsynchronized;
  for (size_t l = 0; l < labels_.size(); ++l) {
    size_t max_pages = 0;
    for (uint32_t i = 0; i < b; ++i)
      max_pages = std::max(max_pages, cache_.Find(Seq(step.id(i), l))->pages.size());
    if (padding > 0) max_pages = std::max<size_t>(max_pages, 1);
    if (captured && max_pages <= static_cast<size_t>(capture_pages_))
      max_pages = static_cast<size_t>(capture_pages_);
    std::vector<int32_t> table(rows * max_pages, -1), lens(rows), starts(rows + 1, 0),
        cached(rows, 0);
    std::vector<int64_t> slots, positions;
    slots.reserve(static_cast<size_t>(t));
    positions.reserve(static_cast<size_t>(t));
    for (uint32_t i = 0; i < b; ++i) {
      const Sequence& seq = *cache_.Find(Seq(step.id(i), l));
      std::copy(seq.pages.begin(), seq.pages.end(), table.begin() + i * max_pages);
      int64_t end = pending[i]->new_len[l];
      int64_t n = step.num_tokens(i);
      lens[i] = static_cast<int32_t>(end);
      starts[i + 1] = starts[i] + static_cast<int32_t>(n);
      cached[i] = static_cast<int32_t>(pending[i]->cached);
      for (int64_t pos = end - n; pos < end; ++pos) {
        int32_t page = seq.pages[static_cast<size_t>(pos / page_size_)];
        slots.push_back(static_cast<int64_t>(page) * page_size_ + pos % page_size_);
        positions.push_back(pos);
      }
    }
    // Padding rows: one token at position 0 of the scratch page, which no request owns.
    for (uint32_t i = b; i < rows; ++i) {
      table[i * max_pages] = num_pages_;
      lens[i] = 1;
      starts[i + 1] = starts[i] + 1;
      slots.push_back(static_cast<int64_t>(num_pages_) * page_size_);
      positions.push_back(0);
    }
    std::string p = Prefix(labels_, l);
    const auto r = static_cast<int64_t>(rows);
    Tensor pool = Tensor::Share(host(), pool_);
    pool.add_flags(MSTAR_TENSOR_FLAG_STABLE);  // the same pages every step: captured in place
    view.append((p + "kv_pool").c_str(), std::move(pool));
    view.append((p + "block_table").c_str(),
                ViewTensor(table, {r, static_cast<int64_t>(max_pages)}, captured, stream));
    view.append((p + "context_lens").c_str(), ViewTensor(lens, {r}, captured, stream));
    view.append((p + "query_start").c_str(), ViewTensor(starts, {r + 1}, captured, stream));
    view.append((p + "slot_mapping").c_str(), ViewTensor(slots, {t}, captured, stream));
    view.append((p + "positions").c_str(), ViewTensor(positions, {t}, captured, stream));
    view.append((p + "cached").c_str(), ViewTensor(cached, {r}, captured, stream));
    if (copies) {
      for (std::vector<int32_t>* v : {&table, &lens, &starts, &cached})
        sources.read32.push_back(std::move(*v));
      for (std::vector<int64_t>* v : {&slots, &positions}) sources.read64.push_back(std::move(*v));
    }
  }
  if (copies) {
    sources.unsynchronized = false;
    Check(host(), host()->stream_synchronize(stream));
  }
}

void KvPaged::Commit(const StepDecl& step, const uint8_t* succeeded, mstar_stream_t* stream) {
  (void)stream;
  for (uint32_t i = 0; i < step.size(); ++i) {
    mstar_request_id_t id = step.id(i);
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    Pending pending = std::move(it->second);
    pending_.erase(it);
    if (succeeded[i] == 0) {
      RollBack(id, pending);
      continue;
    }
    for (size_t l = 0; l < labels_.size(); ++l) cache_.SetLen(Seq(id, l), pending.new_len[l]);
    if (prefix_cache_ && pending.start == 0 && pending.tokens_known) {
      AddToCounter("prefix.prompt_tokens", static_cast<int64_t>(pending.tokens.size()));
      AddToCounter("prefix.hit_tokens", pending.cached);
    }
    ExtendChain(id, pending);
  }
  RollBackAll();  // requests of the declaration that the step left out
}

void KvPaged::ExtendChain(mstar_request_id_t id, const Pending& pending) {
  auto it = chains_.find(id);
  if (!prefix_cache_ || it == chains_.end() || !it->second.anchored) return;
  Chain& chain = it->second;
  const auto known_end =
      static_cast<int64_t>(chain.keyed()) * page_size_ + static_cast<int64_t>(chain.tokens.size());
  if (!pending.tokens_known || known_end != pending.start) {
    chain.anchored = false;
    chain.tokens.clear();
    return;
  }
  chain.tokens.insert(chain.tokens.end(), pending.tokens.begin(), pending.tokens.end());
  KeyFullPages(id);
}

void KvPaged::KeyFullPages(mstar_request_id_t id) {
  if (!prefix_cache_) return;
  auto it = chains_.find(id);
  if (it == chains_.end() || !it->second.anchored) return;
  Chain& chain = it->second;
  std::vector<const Sequence*> seqs(labels_.size());
  for (size_t l = 0; l < labels_.size(); ++l) {
    seqs[l] = cache_.Find(Seq(id, l));
    if (seqs[l] == nullptr) return;
  }
  const auto ps = static_cast<size_t>(page_size_);
  size_t consumed = 0;
  while (chain.tokens.size() - consumed >= ps) {
    const size_t index = chain.keyed();
    bool full = true;  // the page at index is full and resident in every label
    for (const Sequence* seq : seqs)
      full =
          full && static_cast<int64_t>((index + 1) * ps) <= seq->len && index < seq->pages.size();
    if (!full) break;
    for (size_t l = 0; l < labels_.size(); ++l) {
      const PrefixKey& parent = index == 0 ? chain.roots[l] : chain.keys[l].back();
      PrefixKey key = hasher_.Next(parent, chain.tokens.data() + consumed, ps);
      int32_t page = seqs[l]->pages[index];
      if (!cache_.pool().keyed(page) && cache_.Lookup(key) < 0) cache_.CacheInsert(page, key);
      chain.keys[l].push_back(key);
    }
    consumed += ps;
  }
  chain.tokens.erase(chain.tokens.begin(), chain.tokens.begin() + static_cast<ptrdiff_t>(consumed));
}

void KvPaged::RekeyPages(mstar_request_id_t id, size_t label, uint32_t from, uint32_t count) {
  auto it = chains_.find(id);
  const Sequence* seq = cache_.Find(Seq(id, label));
  if (!prefix_cache_ || it == chains_.end() || seq == nullptr) return;
  const std::vector<PrefixKey>& keys = it->second.keys[label];
  for (uint32_t i = from; i < from + count && i < keys.size() && i < seq->pages.size(); ++i) {
    int32_t page = seq->pages[i];
    if (!cache_.pool().keyed(page) && cache_.Lookup(keys[i]) < 0) cache_.CacheInsert(page, keys[i]);
  }
}

bool KvPaged::IsOffloaded(mstar_request_id_t id) {
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence* seq = cache_.Find(Seq(id, l));
    if (seq != nullptr && seq->offloaded != 0) return true;
  }
  return false;
}

double KvPaged::OffloadPriority(mstar_request_id_t id) {
  double pages = 0;
  for (size_t l = 0; l < labels_.size(); ++l) {
    const Sequence* seq = cache_.Find(Seq(id, l));
    if (seq != nullptr) pages += static_cast<double>(seq->pages.size());
  }
  return pages;
}

mstar_resource_stats_t KvPaged::Stats() {
  mstar_resource_stats_t s{};
  const PagePool& pool = cache_.pool();
  s.capacity_units = static_cast<uint64_t>(num_pages_);
  s.cached_units = static_cast<uint64_t>(pool.cached_count());
  s.used_units = static_cast<uint64_t>(num_pages_ - pool.free_count() - pool.cached_count());
  for (const auto& [id, seq] : cache_.sequences()) s.offloaded_units += seq.offloaded;
  return s;
}

}  // namespace mstar::kv
