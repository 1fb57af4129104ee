// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Rules for submodules: lifecycle, errors as statuses, batched equals per-request, the stop
// check, determinism, capture configurations, and releasing outputs from a foreign thread.
#include <algorithm>
#include <functional>
#include <optional>
#include <thread>

#include "host/memory_ledger.h"
#include "plugin/step_arrays.h"
#include "plugin/submodule_descriptors.h"
#include "rule_context.h"
#include "submodule_driver.h"

namespace mstar::conformance {
namespace {

mstar_submodule_info_t InfoOf(PluginInstance& instance) {
  mstar_submodule_info_t info{sizeof(info), MSTAR_ABI_MINOR, 0, 0, nullptr, nullptr};
  RequireOk(CallPlugin(instance, "info",
                       [&] { return instance.submodule()->info(instance.self(), &info); }),
            "info");
  RequireOk(CheckSubmoduleInfo(instance, info), "info");  // as the runtime checks it at load
  return info;
}

void CreateDestroy(const Subject& s) {
  for (int round = 0; round < 3; ++round) {
    const mstar_host_context* context = nullptr;
    {
      std::unique_ptr<PluginInstance> instance = s.Create("conformance" + std::to_string(round));
      InfoOf(*instance);
      context = instance->context();
    }
    // The host's own blocks are counted exactly (LeakSanitizer sees them as reachable). The
    // context outlives its instance while blocks name it, so the address is still its own.
    const uint64_t leaked = MemoryLedger::Global().AllocatedBy(context);
    std::string message = "an instance destroyed left ";
    message.append(std::to_string(leaked))
        .append(" bytes from memory_alloc unfreed (free every block in destroy)");
    Require(leaked == 0, message);
  }
}

void ErrorsAreStatuses(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  const mstar_submodule_vtable_t* t = instance->submodule();
  // A forward whose prepared inputs are missing: an error status with a message, nothing written.
  auto empty = NewTensorMap();
  auto outputs = NewTensorMap();
  mstar_request_info_t info{};
  info.struct_size = sizeof(info);
  info.struct_version = MSTAR_ABI_MINOR;
  info.request_id = 1;
  info.walk = "conformance";
  info.partition = "main";
  auto params = std::make_shared<ConfigTree>();
  info.params = params->root();
  StepArrays arrays;
  arrays.Add(&info, empty.get(), 0, outputs.get());
  mstar_step_t step = arrays.Step("conformance", "conformance", nullptr);
  mstar_status_t* raw = nullptr;
  NotePluginCall(*instance, "forward");  // called raw, to see an exception escape: named on a hang
  try {
    raw = t->forward(instance->self(), &step);
  } catch (const std::exception& e) {
    Fail(std::string("an exception escaped forward (") + e.what() +
         "): catch everything at the C boundary and return a status (the SDK's barrier does)");
  } catch (...) {
    Fail("an exception escaped forward: catch everything at the C boundary and return a status");
  }
  if (raw == nullptr) Skip("forward accepts a request without inputs; no failing call to check");
  const mstar_host_api_t* host = instance->host();
  uint32_t code = host->status_code(raw);
  std::string message = host->status_message(raw) != nullptr ? host->status_message(raw) : "";
  host->status_release(raw);
  Require(code != MSTAR_OK,
          "forward returned a status object with code OK: return NULL for success");
  Require(!message.empty(), "the error status has an empty message: say what was wrong");
  Require(outputs->entries().empty(),
          "a failing forward left " + std::to_string(outputs->entries().size()) +
              " output(s) behind: write outputs only once the call will succeed");
}

using Form = SubmoduleDriver::Form;

// Prepares and runs the settings' requests through a (in form fa, the hook named hook_a) and b
// (fb, hook_b), and fails the rule at the first request whose outputs differ beyond tolerance;
// differs(i, why) words that failure for request i + 1. With postprocess_a, a's outputs are
// postprocessed before the comparison (b's form does that work itself: a columnar step).
void RunAndCompare(SubmoduleDriver& a, Form fa, const char* hook_a, SubmoduleDriver& b, Form fb,
                   const char* hook_b, double tolerance,
                   const std::function<std::string(uint32_t, const std::string&)>& differs,
                   bool postprocess_a = false) {
  a.Prepare();
  b.Prepare();
  RequireOk(a.Run(fa), hook_a);
  if (postprocess_a) a.Postprocess();
  RequireOk(b.Run(fb), hook_b);
  for (uint32_t i = 0; i < a.size(); ++i) {
    std::string why;  // filled by SameMaps, so it is called before the message is built
    const bool same = SameMaps(*a.outputs(i), *b.outputs(i), &why, tolerance);
    Require(same, "request " + std::to_string(i + 1) + ": " + differs(i, why));
  }
}

void BatchedEqualsSingle(const Subject& s) {
  std::unique_ptr<PluginInstance> single = s.Create("single");
  if (single->submodule()->forward_batched == nullptr) Skip("no forward_batched");
  std::unique_ptr<PluginInstance> batched = s.Create("batched");
  SubmoduleDriver a(*single, s.settings, s.settings.requests);
  SubmoduleDriver b(*batched, s.settings, s.settings.requests);
  RunAndCompare(a, Form::kSingle, "forward", b, Form::kBatched, "forward_batched",
                s.settings.tolerance, [](uint32_t, const std::string& why) {
                  return "forward_batched differs from forward (" + why +
                         "): a request's outputs must not depend on the others in its batch";
                });
}

// What the engine gives a stop check for one request's outputs: the outputs named in
// stop_outputs and no others (as when any output is in device memory), host tensors shared and
// device tensors copied to host memory.
TensorMapPtr StopView(const std::vector<std::string>& stop_outputs,
                      const mstar_tensor_map& outputs) {
  TensorMapPtr view = NewTensorMap();
  RequireOk(AppendHostCopies(stop_outputs, outputs, view.get()),
            "copying the stop outputs to host memory for the stop check");
  return view;
}

// The names in info.stop_outputs, joined for messages.
std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "'" : ", '") + name + "'";
  return out.empty() ? "none" : out;
}

