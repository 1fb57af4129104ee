// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Instance: what every plugin object (submodule, resource, tier, model) gets from the host when
// it is created: the host services, its own context, its name, config and device.
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "mstar/sdk/config.hpp"
#include "mstar/sdk/error.hpp"
#include "mstar/sdk/tensor.hpp"

// Whether T overrides Base::Method: an inherited member's pointer has Base's type. The SDK leaves
// an optional slot empty unless the plugin's class overrides the hook.
#define MSTAR_SDK_OVERRIDES(T, Base, Method) \
  (!std::is_same_v<decltype(&T::Method), decltype(&Base::Method)>)

namespace mstar::sdk {

class Instance {
 public:
  explicit Instance(const mstar_create_args_t& args) : args_(args), name_(args.instance_name) {}
  virtual ~Instance() = default;
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const mstar_host_api_t* host() const { return args_.host; }
  mstar_host_context_t* context() const { return args_.context; }
  const std::string& name() const { return name_; }
  Config config() const { return Config(args_.host, args_.config); }
  DLDevice device() const { return args_.device; }
  const mstar_create_args_t& args() const { return args_; }

  // Logs through the runtime's logger, tagged with this instance.
  void Log(uint32_t level, const std::string& message) const {
    if (args_.host->log_enabled(args_.context, level) != 0) {
      args_.host->log(args_.context, level, nullptr, 0, message.c_str());
    }
  }

  // Adds delta to this instance's counter name (the host's metrics: "<plugin>/<instance>.name").
  void AddToCounter(const char* name, int64_t delta) const {
    args_.host->counter_add(args_.context, name, delta);
  }

  // A new tensor in host-accounted memory (on this instance's device unless given).
  Tensor Alloc(DLDataType dtype, const std::vector<int64_t>& shape) const {
    return Tensor::Alloc(args_.host, args_.context, args_.device, dtype, shape);
  }
  Tensor AllocOn(DLDevice device, DLDataType dtype, const std::vector<int64_t>& shape) const {
    return Tensor::Alloc(args_.host, args_.context, device, dtype, shape);
  }
  template <typename T>
  Tensor FromVector(const std::vector<T>& values, std::vector<int64_t> shape = {}) const {
    return Tensor::FromVector<T>(args_.host, args_.context, values, std::move(shape));
  }

 private:
  mstar_create_args_t args_;  // a copy; everything it points to lives until destroy
  std::string name_;
};

// The create and destroy slots every kind's table starts with: construct T from the create args,
// and delete it, each behind the exception barrier.
template <typename T>
struct Lifecycle {
  static T* Self(void* self) { return static_cast<T*>(self); }

  static mstar_status_t* Create(const mstar_create_args_t* args, void** out_self) {
    return Guard(args->host, [&] {
      auto object = std::make_unique<T>(*args);
      *out_self = static_cast<void*>(object.release());
    });
  }
  static void Destroy(void* self) {
    T* object = Self(self);
    const mstar_host_api_t* host = object->host();
    mstar_host_context_t* context = object->context();
    GuardVoid(host, context, "destroy", [&] { delete object; });
  }
};

}  // namespace mstar::sdk
