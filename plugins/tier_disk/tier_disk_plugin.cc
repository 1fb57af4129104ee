// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The tier_disk plugin: tier `tier_disk`, an offload tier storing one file per block under a
// configured directory (DiskStore), bounded by `capacity_bytes` with LRU eviction, reused across
// restarts under the same checkpoint identity. See README.md for the config keys.
//
// Completion is asynchronous: Submit queues the batch for the instance's worker thread, which runs
// the ops in submission order (batch after batch) and then marks the batch done. Consecutive PUTs
// of a batch are written together and then made durable one by one (see README.md); consecutive
// GETs are shared between the worker and a thread waiting for the batch without a timeout, each
// reading and checking whole blocks (disk_batch.h); with nobody waiting the worker runs them all.
// Submit refuses a batch whose GETs write overlapping memory (INVALID_ARGUMENT, nothing runs). Each op's
// result is MSTAR_OK or: NOT_FOUND (absent key), INVALID_ARGUMENT (unknown kind, NULL data, GET size
// different from the stored size, device memory), RESOURCE_EXHAUSTED (block larger than the
// capacity, disk full, out of memory), IO (a file-system call failed), DATA_LOSS (the block file
// failed its checks; it has been removed), INTERNAL (anything else an op threw: no exception leaves
// the worker or a waiting thread's GET). Failures other than NOT_FOUND are logged with the file
// and call.
//
// Threading: the host serializes calls on an instance; the worker runs every op, except the GETs
// a waiting thread takes from an open run of GETs (nothing else runs meanwhile). A batch's state
// is shared between its handle and the worker, so releasing a batch can never race the worker's
// final notification. Destroy finishes every queued batch, joins the worker, then removes the
// files when `cleanup` is on.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "disk_batch.h"
#include "disk_store.h"
#include "file_ops.h"
#include "mstar/sdk.hpp"

namespace {

using namespace mstar::sdk;
using mstar::tier_disk::DiskBatchState;
using mstar::tier_disk::DiskStore;
using mstar::tier_disk::DiskStoreOptions;
using mstar::tier_disk::FaultPlan;
using mstar::tier_disk::FaultyFileOps;
using mstar::tier_disk::FileOps;
using mstar::tier_disk::Outcome;

class DiskBatch final : public TierBatch {
 public:
  explicit DiskBatch(std::shared_ptr<DiskBatchState> s) : state(std::move(s)) {}
  std::shared_ptr<DiskBatchState> state;
};

bool HostAddressable(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost;
}

uint64_t NonNegative(const Config& config, const char* key, int64_t fallback) {
  int64_t value = config.get(key, fallback);
  if (value < 0) {
    throw InvalidArgument(config[key].where() + ": " + key + " must be >= 0, got " +
                          std::to_string(value));
  }
  return static_cast<uint64_t>(value);
}

// The [faults] table, or nullopt when absent.
std::optional<FaultPlan> ReadFaults(const Config& config) {
  Config faults = config["faults"];
  if (!faults.exists()) return std::nullopt;
  FaultPlan plan;
  plan.truncate_on_write = faults.get("truncate_on_write", false);
  plan.op = faults.get("fail_op", plan.truncate_on_write ? "write" : "");
  if (!mstar::tier_disk::IsFaultableOp(plan.op)) {
    throw InvalidArgument(faults.where() + ": fail_op must be one of open, write, read, fsync, " +
                          "close, rename, unlink, mkdir, rmdir, list, stat, statvfs, any; got '" +
                          plan.op + "'");
  }
  if (plan.truncate_on_write && plan.op != "write") {
    throw InvalidArgument(faults.where() + ": truncate_on_write needs fail_op = \"write\"");
  }
  plan.at_startup = faults.get("at_startup", false);
  plan.fail_after = NonNegative(faults, "fail_after", 0);
  plan.fail_count = NonNegative(faults, "fail_count", 1);
  int64_t error = faults.get("errno", int64_t{EIO});
  if (error <= 0 || error > 4095) {
    throw InvalidArgument(faults.where() + ": errno must be a positive errno value, got " +
                          std::to_string(error));
  }
  plan.error = static_cast<int>(error);
  return plan;
}

class TierDisk final : public Tier {
 public:
  explicit TierDisk(const mstar_create_args_t& args) : Tier(args) {
    Config config = this->config();
    DiskStoreOptions options;
    options.directory = config.require("directory").as_string();
    if (options.directory.empty()) {
      throw InvalidArgument(config["directory"].where() + ": directory must not be empty");
    }
    if (options.directory[0] != '/' && args.base_dir != nullptr && args.base_dir[0] != '\0') {
      options.directory = std::string(args.base_dir) + "/" + options.directory;
    }
    options.capacity_bytes = NonNegative(config, "capacity_bytes", 0);
    if (args.checkpoint_identity != nullptr) {
      options.identity.assign(args.checkpoint_identity,
                              args.checkpoint_identity + args.checkpoint_identity_size);
    }
    const bool persistent = config.get("persistent", false);
    cleanup_ = config.get("cleanup", !persistent);
    // Blocks of a tier that removes its files need not survive a crash: skip the directory fsync.
    options.sync_directory = !cleanup_;

    std::unique_ptr<FileOps> ops = mstar::tier_disk::MakePosixFileOps();
    FaultyFileOps* faulty = nullptr;
    bool faults_at_startup = false;
    if (std::optional<FaultPlan> plan = ReadFaults(config)) {
      faults_at_startup = plan->at_startup;
      auto wrapped = std::make_unique<FaultyFileOps>(std::move(ops), *plan);
      faulty = wrapped.get();
      ops = std::move(wrapped);
      Log(MSTAR_LOG_WARN, "fault injection on: operation '" + plan->op + "' fails after " +
                              std::to_string(plan->fail_after) + " calls");
    }
    store_ = std::make_unique<DiskStore>(
        std::move(ops), std::move(options),
        [this](uint32_t level, const std::string& message) { Log(level, message); });
    if (faulty != nullptr && faults_at_startup) faulty->Arm();
    Outcome opened = store_->Open();
    if (!opened.ok()) throw Error(opened.code, opened.message);
    if (faulty != nullptr) faulty->Arm();
    worker_ = std::thread([this] { WorkerLoop(); });
  }