// check_stop_batched over every request's stop view must give the masks check_stop gave.
void CheckStopBatchedAgrees(PluginInstance& instance, const SubmoduleDriver& driver,
                            const std::vector<uint32_t>& ran,
                            const std::vector<TensorMapPtr>& views,
                            const std::vector<uint64_t>& masks) {
  const mstar_submodule_vtable_t* t = instance.submodule();
  std::vector<const mstar_request_info_t*> infos;
  std::vector<const mstar_tensor_map_t*> maps;
  for (size_t k = 0; k < ran.size(); ++k) {
    infos.push_back(&driver.info(ran[k]));
    maps.push_back(views[k].get());
  }
  std::vector<uint64_t> batched(ran.size(), 0);
  RequireOk(CallPlugin(instance, "check_stop_batched",
                       [&] {
                         return t->check_stop_batched(instance.self(),
                                                      static_cast<uint32_t>(ran.size()),
                                                      infos.data(), maps.data(), batched.data());
                       }),
            "check_stop_batched over " + std::to_string(ran.size()) + " requests' stop outputs");
  for (size_t k = 0; k < ran.size(); ++k) {
    Require(batched[k] == masks[k],
            "request " + std::to_string(ran[k] + 1) + ": check_stop_batched gives stop mask " +
                std::to_string(batched[k]) + ", check_stop " + std::to_string(masks[k]));
  }
}

// After a forward and postprocess, check_stop on each request's stop outputs (as the engine
// passes them), then check_stop_batched over all of them.
void StopCheck(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  const mstar_submodule_vtable_t* t = instance->submodule();
  if (t->check_stop == nullptr) Skip("no check_stop");
  const mstar_submodule_info_t info = InfoOf(*instance);
  const std::vector<std::string> names(info.stop_outputs,
                                       info.stop_outputs + info.num_stop_outputs);
  SubmoduleDriver driver(*instance, s.settings, s.settings.requests);
  driver.Prepare();
  RequireOk(driver.Run(Form::kSingle), "forward");
  driver.Postprocess();
  std::vector<uint32_t> ran;
  std::vector<TensorMapPtr> views;
  std::vector<uint64_t> masks;
  for (uint32_t i = 0; i < driver.size(); ++i) {
    if (driver.declined(i)) continue;
    ran.push_back(i);
    views.push_back(StopView(names, *driver.outputs(i)));
    uint64_t mask = 0;
    Status status = CallPlugin(*instance, "check_stop", [&] {
      return t->check_stop(instance->self(), &driver.info(i), views.back().get(), &mask);
    });
    Require(status.ok(), "request " + std::to_string(i + 1) + ": check_stop failed (" +
                             status.ToString() + ") given the outputs named in stop_outputs (" +
                             Joined(names) +
                             "), all the engine passes it: it must return OK and find every "
                             "output it reads there (list those in stop_outputs)");
    masks.push_back(mask);
  }
  if (!masks.empty() &&
      std::all_of(masks.begin(), masks.end(), [](uint64_t m) { return m == 0; })) {
    Note(
        "no request stopped (every stop mask 0): the stop checks were compared on masks of 0 "
        "only; configure the factory so that one stops");
  }
  if (t->check_stop_batched == nullptr || ran.size() < 2) return;  // the engine's condition
  CheckStopBatchedAgrees(*instance, driver, ran, views, masks);
}

