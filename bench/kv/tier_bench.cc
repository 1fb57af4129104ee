// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Offload tier throughput, each figure beside its ceiling measured in the same run on the same
// blocks (256 KiB blocks, 256 MiB in all for tier_host and 128 MiB for tier_disk, whose fsync-bound
// writes are slow on shared disks; submitted 64 ops per batch through the host's tier services, as
// a resource would):
//   tier_host.put / tier_host.get  GB/s through tier_host vs plain memcpy of the same blocks
//   tier_disk.put                  GB/s through tier_disk (temp file, XXH3, fsync, rename;
//                                  a batch's files are all written before the first fsync) vs
//                                  raw open+write()+fsync+close of one file per block
//   tier_disk.get                  GB/s through tier_disk (open, one readv of header + payload
//                                  straight into the destination, XXH3 of every block, close)
//                                  vs raw open+read()+close of the very same block files, whole
//                                  (header included, so the raw side reads 80 bytes more a block)
//   tier_disk.get.two_threads      the same GETs vs the same raw reads on two threads, as many as
//                                  a GET run uses when its caller waits (worker and waiter)
// The get comparison is fair by construction: both sides read the same files, which the put rounds
// just wrote, from the page cache (each round reads every file once, nothing is dropped in
// between), into page-aligned destination buffers, one file at a time on one thread.
// The disk files live in a fresh directory under the build tree (build/bench/), removed at the
// end. Each figure is the best of a few alternating rounds (ten for tier_disk.get), except
// tier_disk.put: two rounds, tier and raw alternating batch by batch, times summed (see
// InterleavedPutRates). The plugins are found beside the
// binary's build tree (build/bench/bin/../../lib/mstar/plugins): build tier_host and tier_disk
// first.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/bench.h"
#include "common/built_plugins.h"
#include "config/toml_reader.h"
#include "core/logging.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "plugin/instance.h"
#include "plugin/registry.h"

namespace mstar {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr uint64_t kBlockBytes = 256 << 10;
constexpr uint64_t kTotalBytes = 256 << 20;
constexpr uint64_t kBlocks = kTotalBytes / kBlockBytes;
constexpr uint64_t kDiskBlocks = kBlocks / 2;
constexpr uint32_t kOpsPerBatch = 64;
// Reads from the page cache take a few tens of milliseconds a round, short enough for one
// preemption on a shared machine to spoil a round: take the best of more of them.
constexpr int kGetRounds = 10;

// Page-aligned block memory, so that the copy speed does not depend on where the allocator put a
// block (the kernel's copy to user memory is several times slower for some misalignments).
template <typename T>
struct PageAligned {
  using value_type = T;
  PageAligned() = default;
  template <typename U>
  PageAligned(const PageAligned<U>&) {}  // NOLINT: allocator conversion
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(4096, (n * sizeof(T) + 4095) / 4096 * 4096);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const PageAligned&) const { return true; }
};
using Block = std::vector<uint8_t, PageAligned<uint8_t>>;