  ~TierDisk() override {
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    worker_.join();
    if (cleanup_) store_->RemoveAll();
  }

  mstar_tier_info_t Info() override {
    mstar_tier_info_t info{};
    info.capacity_bytes = store_->options().capacity_bytes;
    info.used_bytes = store_->used_bytes();
    // Blocks survive a restart only when kept and named by a checkpoint identity the directory
    // records (an anonymous store's blocks are removed at the next start, and so are all where
    // files of another identity stayed).
    info.persistent =
        !cleanup_ && !store_->options().identity.empty() && store_->records_identity() ? 1 : 0;
    info.device_access = 0;
    return info;
  }

  std::unique_ptr<TierBatch> Submit(mstar_tier_op_t* ops, uint32_t count,
                                    mstar_stream_t* stream) override {
    (void)stream;
    if (count > 0 && ops == nullptr) throw InvalidArgument("tier_disk: submit with NULL ops");
    CheckGetsDoNotOverlap(ops, count);
    // Everything that can fail comes before the batch is queued: once the worker has it, Submit
    // returns it.
    auto batch = std::make_unique<DiskBatch>(std::make_shared<DiskBatchState>(ops, count));
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      queue_.push_back(batch->state);
    }
    queue_cv_.notify_one();
    return batch;
  }

  // The GETs of a batch may run at once (a waiting thread beside the worker): two writing the same
  // memory would each find the other's bytes, fail their checks and remove intact blocks. Such a
  // batch is refused before anything runs.
  static void CheckGetsDoNotOverlap(const mstar_tier_op_t* ops, uint32_t count) {
    std::vector<uint32_t> gets;
    for (uint32_t i = 0; i < count; ++i)
      if (ops[i].kind == MSTAR_TIER_OP_GET && ops[i].size != 0 && ops[i].data != nullptr)
        gets.push_back(i);
    auto begin = [&](uint32_t i) { return reinterpret_cast<uintptr_t>(ops[i].data); };
    std::sort(gets.begin(), gets.end(),
              [&](uint32_t a, uint32_t b) { return begin(a) < begin(b); });
    for (size_t k = 1; k < gets.size(); ++k) {
      const uint32_t before = gets[k - 1], after = gets[k];
      if (begin(after) - begin(before) < ops[before].size) {
        throw InvalidArgument("tier_disk: GETs " + std::to_string(std::min(before, after)) +
                              " and " + std::to_string(std::max(before, after)) +
                              " of the batch write overlapping memory");
      }
    }
  }

  bool Poll(TierBatch& batch) override { return static_cast<DiskBatch&>(batch).state->done(); }

  // Waits, running GETs of the batch meanwhile.
  void Wait(TierBatch& batch, uint64_t timeout_ns) override {
    DiskBatchState& state = *static_cast<DiskBatch&>(batch).state;
    std::optional<DiskBatchState::Clock::time_point> deadline;
    if (timeout_ns != UINT64_MAX) {
      // Clamp so that the deadline cannot overflow the clock's representation.
      deadline = DiskBatchState::Clock::now() +
                 std::chrono::nanoseconds(
                     static_cast<int64_t>(std::min<uint64_t>(timeout_ns, uint64_t{1} << 62)));
    }
    if (!state.WaitHelping(deadline, run_get_)) {
      throw Error(MSTAR_ERR_UNAVAILABLE,
                  "tier_disk: batch not complete after " + std::to_string(timeout_ns) + " ns");
    }
  }

 private:
  void WorkerLoop() {
    for (;;) {
      std::shared_ptr<DiskBatchState> state;
      {
        std::unique_lock<std::mutex> lock(queue_mutex_);
        queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and every queued batch has run
        state = std::move(queue_.front());
        queue_.pop_front();
      }
      RunBatch(*state);
      state->MarkDone();
    }
  }