// The columnar form against the per-request one: a columnar step writes what forward_batched and
// postprocess write together (the engine runs no postprocess after it), so the same outputs as
// both for every request; and the same stop masks from check_stop_columnar as from check_stop
// given the outputs the engine passes it.
void ColumnarEqualsPerRequest(const Subject& s) {
  std::unique_ptr<PluginInstance> maps = s.Create("per-request");
  if ((InfoOf(*maps).flags & MSTAR_SUBMODULE_COLUMNAR) == 0)
    Skip("the submodule does not declare MSTAR_SUBMODULE_COLUMNAR");
  Require(maps->submodule()->forward_batched != nullptr,
          "MSTAR_SUBMODULE_COLUMNAR is declared without a forward_batched to take columnar steps");
  std::unique_ptr<PluginInstance> columns = s.Create("columnar");
  SubmoduleDriver a(*maps, s.settings, s.settings.requests);
  SubmoduleDriver b(*columns, s.settings, s.settings.requests);
  RunAndCompare(
      a, Form::kBatched, "forward_batched", b, Form::kColumnar,
      "forward_batched with a columnar step", s.settings.tolerance,
      [](uint32_t, const std::string& why) {
        return "the columnar step differs from forward_batched then postprocess (" + why + ")";
      },
      /*postprocess_a=*/true);
  std::optional<std::vector<uint64_t>> masks = b.ColumnarStopMasks();
  const mstar_submodule_vtable_t* t = maps->submodule();
  if (!masks || t->check_stop == nullptr) return;
  const mstar_submodule_info_t info = InfoOf(*maps);
  const std::vector<std::string> names(info.stop_outputs,
                                       info.stop_outputs + info.num_stop_outputs);
  for (uint32_t k = 0, i = 0; i < a.size(); ++i) {
    if (a.declined(i)) continue;
    uint64_t mask = 0;
    const mstar_request_info_t& request = a.info(i);
    TensorMapPtr view = StopView(names, *a.outputs(i));
    RequireOk(CallPlugin(*maps, "check_stop",
                         [&] { return t->check_stop(maps->self(), &request, view.get(), &mask); }),
              "check_stop");
    Require((*masks)[k] == mask,
            "request " + std::to_string(i + 1) + ": check_stop_columnar gives stop mask " +
                std::to_string((*masks)[k]) + ", check_stop gives " + std::to_string(mask));
    ++k;
  }
}

void Deterministic(const Subject& s) {
  std::unique_ptr<PluginInstance> first = s.Create("first");
  if ((InfoOf(*first).flags & MSTAR_SUBMODULE_DETERMINISTIC) == 0)
    Skip("the submodule does not declare MSTAR_SUBMODULE_DETERMINISTIC");
  std::unique_ptr<PluginInstance> second = s.Create("second");
  SubmoduleDriver a(*first, s.settings, s.settings.requests);
  SubmoduleDriver b(*second, s.settings, s.settings.requests);
  RunAndCompare(a, Form::kSingle, "forward", b, Form::kSingle, "forward", 0,
                [](uint32_t, const std::string& why) {
                  return "two instances gave different outputs for the same inputs and seed (" +
                         why + "), yet MSTAR_SUBMODULE_DETERMINISTIC is declared";
                });
}