double Seconds(const std::function<void()>& body) {
  auto start = Clock::now();
  body();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best-of-rounds GB/s of candidate and baseline, alternating.
std::pair<double, double> BestRates(
    uint64_t bytes, const std::function<void()>& candidate, const std::function<void()>& baseline,
    int rounds, const std::function<void()>& between = [] {}) {
  double best_candidate = 1e30, best_baseline = 1e30;
  for (int r = 0; r < rounds; ++r) {
    between();
    best_candidate = std::min(best_candidate, Seconds(candidate));
    between();
    best_baseline = std::min(best_baseline, Seconds(baseline));
  }
  const double gb = static_cast<double>(bytes) / 1e9;
  return {gb / best_candidate, gb / best_baseline};
}

mstar_tier_key_t KeyOf(uint64_t n) {
  mstar_tier_key_t key{};
  std::memcpy(key.bytes, &n, sizeof(n));
  key.bytes[31] = 0x5a;
  return key;
}

class Tier {
 public:
  Tier(const PluginRegistry& registry, const char* name, const std::string& config) {
    Diagnostics d;
    auto table = ParseTomlText(config, "tier_bench.toml", &d);
    MSTAR_CHECK(table.has_value());
    Result<FactoryRef> factory = registry.Find(MSTAR_KIND_TIER, name);
    if (!factory.ok()) {
      std::cerr << factory.status().ToString() << "\n";
      std::exit(1);
    }
    InstanceOptions options;
    options.name = name;
    options.config = std::make_shared<ConfigTree>(std::move(*table), "tier_bench.toml", "config");
    options.checkpoint_identity = {'b', 'e', 'n', 'c', 'h'};
    auto instance = PluginInstance::Create(factory.value(), options);
    if (!instance.ok()) {
      std::cerr << instance.status().ToString() << "\n";
      std::exit(1);
    }
    instance_ = std::move(instance.value());
    handle_.name = name;
    handle_.vtable = instance_->tier();
    handle_.self = instance_->self();
  }

  // Runs one op of `kind` per block of [begin, end) (block i under KeyOf(i)), kOpsPerBatch to a
  // batch; every op must succeed (a REMOVE may find no block).
  void Run(uint32_t kind, std::vector<Block>& blocks, uint64_t begin = 0,
           uint64_t end = UINT64_MAX) {
    const mstar_host_api_t* h = instance_->host();
    std::vector<mstar_tier_op_t> ops(kOpsPerBatch);
    end = std::min<uint64_t>(end, blocks.size());
    for (uint64_t first = begin; first < end; first += kOpsPerBatch) {
      uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(kOpsPerBatch, end - first));
      for (uint32_t i = 0; i < n; ++i) {
        mstar_tier_op_t& op = ops[i];
        op = mstar_tier_op_t{};
        op.struct_size = sizeof(op);
        op.struct_version = MSTAR_ABI_MINOR;
        op.kind = kind;
        op.key = KeyOf(first + i);
        op.data = blocks[first + i].data();
        op.size = blocks[first + i].size();
        op.device = DLDevice{kDLCPU, 0};
      }
      mstar_tier_batch_t* batch = nullptr;
      MSTAR_CHECK(TakeStatus(h->tier_submit(&handle_, ops.data(), n, nullptr, &batch)).ok());
      MSTAR_CHECK(TakeStatus(h->tier_wait(&handle_, batch, UINT64_MAX)).ok());
      h->tier_release_batch(&handle_, batch);
      for (uint32_t i = 0; i < n; ++i) {
        const bool absent = kind == MSTAR_TIER_OP_REMOVE && ops[i].result == MSTAR_ERR_NOT_FOUND;
        if (ops[i].result != MSTAR_OK && !absent) {
          std::cerr << handle_.name << ": op kind " << kind << " failed with code " << ops[i].result
                    << "\n";
          std::exit(1);
        }
      }
    }
  }

 private:
  std::unique_ptr<PluginInstance> instance_;
  mstar_tier_handle_t handle_;
};

std::vector<Block> Blocks(uint64_t count, bool fill) {
  std::vector<Block> blocks(count, Block(kBlockBytes));
  if (!fill) return blocks;
  std::mt19937_64 rng(42);
  for (auto& block : blocks) {
    for (size_t i = 0; i < block.size(); i += 8) {
      uint64_t v = rng();
      std::memcpy(block.data() + i, &v, 8);
    }
  }
  return blocks;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << what << " failed: " << std::strerror(errno) << "\n";
    std::exit(1);
  }
}

// Writes blocks [begin, end) as dir/raw<i>, each with its own fsync.
void RawWrite(const std::string& dir, const std::vector<Block>& blocks, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    std::string path = dir + "/raw" + std::to_string(i);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    Check(fd >= 0, "open");
    Check(::write(fd, blocks[i].data(), blocks[i].size()) == static_cast<ssize_t>(blocks[i].size()),
          "write");
    Check(::fsync(fd) == 0, "fsync");
    ::close(fd);
  }
}

// The block files of a tier directory (<key>.blk).
std::vector<std::string> BlockFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".blk") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Reads file i whole (header and payload) with one read().
void RawReadFile(const std::vector<std::string>& files, std::vector<Block>& into, size_t i) {
  int fd = ::open(files[i].c_str(), O_RDONLY | O_CLOEXEC);
  Check(fd >= 0, "open");
  Check(::read(fd, into[i].data(), into[i].size()) == static_cast<ssize_t>(into[i].size()), "read");
  ::close(fd);
}

void RawReadFiles(const std::vector<std::string>& files, std::vector<Block>& into) {
  for (size_t i = 0; i < files.size(); ++i) RawReadFile(files, into, i);
}

// The same reads on two threads taking files in turn: as many threads as a tier_disk GET run
// uses when its caller waits (the worker and the waiting thread).
void RawReadFilesOnTwoThreads(const std::vector<std::string>& files, std::vector<Block>& into) {
  std::atomic<size_t> next{0};
  auto reader = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) RawReadFile(files, into, i);
  };
  std::thread other(reader);
  reader();
  other.join();
}

void RemoveRaw(const std::string& dir, uint64_t begin = 0, uint64_t end = kBlocks) {
  for (uint64_t i = begin; i < end; ++i) ::unlink((dir + "/raw" + std::to_string(i)).c_str());
}

