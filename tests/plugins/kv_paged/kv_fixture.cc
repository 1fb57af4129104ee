// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "kv_fixture.h"

#include <cstring>

#include "config/toml_reader.h"
#include "host/host_api.h"
#include "plugin/step_arrays.h"

namespace mstar::kvtest {

namespace {

std::shared_ptr<const ConfigTree> Tree(const std::string& text, const std::string& path) {
  Diagnostics d;
  auto table = ParseTomlText(text, path, &d);
  EXPECT_TRUE(table.has_value()) << JoinDiagnostics(d);
  return std::make_shared<ConfigTree>(std::move(*table), path, "config");
}

}  // namespace

FakeRequest::FakeRequest(mstar_request_id_t id, const std::string& params_toml,
                         const std::string& tenant_salt)
    : params(Tree(params_toml, "params.toml")), salt(tenant_salt) {
  info.struct_size = sizeof(info);
  info.struct_version = MSTAR_ABI_MINOR;
  info.request_id = id;
  info.walk = "decode";
  info.partition = "default";
  info.params = params->root();
  if (!salt.empty()) {
    info.tenant_salt = reinterpret_cast<const uint8_t*>(salt.data());
    info.tenant_salt_size = salt.size();
  }
}

FakeRequest::FakeRequest(mstar_request_id_t id, Tokens token_ids, const std::string& tenant_salt)
    : FakeRequest(id, "", tenant_salt) {
  tokens = std::move(token_ids);
}

namespace {

// The other slots forward to the real tier with its own instance pointer.
const mstar_tier_vtable_t* RealTable(void* self) {
  return static_cast<FaultyTier*>(self)->real->tier();
}
void* RealSelf(void* self) {
  return static_cast<FaultyTier*>(self)->real->self();
}
mstar_status_t* ForwardInfo(void* self, mstar_tier_info_t* out) {
  return RealTable(self)->info(RealSelf(self), out);
}
mstar_status_t* ForwardPoll(void* self, mstar_tier_batch_t* batch, uint32_t* done) {
  return RealTable(self)->poll(RealSelf(self), batch, done);
}
mstar_status_t* ForwardWait(void* self, mstar_tier_batch_t* batch, uint64_t timeout_ns) {
  return RealTable(self)->wait(RealSelf(self), batch, timeout_ns);
}
void ForwardRelease(void* self, mstar_tier_batch_t* batch) {
  RealTable(self)->release(RealSelf(self), batch);
}

}  // namespace

FaultyTier::FaultyTier(PluginInstance* real_tier) : real(real_tier) {
  vtable = *real->tier();
  vtable.submit = &FaultyTier::Submit;
  vtable.info = &ForwardInfo;
  vtable.poll = &ForwardPoll;
  vtable.wait = &ForwardWait;
  vtable.release = &ForwardRelease;
  handle.name = "faulty";
  handle.vtable = &vtable;
  handle.self = this;
}

mstar_status_t* FaultyTier::Submit(void* self, mstar_tier_op_t* ops, uint32_t count,
                                   mstar_stream_t* stream, mstar_tier_batch_t** out_batch) {
  auto* f = static_cast<FaultyTier*>(self);
  if (f->mode == kSubmitFails && count > 0 && ops[0].kind == MSTAR_TIER_OP_GET)
    return MakeAbiStatus(IoError("faulty tier: the batch of GETs failed"));
  if (f->fail_put_batches && count > 0 && ops[0].kind == MSTAR_TIER_OP_PUT)
    return MakeAbiStatus(IoError("faulty tier: the batch of PUTs failed"));
  // A refused PUT or a failing REMOVE reaches the real tier as a CONTAINS, which changes
  // nothing there; its kind and result are set back after the submit.
  std::vector<uint32_t> faked(count, MSTAR_OK);
  for (uint32_t i = 0; i < count; ++i) {
    if (ops[i].kind == MSTAR_TIER_OP_PUT) f->put_data.push_back(ops[i].data);
    if (ops[i].kind == MSTAR_TIER_OP_GET) f->get_data.push_back(ops[i].data);
    if (ops[i].kind == MSTAR_TIER_OP_PUT && f->refuse_puts) {
      if (f->healthy_puts > 0) {
        --f->healthy_puts;
      } else if (f->refusals > 0) {
        --f->refusals;
        faked[i] = MSTAR_ERR_RESOURCE_EXHAUSTED;
      }
    }
    if (ops[i].kind == MSTAR_TIER_OP_REMOVE && f->remove_result != MSTAR_OK)
      faked[i] = f->remove_result;
  }
  std::vector<uint32_t> kinds(count);
  for (uint32_t i = 0; i < count; ++i) {
    kinds[i] = ops[i].kind;
    if (faked[i] != MSTAR_OK) ops[i].kind = MSTAR_TIER_OP_CONTAINS;
  }
  mstar_status_t* status = f->real->tier()->submit(f->real->self(), ops, count, stream, out_batch);
  // kit_memory and tier_host complete in submit; a lost block shows in the op's result.
  for (uint32_t i = 0; i < count; ++i) {
    ops[i].kind = kinds[i];
    if (status != nullptr) continue;
    if (faked[i] != MSTAR_OK) ops[i].result = faked[i];
    if (ops[i].kind != MSTAR_TIER_OP_GET || f->mode == kHealthy) continue;
    if (f->healthy_gets > 0) {
      --f->healthy_gets;
      continue;
    }
    ops[i].result = f->mode == kDataLoss ? MSTAR_ERR_DATA_LOSS : MSTAR_ERR_NOT_FOUND;
  }
  return status;
}

PluginInstance* KvTest::MakeKv(const std::string& config, std::vector<mstar_tier_handle_t*> tiers,
                               const std::string& checkpoint, DLDevice device) {
  Result<FactoryRef> factory = registry_->Find(MSTAR_KIND_RESOURCE, "kv_paged");
  EXPECT_TRUE(factory.ok()) << factory.status().ToString();
  InstanceOptions options;
  options.name = "kv";
  options.config = Tree(config, "kv.toml");
  options.tiers = std::move(tiers);
  options.device = device;
  options.checkpoint_identity.assign(checkpoint.begin(), checkpoint.end());
  auto instance = PluginInstance::Create(factory.value(), options);
  EXPECT_TRUE(instance.ok()) << instance.status().ToString();
  if (!instance.ok()) return nullptr;
  kvs_.push_back(std::move(instance.value()));
  return kvs_.back().get();
}

mstar_tier_handle_t* KvTest::MakeTier(const std::string& plugin, const std::string& config) {
  Result<FactoryRef> factory = registry_->Find(MSTAR_KIND_TIER, plugin);
  EXPECT_TRUE(factory.ok()) << factory.status().ToString();
  InstanceOptions options;
  options.name = plugin;
  options.config = Tree(config, plugin + ".toml");
  auto instance = PluginInstance::Create(factory.value(), options);
  EXPECT_TRUE(instance.ok()) << instance.status().ToString();
  tiers_.push_back(std::move(instance.value()));
  auto handle = std::make_unique<mstar_tier_handle_t>();
  handle->name = tiers_.back()->name().c_str();
  handle->vtable = tiers_.back()->tier();
  handle->self = tiers_.back()->self();
  handles_.push_back(std::move(handle));
  return handles_.back().get();
}

FaultyTier* KvTest::MakeFaultyTier(const std::string& plugin) {
  MakeTier(plugin);
  faulty_.push_back(std::make_unique<FaultyTier>(tiers_.back().get()));
  return faulty_.back().get();
}

Status KvTest::Add(PluginInstance* kv, FakeRequest& r) {
  return TakeStatus(T(kv)->add_request(kv->self(), &r.info));
}

uint64_t KvTest::TierUsed(mstar_tier_handle_t* tier) {
  mstar_tier_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  EXPECT_TRUE(TakeStatus(tier->vtable->info(tier->self, &info)).ok());
  return info.used_bytes;
}

std::vector<uint32_t> KvTest::Step(PluginInstance* kv, const std::vector<FakeRequest*>& requests,
                                   const std::vector<uint32_t>& tokens,
                                   const std::vector<uint8_t>& succeeded, std::string* error,
                                   std::vector<uint64_t>* short_by, bool abort_instead) {
  StepArrays arrays;
  for (size_t i = 0; i < requests.size(); ++i)
    arrays.Add(&requests[i]->info, nullptr, tokens.at(i), nullptr);
  mstar_step_decl_t decl = arrays.Decl("lm", "decode");
  // Each request's next token ids, as the host passes them: borrowed int32 host tensors.
  std::vector<mstar_tensor_t> views(requests.size());
  std::vector<int64_t> lengths(requests.size());
  std::vector<int64_t> unit_strides(requests.size(), 1);
  std::vector<const mstar_tensor_t*> input_tokens(requests.size(), nullptr);
  for (size_t i = 0; i < requests.size(); ++i) {
    const FakeRequest& r = *requests[i];
    if (r.fed + tokens[i] > r.tokens.size()) continue;
    lengths[i] = tokens[i];
    mstar_tensor_t& v = views[i];
    v.struct_size = sizeof(v);
    v.struct_version = MSTAR_TENSOR_VERSION;
    v.dl.data = const_cast<int32_t*>(r.tokens.data() + r.fed);
    v.dl.device = DLDevice{kDLCPU, 0};
    v.dl.ndim = 1;
    v.dl.dtype = DLDataType{kDLInt, 32, 1};
    v.dl.shape = &lengths[i];
    v.dl.strides = &unit_strides[i];
    input_tokens[i] = &v;
  }
  decl.input_tokens = input_tokens.data();
  const mstar_resource_vtable_t* t = T(kv);
  EXPECT_TRUE(TakeStatus(t->declare(kv->self(), &decl)).ok());
  std::vector<uint32_t> outcomes;
  bool ready = true;
  for (uint32_t i = 0; i < decl.num_requests; ++i) {
    mstar_admit_t admit{sizeof(admit), MSTAR_ABI_MINOR, 99, 0, 0};
    Status s = TakeStatus(t->admit(kv->self(), &decl, i, &admit));
    if (!s.ok()) {
      if (error != nullptr) *error = s.message();
      admit.outcome = MSTAR_ADMIT_UNSERVABLE;
    }
    outcomes.push_back(admit.outcome);
    if (short_by != nullptr) short_by->push_back(admit.units_short);
    ready = ready && admit.outcome == MSTAR_ADMIT_READY;
  }
  if (!ready || abort_instead) {
    t->abort_step(kv->self(), &decl);
    return outcomes;
  }
  last_view_ = NewTensorMap();
  EXPECT_TRUE(TakeStatus(t->plan(kv->self(), &decl, last_view_.get(), nullptr)).ok());
  std::vector<uint8_t> ok = succeeded;
  if (ok.empty()) ok.assign(decl.num_requests, 1);
  EXPECT_TRUE(TakeStatus(t->commit(kv->self(), &decl, ok.data(), nullptr)).ok());
  for (size_t i = 0; i < requests.size(); ++i)
    if (ok[i] != 0 && input_tokens[i] != nullptr) requests[i]->fed += tokens[i];
  return outcomes;
}

Held KvTest::Probe(PluginInstance* kv, FakeRequest& r) {
  TensorMapPtr keep = std::move(last_view_);
  Held held;
  std::vector<uint32_t> outcome = Step(kv, {&r}, {0}, {0});
  EXPECT_EQ(outcome.at(0), MSTAR_ADMIT_READY);
  if (outcome.at(0) == MSTAR_ADMIT_READY) {
    held.pages = I32(*last_view_, "block_table");
    while (!held.pages.empty() && held.pages.back() < 0) held.pages.pop_back();
    held.len = I32(*last_view_, "context_lens").at(0);
  }
  last_view_ = std::move(keep);
  return held;
}

mstar_resource_stats_t KvTest::Stats(PluginInstance* kv) {
  mstar_resource_stats_t s{sizeof(s), MSTAR_ABI_MINOR, 0, 0, 0, 0};
  EXPECT_TRUE(TakeStatus(T(kv)->stats(kv->self(), &s)).ok());
  return s;
}

const mstar_tensor_t* KvTest::Get(const mstar_tensor_map& view, const std::string& name) {
  const mstar_tensor_map::Entry* e = view.Find(name);
  EXPECT_NE(e, nullptr) << "view lacks " << name;
  return e == nullptr || e->tensors.empty() ? nullptr : e->tensors.front();
}

std::vector<int32_t> KvTest::I32(const mstar_tensor_map& view, const std::string& name) {
  const mstar_tensor_t* t = Get(view, name);
  if (t == nullptr) return {};
  EXPECT_EQ(t->dl.dtype.code, kDLInt);
  EXPECT_EQ(t->dl.dtype.bits, 32);
  const auto* p = static_cast<const int32_t*>(t->dl.data);
  return std::vector<int32_t>(p, p + TensorNumElements(t->dl));
}

std::vector<int64_t> KvTest::I64(const mstar_tensor_map& view, const std::string& name) {
  const mstar_tensor_t* t = Get(view, name);
  if (t == nullptr) return {};
  EXPECT_EQ(t->dl.dtype.code, kDLInt);
  EXPECT_EQ(t->dl.dtype.bits, 64);
  const auto* p = static_cast<const int64_t*>(t->dl.data);
  return std::vector<int64_t>(p, p + TensorNumElements(t->dl));
}

}  // namespace mstar::kvtest