void CaptureConfigsSane(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  const mstar_submodule_vtable_t* t = instance->submodule();
  if (t->capture_configs == nullptr) Skip("no capture configurations");
  // Read (and its arrays checked) as the runtime reads them when a model loads.
  Result<std::vector<mstar_capture_config_t>> configs = ReadCaptureConfigs(*instance);
  RequireOk(configs.status(), "capture_configs");
  for (uint32_t c = 0; c < configs.value().size(); ++c) {
    const mstar_capture_config_t& config = configs.value()[c];
    std::string where = "capture config " + std::to_string(c);
    Require(config.capture_walk != nullptr && config.capture_walk[0] != '\0',
            where + " has no capture_walk");
    Require(config.num_buckets > 0 && config.buckets != nullptr, where + " has no buckets");
    for (uint32_t b = 0; b < config.num_buckets; ++b) {
      const mstar_capture_bucket_t& bucket = config.buckets[b];
      // A PACKED bucket's batch_size 0 means any batch size; its tokens must be counted.
      if ((config.flags & MSTAR_CAPTURE_PACKED) != 0) {
        Require(bucket.num_tokens > 0,
                where + ": packed bucket " + std::to_string(b) + " has num_tokens 0");
      } else {
        Require(bucket.batch_size > 0,
                where + ": bucket " + std::to_string(b) + " has batch_size 0");
      }
      if (b > 0) {
        Require(bucket.batch_size > config.buckets[b - 1].batch_size ||
                    bucket.num_tokens > config.buckets[b - 1].num_tokens,
                where + ": buckets must be in ascending order (bucket " + std::to_string(b) + ")");
      }
    }
    Require(config.region == nullptr || t->run_region != nullptr,
            where + " names region '" + std::string(config.region ? config.region : "") +
                "' but the submodule has no run_region");
  }
}

void ForeignThreadRelease(const Subject& s) {
  std::unique_ptr<PluginInstance> instance = s.Create();
  SubmoduleDriver driver(*instance, s.settings, s.settings.requests);
  driver.Prepare();
  RequireOk(driver.Run(Form::kSingle), "forward");
  std::vector<TensorMapPtr> outputs;
  for (uint32_t i = 0; i < driver.size(); ++i) outputs.push_back(std::move(driver.outputs(i)));
  // The host releases outputs on its finisher thread, while the instance keeps working.
  std::thread releaser([&] { outputs.clear(); });
  Status second;
  {
    SubmoduleDriver again(*instance, s.settings, s.settings.requests);
    again.Prepare();
    second = again.Run(Form::kSingle);
  }
  releaser.join();
  RequireOk(second, "forward while outputs were released on another thread");
}

}  // namespace

std::vector<Rule> SubmoduleRules() {
  return {
      {{"submodule.create-destroy", "submodule",
        "Instances are created and destroyed repeatedly without leaks: no memory_alloc block is "
        "left, nor memory LeakSanitizer finds in the sanitizer build"},
       CreateDestroy},
      {{"submodule.errors-are-statuses", "submodule",
        "A failing forward (a request without inputs) returns an error status with a message, "
        "writes no outputs and lets no exception escape"},
       ErrorsAreStatuses},
      {{"submodule.batched-equals-single", "submodule",
        "forward_batched gives each request exactly what forward gives it alone"},
       BatchedEqualsSingle},
      {{"submodule.check-stop", "submodule",
        "After a forward and postprocess, check_stop succeeds given only the outputs named in "
        "stop_outputs (as the engine passes them), and check_stop_batched gives each request the "
        "mask check_stop gives it"},
       StopCheck},
      {{"submodule.columnar-equals-per-request", "submodule",
        "With MSTAR_SUBMODULE_COLUMNAR, a columnar step gives each request exactly what the "
        "per-request form gives it, its row offsets add up, and prepare_inputs_columnar and "
        "check_stop_columnar agree with prepare_inputs and check_stop"},
       ColumnarEqualsPerRequest},
      {{"submodule.deterministic", "submodule",
        "With MSTAR_SUBMODULE_DETERMINISTIC, the same inputs and seed give the same outputs"},
       Deterministic},
      {{"submodule.capture-configs", "submodule",
        "Capture configurations name their walk, have ascending non-empty buckets, and regions "
        "exist"},
       CaptureConfigsSane},
      {{"submodule.foreign-thread-release", "submodule",
        "Outputs may be released on another thread while the instance keeps running (checked by "
        "ThreadSanitizer in the tsan build)"},
       ForeignThreadRelease},
  };
}

}  // namespace mstar::conformance
