// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Model: the C++ base class for the optional `model` kind (mstar/model.h), a walk controller.
// EncodePrompt is required; FirstWalk, NextWalk and EncodeOutput are optional (the manifest's
// walks and transitions, and raw tensor bytes, are used when absent).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>

#include "mstar/sdk/bytes.hpp"
#include "mstar/sdk/instance.hpp"
#include "mstar/sdk/request.hpp"

namespace mstar::sdk {

struct WalkChoice {
  bool done = false;
  std::string walk;  // a walk of the manifest when not done

  static WalkChoice Done() { return {true, {}}; }
  static WalkChoice Walk(std::string name) { return {false, std::move(name)}; }
};

class Model : public Instance {
 public:
  using Instance::Instance;

  virtual void EncodePrompt(const RequestInfo& request, std::string_view prompt,
                            TensorMapRef out) = 0;
  virtual WalkChoice FirstWalk(const RequestInfo& request, std::string_view partition,
                               TensorMapRef inputs) {
    (void)request;
    (void)partition;
    (void)inputs;
    throw Unsupported("FirstWalk");
  }
  virtual WalkChoice NextWalk(const mstar_walk_state_t& state, TensorMapRef inputs) {
    (void)state;
    (void)inputs;
    throw Unsupported("NextWalk");
  }
  virtual void EncodeOutput(const RequestInfo& request, std::string_view edge,
                            std::string_view modality, const TensorView& tensor, BytesWriter& out) {
    (void)request;
    (void)edge;
    (void)modality;
    (void)tensor;
    (void)out;
    throw Unsupported("EncodeOutput");
  }

 private:
  template <typename T>
  friend struct ModelTable;
  // Walk names handed to the host stay valid until destroy.
  const char* Intern(const std::string& walk) { return walk_names_.insert(walk).first->c_str(); }
  std::set<std::string> walk_names_;
};

template <typename T>
struct ModelTable {
  static_assert(std::is_base_of_v<Model, T>, "T must derive from mstar::sdk::Model");
  static T* Self(void* self) { return Lifecycle<T>::Self(self); }

  static void WriteChoice(T* s, mstar_walk_choice_t* out, const WalkChoice& choice) {
    out->done = choice.done ? 1u : 0u;
    out->walk = choice.done ? nullptr : s->Intern(choice.walk);
  }

  static mstar_status_t* EncodePrompt(void* self, const mstar_request_info_t* request,
                                      const char* prompt, uint64_t size, mstar_tensor_map_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      s->EncodePrompt(RequestInfo(s->host(), request), std::string_view(prompt, size),
                      TensorMapRef(s->host(), out));
    });
  }
  static mstar_status_t* FirstWalk(void* self, const mstar_request_info_t* request,
                                   const char* partition, mstar_walk_choice_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      WalkChoice choice = s->FirstWalk(RequestInfo(s->host(), request), partition,
                                       TensorMapRef(s->host(), out->inputs));
      WriteChoice(s, out, choice);
    });
  }
  static mstar_status_t* NextWalk(void* self, const mstar_walk_state_t* state,
                                  mstar_walk_choice_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      WalkChoice choice = s->NextWalk(*state, TensorMapRef(s->host(), out->inputs));
      WriteChoice(s, out, choice);
    });
  }
  static mstar_status_t* EncodeOutput(void* self, const mstar_request_info_t* request,
                                      const char* edge, const char* modality,
                                      const mstar_tensor_t* tensor, mstar_bytes_t* out) {
    T* s = Self(self);
    return Guard(s->host(), [&] {
      BytesWriter writer(s->host(), out);
      s->EncodeOutput(RequestInfo(s->host(), request), edge, modality, TensorView(tensor), writer);
    });
  }

  static mstar_model_vtable_t Build() {
    mstar_model_vtable_t t{};
    t.struct_size = sizeof(t);
    t.struct_version = MSTAR_ABI_MINOR;
    t.create = &Lifecycle<T>::Create;
    t.destroy = &Lifecycle<T>::Destroy;
    t.encode_prompt = &EncodePrompt;
    if (MSTAR_SDK_OVERRIDES(T, Model, FirstWalk)) t.first_walk = &FirstWalk;
    if (MSTAR_SDK_OVERRIDES(T, Model, NextWalk)) t.next_walk = &NextWalk;
    if (MSTAR_SDK_OVERRIDES(T, Model, EncodeOutput)) t.encode_output = &EncodeOutput;
    return t;
  }
};

}  // namespace mstar::sdk