// GB/s of tier_disk PUTs and of raw writes of the same blocks. The blocks go in chunks of one
// batch, tier and raw alternating chunk by chunk (which goes first alternating too), and the
// times are summed, so that a disk whose speed drifts during the run (shared disks do) weighs on
// both sides alike. Before each chunk, untimed, the tier's keys and the raw files of that chunk
// are removed: both sides always create new files.
std::pair<double, double> InterleavedPutRates(Tier& disk, const std::string& dir,
                                              std::vector<Block>& blocks, int rounds) {
  double tier_seconds = 0, raw_seconds = 0;
  for (int r = 0; r < rounds; ++r) {
    for (uint64_t begin = 0; begin < blocks.size(); begin += kOpsPerBatch) {
      const uint64_t end = std::min<uint64_t>(begin + kOpsPerBatch, blocks.size());
      disk.Run(MSTAR_TIER_OP_REMOVE, blocks, begin, end);
      RemoveRaw(dir, begin, end);
      auto tier = [&] { disk.Run(MSTAR_TIER_OP_PUT, blocks, begin, end); };
      auto raw = [&] { RawWrite(dir, blocks, begin, end); };
      if ((begin / kOpsPerBatch + static_cast<uint64_t>(r)) % 2 == 0) {
        tier_seconds += Seconds(tier);
        raw_seconds += Seconds(raw);
      } else {
        raw_seconds += Seconds(raw);
        tier_seconds += Seconds(tier);
      }
    }
  }
  const double gb =
      static_cast<double>(rounds) * static_cast<double>(blocks.size() * kBlockBytes) / 1e9;
  return {gb / tier_seconds, gb / raw_seconds};
}

void Emit(const std::string& name, std::pair<double, double> rates, const char* ceiling) {
  bench::Emit(
      {name, rates.first, "GB/s", rates.second, std::string("ratio >= 0.8 (") + ceiling + ")"});
}

// A row with no target: shown beside a ceiling for scale.
void EmitForScale(const std::string& name, std::pair<double, double> rates, const char* ceiling) {
  bench::Emit({name, rates.first, "GB/s", rates.second, std::string("for scale: ") + ceiling});
}

}  // namespace
}  // namespace mstar

int main() {
  using namespace mstar;
  Log().set_level(spdlog::level::warn);
  PluginRegistry registry = bench::LoadBuiltPlugins({"tier_host", "tier_disk"});
  std::cerr << "tier_bench: " << kBlocks << " blocks of " << (kBlockBytes >> 10) << " KiB\n";

  std::vector<Block> source = Blocks(kBlocks, true);
  std::vector<Block> dest = Blocks(kBlocks, false);
  auto memcpy_all = [&](std::vector<Block>& to, const std::vector<Block>& from) {
    for (size_t i = 0; i < from.size(); ++i) std::memcpy(to[i].data(), from[i].data(), kBlockBytes);
    bench::DoNotOptimize(to[0][0]);
  };

  {
    Tier host(registry, "tier_host", "");
    Emit("tier_host.put",
         BestRates(
             kTotalBytes, [&] { host.Run(MSTAR_TIER_OP_PUT, source); },
             [&] { memcpy_all(dest, source); }, 3),
         "memcpy");
    Emit("tier_host.get",
         BestRates(
             kTotalBytes, [&] { host.Run(MSTAR_TIER_OP_GET, dest); },
             [&] { memcpy_all(dest, source); }, 3),
         "memcpy");
    MSTAR_CHECK(dest == source);
  }

  const std::string dir =
      (bench::BuildDir() / "bench" / ("tier_bench." + std::to_string(::getpid()))).string();
  fs::create_directories(dir);
  source.resize(kDiskBlocks);
  dest.assign(kDiskBlocks, Block(kBlockBytes));
  {
    Tier disk(registry, "tier_disk", "directory = \"" + dir + "/tier\"\n");
    Emit("tier_disk.put", InterleavedPutRates(disk, dir, source, 2), "write+fsync");
    RemoveRaw(dir);
    const std::vector<std::string> files = BlockFiles(dir + "/tier");
    MSTAR_CHECK(files.size() == kDiskBlocks);
    std::vector<Block> whole(kDiskBlocks, Block(kBlockBytes + 64));
    Emit("tier_disk.get",
         BestRates(
             kDiskBlocks * kBlockBytes, [&] { disk.Run(MSTAR_TIER_OP_GET, dest); },
             [&] { RawReadFiles(files, whole); }, kGetRounds),
         "read");
    EmitForScale("tier_disk.get.two_threads",
                 BestRates(
                     kDiskBlocks * kBlockBytes, [&] { disk.Run(MSTAR_TIER_OP_GET, dest); },
                     [&] { RawReadFilesOnTwoThreads(files, whole); }, kGetRounds),
                 "read on two threads");
    MSTAR_CHECK(dest == source);
  }
  fs::remove_all(dir);
  return 0;
}