  // Runs the ops in order; a run of consecutive PUTs is written first and then made durable
  // together (DiskStore::StagePut, CommitStaged); a run of consecutive GETs is read with its
  // payload checks handed off, and every check of the run finishes before the next op.
  // Never throws (it runs on the worker thread): every op gets a result.
  void RunBatch(DiskBatchState& state) noexcept {
    mstar_tier_op_t* ops = state.ops();
    const uint32_t count = state.count();
    for (uint32_t first = 0; first < count;) {
      const uint32_t kind = ops[first].kind;
      uint32_t end = first + 1;
      if (kind == MSTAR_TIER_OP_PUT || kind == MSTAR_TIER_OP_GET) {
        while (end < count && ops[end].kind == kind) ++end;
      }
      if (kind == MSTAR_TIER_OP_PUT) {
        RunPuts(ops + first, end - first);
      } else if (kind == MSTAR_TIER_OP_GET) {
        state.RunGets(first, end, run_get_);  // a GET that throws fails alone (disk_batch.h)
      } else {
        ops[first].result = Execute(ops[first]);
      }
      first = end;
    }
  }

  // One GET whole; run by the worker or a waiting thread, several at once (DiskStore::Get).
  void RunGet(mstar_tier_op_t& op) {
    if (!HostAddressable(op.device)) {
      op.result = Reject(op, "data is not host memory");
      return;
    }
    op.result = Report(Guarded([&] { return store_->Get(op.key, op.data, op.size); }));
  }

  // Never throws, which matters: the store holds pointers into outcomes until CommitStaged
  // returns. Out of memory for that bookkeeping, before anything is staged, every PUT of the run
  // fails.
  void RunPuts(mstar_tier_op_t* ops, uint32_t count) noexcept {
    std::vector<Outcome> outcomes;
    std::vector<bool> staged;
    try {
      outcomes.resize(count);
      staged.assign(count, false);
    } catch (...) {
      for (uint32_t i = 0; i < count; ++i) ops[i].result = MSTAR_ERR_RESOURCE_EXHAUSTED;
      return;
    }
    for (uint32_t i = 0; i < count; ++i) {
      mstar_tier_op_t& op = ops[i];
      if (!HostAddressable(op.device)) {
        op.result = Reject(op, "data is not host memory");
        continue;
      }
      Outcome outcome =
          Guarded([&] { return store_->StagePut(op.key, op.data, op.size, &outcomes[i]); });
      staged[i] = outcome.ok();
      if (!staged[i]) op.result = Report(outcome);
    }
    // A failure inside leaves the affected PUTs with an INTERNAL outcome (set when staged).
    Guarded([&] {
      store_->CommitStaged();
      return Outcome{};
    });
    for (uint32_t i = 0; i < count; ++i) {
      if (staged[i]) ops[i].result = Report(outcomes[i]);
    }
  }

  // body() with exceptions turned into outcomes. Never throws.
  template <typename Body>
  static Outcome Guarded(const Body& body) noexcept {
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return Failure(MSTAR_ERR_RESOURCE_EXHAUSTED, "out of memory");
    } catch (const std::exception& e) {
      return Failure(MSTAR_ERR_INTERNAL, e.what());
    } catch (...) {
      return Failure(MSTAR_ERR_INTERNAL, "unknown exception");
    }
  }
  // code with the message "tier_disk: <what>", or none when there is no memory for it.
  static Outcome Failure(uint32_t code, const char* what) noexcept {
    Outcome outcome{code, {}};
    try {
      outcome.message = std::string("tier_disk: ") + what;
    } catch (...) {
    }
    return outcome;
  }

  // The op's result; failures other than NOT_FOUND are logged (when they have a message).
  uint32_t Report(const Outcome& outcome) noexcept {
    if (!outcome.ok() && outcome.code != MSTAR_ERR_NOT_FOUND && !outcome.message.empty()) {
      Log(MSTAR_LOG_WARN, outcome.message);
    }
    return outcome.code;
  }

  uint32_t Execute(mstar_tier_op_t& op) noexcept {
    switch (op.kind) {
      case MSTAR_TIER_OP_CONTAINS:
        return Report(Guarded([&] { return Outcome{store_->Contains(op.key), ""}; }));
      case MSTAR_TIER_OP_REMOVE: return Report(Guarded([&] { return store_->Remove(op.key); }));
      default: return Reject(op, "unknown op kind");
    }
  }

  // INVALID_ARGUMENT, logged (the warning is lost when there is no memory for it). Never throws.
  uint32_t Reject(const mstar_tier_op_t& op, const char* why) noexcept {
    try {
      Log(MSTAR_LOG_WARN, "tier_disk: rejected op (kind " + std::to_string(op.kind) + ", block " +
                              mstar::tier_disk::KeyHex(op.key) + "): " + why);
    } catch (...) {
    }
    return MSTAR_ERR_INVALID_ARGUMENT;
  }

  bool cleanup_ = true;
  std::unique_ptr<DiskStore> store_;
  const mstar::tier_disk::RunGet run_get_ = [this](mstar_tier_op_t& op) { RunGet(op); };
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<std::shared_ptr<DiskBatchState>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace

MSTAR_PLUGIN("tier_disk", 0, TierFactory<TierDisk>("tier_disk"));
