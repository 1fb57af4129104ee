// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "plugin/library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <compare>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#define BOOST_DLL_USE_STD_FS
#include <boost/dll/shared_library.hpp>

#include "core/exception_text.h"
#include "core/keep_until_exit.h"
#include "core/logging.h"
#include "core/sha256.h"
#include "plugin/elf_probe.h"
#include "plugin/elf_symbols.h"
#include "plugin/instance.h"
#include "plugin/table_check.h"

namespace mstar {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kUnset = 0xFFFFFFFFu;

// Recursive: a load that finds a live load of its file and refuses it may hold the last
// reference to it (the other owner let go meanwhile), whose destructor then takes it again.
std::recursive_mutex& LoadMutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

// A library file by identity: dlopen gives one handle per file, whichever path names it, so two
// loads of one file share the plugin's statics (its tables, what it negotiated, the host table it
// keeps).
struct FileIdentity {
  dev_t device;
  ino_t inode;
  auto operator<=>(const FileIdentity&) const = default;
};

std::optional<FileIdentity> IdentityOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

// The loads alive in this process, by file (under LoadMutex).
std::map<FileIdentity, std::weak_ptr<PluginLibrary>>& LiveLoads() {
  static auto* loads = new std::map<FileIdentity, std::weak_ptr<PluginLibrary>>();
  return *loads;
}

// How many times each file's entry point was called in this process (under LoadMutex). Entries
// are never erased: a load points at its file's count.
std::map<FileIdentity, uint64_t>& EntryCalls() {
  static auto* calls = new std::map<FileIdentity, uint64_t>();
  return *calls;
}

// The file each library handle this process opened came from (under LoadMutex). dlopen finds a
// library loaded already by its path before it looks at the file, and RTLD_NODELETE keeps every
// library loaded: a file replaced at the same path would be served from the old mapping.
std::map<void*, FileIdentity>& OpenedFrom() {
  static auto* opened = new std::map<void*, FileIdentity>();
  return *opened;
}

// Fills *error and returns nullptr, for one-line failure returns.
std::shared_ptr<PluginLibrary> Fail(Diagnostic* error, const SourceLocation& where,
                                    const std::string& key, const Status& status) {
  *error = Diagnostic{where, key, status.message()};
  return nullptr;
}

std::string Version(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

struct EntryCall {
  mstar_status_t* status = nullptr;
  const mstar_plugin_api_t* api = nullptr;
  std::string exception;  // set when the entry threw
};

EntryCall CallEntry(mstar_plugin_entry_fn entry, const mstar_host_api_t* host,
                    mstar_negotiation_t* negotiation) {
  EntryCall call;
  try {
    call.status = entry(host, negotiation, &call.api);
  } catch (const std::exception& e) {
    call.exception = std::string("the entry point threw an exception: ") + e.what();
  } catch (...) {
    call.exception = "the entry point threw an exception of unknown type";
  }
  return call;
}

// Checks what the plugin wrote into the negotiation struct against the host and the manifest.
// The host's side is taken from `host`, never read back from n: the struct is writable by the
// plugin, which could otherwise claim a newer host than this one. The negotiated minor is only
// checked when the entry succeeded (a refusing plugin leaves it).
Status CheckNegotiation(const mstar_negotiation_t& n, const HostCapabilities& host,
                        const PluginManifest& manifest, bool entry_succeeded) {
  if (n.plugin_major == kUnset) {
    return Incompatible("the entry point did not fill in the ABI negotiation");
  }
  if (n.plugin_major != host.abi_major) {
    return Incompatible("the library was built for ABI " + Version(n.plugin_major, n.plugin_minor) +
                        "; this host speaks ABI " + Version(host.abi_major, host.abi_minor) +
                        " (majors must match)");
  }
  if (n.plugin_min_host_minor != manifest.abi_min_minor) {
    return Incompatible("[abi] min_minor = " + std::to_string(manifest.abi_min_minor) +
                        " but the library needs host minor " +
                        std::to_string(n.plugin_min_host_minor) + "; fix the manifest");
  }
  if (n.plugin_min_host_minor > host.abi_minor) {
    return Incompatible("the library needs host ABI " +
                        Version(host.abi_major, n.plugin_min_host_minor) +
                        " or newer; this host provides " + Version(host.abi_major, host.abi_minor));
  }
  uint32_t expected = std::min(host.abi_minor, n.plugin_minor);
  if (entry_succeeded && n.negotiated_minor != expected) {
    return Incompatible("the library negotiated minor " + std::to_string(n.negotiated_minor) +
                        "; min(host " + std::to_string(host.abi_minor) + ", plugin " +
                        std::to_string(n.plugin_minor) + ") is " + std::to_string(expected));
  }
  return Status::Ok();
}

Status CheckFileAndDigest(const PluginManifest& manifest, const LoadOptions& options) {
  std::error_code ec;
  if (!fs::exists(manifest.library_path, ec)) {
    return NotFound("library file not found: " + manifest.library_path);
  }
  // A FIFO or device would block the digest and the ELF probe that read it (links followed).
  if (!fs::is_regular_file(manifest.library_path, ec)) {
    return InvalidArgument("library is not a regular file: " + manifest.library_path);
  }
  if (options.verify_sha256 && manifest.sha256) {
    Result<Sha256Digest> digest = Sha256File(manifest.library_path);
    if (!digest.ok()) return digest.status();
    if (ToHex(digest.value()) != *manifest.sha256) {
      return DataLoss("sha256 mismatch for " + manifest.library_path + ": the manifest says " +
                      *manifest.sha256 + ", the file is " + ToHex(digest.value()));
    }
  }
  return Status::Ok();
}

// Why dlopen failed, from boost::dll's message, which wraps dlerror's text as "... (dlerror system
// message: TEXT): ERRNO TEXT", the errno text left by some unrelated call; TEXT is the reason.
std::string DlopenReason(const std::exception& e) {
  const std::string_view what = e.what();
  constexpr std::string_view kMarker = "(dlerror system message: ";
  size_t begin = what.find(kMarker);
  size_t end = what.rfind("): ");
  if (begin == std::string_view::npos || end == std::string_view::npos ||
      end < begin + kMarker.size())
    return std::string(what);
  begin += kMarker.size();
  return std::string(what.substr(begin, end - begin));
}

// A C++ exception out of a library's static initializer unwinds through dlopen and leaves the
// dynamic loader's lock held: every later dlopen on another thread (a CUDA library loaded
// lazily, the next plugin) would wait forever. Nothing can release it, so the process ends here,
// naming the library, rather than hang later. Call in a catch block.
[[noreturn]] void ExitForAStaticInitializerThatThrew(const std::string& path) {
  std::string what;
  try {
    what = CurrentExceptionText();
  } catch (...) {  // out of memory for the text: the log says less, the process still ends
  }
  Log().critical(
      "{}: a static initializer threw ({}) while the library was being loaded, which leaves the "
      "dynamic loader locked for every other thread; exiting. Remove the plugin, or fix it so "
      "that no exception leaves its static initializers",
      path, what);
  Log().flush();
  std::_Exit(1);
}

// Whether dlopen's reason names an undefined symbol that a dependency of the library at path
// references ("<object>: undefined symbol: <name>", the object being the one that needs it), not
// the library itself.
bool UndefinedInADependency(const std::string& detail, const std::string& path) {
  const size_t marker = detail.find(": undefined symbol: ");
  if (marker == std::string::npos) return false;
  const fs::path object = detail.substr(0, marker);
  std::error_code ec;
  return object != fs::absolute(path, ec) && !fs::equivalent(object, path, ec);
}

// Whether every symbol the library at path needs from elsewhere (RequiredElfSymbols) is
// defined by it, its dependencies or the process's global scope, where lazy binding will look.
Status CheckOwnSymbolsBind(const std::string& path, void* handle) {
  Result<std::vector<std::string>> required = RequiredElfSymbols(path);
  if (!required.ok()) return required.status();
  for (const std::string& name : *required) {
    if (dlsym(handle, name.c_str()) == nullptr && dlsym(RTLD_DEFAULT, name.c_str()) == nullptr)
      return InvalidArgument("cannot load " + path + ": undefined symbol: " + name +
                             " (the library itself references it, and no library defines it)");
  }
  return Status::Ok();
}

// The handles of libraries refused for an unbound reference of their own. Such a library was
// opened lazily and stays mapped (RTLD_NODELETE): opening it again with binding now finds it
// loaded and binds nothing, so its own references are checked again instead. Under LoadMutex.
std::set<void*>& RefusedLazyLoads() {
  static auto* refused = new std::set<void*>();
  return *refused;
}

// Opens the library with every symbol bound now, so a missing one is an error at load rather than
// a crash at the first call. Some dependency stacks (LibTorch 2.x CUDA wheels: cuDNN's engine
// libraries) carry references that are only ever bound lazily; when binding now fails on an
// undefined symbol that a dependency references, the library is opened with lazy binding instead
// and a warning names the symbol. One the plugin's own code references is an error: the dynamic
// loader would end the process at the first call through it.
Result<std::unique_ptr<boost::dll::shared_library>> OpenLibrary(const std::string& path) {
  namespace mode = boost::dll::load_mode;
  // Everything that may throw is done before load: an exception out of load that is not its
  // own error came from the library's static initializers.
  const boost::dll::fs::path absolute = fs::absolute(path);
  auto library = std::make_unique<boost::dll::shared_library>();
  std::string detail;
  // True when opened with binding; otherwise detail says why not.
  auto open = [&](mode::type binding) {
    try {
      library->load(absolute, static_cast<mode::type>(binding | mode::rtld_local | RTLD_NODELETE));
      return true;
    } catch (const boost::dll::fs::system_error& e) {
      const char* why = dlerror();
      detail = why != nullptr ? why : DlopenReason(e);
      return false;
    } catch (...) {
      ExitForAStaticInitializerThatThrew(path);
    }
  };
  if (open(mode::rtld_now)) return library;
  if (UndefinedInADependency(detail, path)) {
    const std::string now_detail = detail;
    if (open(mode::rtld_lazy)) {
      // dlopen reports the first symbol it cannot bind, a dependency's being bound first: the
      // plugin's own references may fail as well, and those are refused.
      if (Status own = CheckOwnSymbolsBind(path, library->native()); !own.ok()) {
        // Mapped from this file for good: a later load through a replaced file is told so.
        RefusedLazyLoads().insert(library->native());
        if (std::optional<FileIdentity> file = IdentityOf(path))
          OpenedFrom().try_emplace(library->native(), *file);
        return own;
      }
      Log().warn(
          "{}: loaded with lazy binding ({}); a call through that symbol would end the "
          "process",
          path, now_detail);
      return library;
    }
  }
  return InvalidArgument("cannot load " + path + ": " + detail);
}

}  // namespace

bool PluginLibrary::CheckManifest(const PluginManifest& manifest, const LoadOptions& options,
                                  Diagnostic* error) {
  auto failed = [error](const SourceLocation& where, const char* key, const Status& status) {
    *error = Diagnostic{where, key, status.message()};
    return false;
  };
  SourceLocation requires_where = manifest.requires_where;
  if (requires_where.path.empty()) requires_where.path = manifest.path;
  if (Status s = CheckAbi(manifest, options.host); !s.ok())
    return failed(manifest.abi_where, "abi", s);
  if (Status s = CheckRequirements(manifest, options.host); !s.ok())
    return failed(requires_where, "requires", s);
  // Checked again here, not only when the manifest was read: the file may have become a link
  // out of the plugin's directory since.
  if (Status s = CheckLibraryInside(manifest.path, manifest.library_path); !s.ok())
    return failed(manifest.library_where, "plugin.library", s);
  return true;
}

std::shared_ptr<PluginLibrary> PluginLibrary::Load(const PluginManifest& manifest,
                                                   const LoadOptions& options, Diagnostic* error) {
  if (!CheckManifest(manifest, options, error)) return nullptr;
  if (Status s = CheckFileAndDigest(manifest, options); !s.ok()) {
    bool digest = s.code() == Code::kDataLoss;
    return Fail(error, digest ? manifest.sha256_where : manifest.library_where,
                digest ? "plugin.sha256" : "plugin.library", s);
  }
  if (Status s = ProbeSharedLibrary(manifest.library_path); !s.ok()) {
    return Fail(error, manifest.library_where, "plugin.library", s);
  }

  std::lock_guard<std::recursive_mutex> lock(LoadMutex());
  // A file loaded already and still alive is that load again (same manifest, same host minor),
  // not a second entry call, which would renegotiate the first load's tables under it.
  const std::optional<FileIdentity> file = IdentityOf(manifest.library_path);
  auto it = file && !options.renegotiate_in_place ? LiveLoads().find(*file) : LiveLoads().end();
  if (it != LiveLoads().end()) {
    if (std::shared_ptr<PluginLibrary> live = it->second.lock()) {
      if (live->manifest_.path == manifest.path && live->host_minor_ == options.host.abi_minor) {
        // The manifest may have been edited since: what it says is checked against the load.
        if (Status s = CheckNegotiation(live->negotiation_, options.host, manifest, true); !s.ok())
          return Fail(error, manifest.abi_where, "abi", s);
        if (Status s = CheckPluginTables(live->api_, live->negotiated_minor_, manifest); !s.ok())
          return Fail(error, manifest.plugin_where, "plugin", s);
        return live;
      }
      return Fail(error, manifest.library_where, "plugin.library",
                  FailedPrecondition(
                      manifest.library_path + " is loaded in this process already, through " +
                      live->manifest_.path + " at host ABI " +
                      Version(options.host.abi_major, live->host_minor_) +
                      "; one file is one load (its statics are shared): let that load go first, "
                      "or load a copy of the file"));
    }
  }
  std::shared_ptr<PluginLibrary> library(new PluginLibrary());
  library->manifest_ = manifest;
  library->host_minor_ = options.host.abi_minor;
  library->host_ = std::make_unique<HostApi>(manifest.name, options.host.abi_minor);
  Result<std::unique_ptr<boost::dll::shared_library>> loaded = OpenLibrary(manifest.library_path);
  if (!loaded.ok()) return Fail(error, manifest.library_where, "plugin.library", loaded.status());
  library->library_ = std::move(loaded).value();
  if (file) {
    auto [opened, first_time] = OpenedFrom().try_emplace(library->library_->native(), *file);
    if (!first_time && opened->second != *file) {
      return Fail(error, manifest.library_where, "plugin.library",
                  FailedPrecondition(manifest.library_path +
                                     " was replaced since this process loaded it, and the dynamic "
                                     "loader serves a path it loaded before from the old file: "
                                     "restart the process to load the new one"));
    }
  }
  // Refused lazily before, it stayed mapped as it was: its own references are checked again (a
  // library loaded since may define them now).
  if (RefusedLazyLoads().count(library->library_->native()) != 0) {
    if (Status own = CheckOwnSymbolsBind(manifest.library_path, library->library_->native());
        !own.ok()) {
      return Fail(error, manifest.library_where, "plugin.library", own);
    }
    RefusedLazyLoads().erase(library->library_->native());
  }
  if (!library->library_->has(MSTAR_PLUGIN_ENTRY_SYMBOL)) {
    return Fail(error, manifest.library_where, "plugin.library",
                NotFound(manifest.library_path +
                         " does not export " MSTAR_PLUGIN_ENTRY_SYMBOL
                         " (build it with the SDK's mstar_add_plugin and MSTAR_PLUGIN)"));
  }
  auto entry = library->library_->get<std::remove_pointer_t<mstar_plugin_entry_fn>>(
      MSTAR_PLUGIN_ENTRY_SYMBOL);

  mstar_negotiation_t negotiation{sizeof(mstar_negotiation_t),
                                  MSTAR_ABI_MINOR,
                                  options.host.abi_major,
                                  options.host.abi_minor,
                                  kUnset,
                                  kUnset,
                                  kUnset,
                                  kUnset};
  EntryCall call = CallEntry(entry, library->host_->table(), &negotiation);
  // Counted while this load may still fail: an earlier load of the file being let go meanwhile
  // (waiting for LoadMutex in its destructor) leaves shutdown to this one. Uncounted if it
  // fails, so that the earlier one runs shutdown after all (this one never will).
  struct CountedCall {
    uint64_t* calls = nullptr;
    bool kept = false;
    ~CountedCall() {
      if (calls != nullptr && !kept) --*calls;
    }
  } counted;
  if (file) {
    uint64_t& calls = EntryCalls()[*file];
    library->entry_call_ = ++calls;
    library->entry_calls_of_file_ = &calls;
    counted.calls = &calls;
  }
  Status entry_status = TakeStatus(call.status);
  if (!call.exception.empty()) {
    return Fail(error, manifest.plugin_where, "plugin", Internal(call.exception));
  }
  // What the plugin wrote into the negotiation says more than its status: check it first.
  bool filled = negotiation.plugin_major != kUnset;
  if (filled || entry_status.ok()) {
    if (Status s = CheckNegotiation(negotiation, options.host, manifest, entry_status.ok());
        !s.ok()) {
      return Fail(error, manifest.abi_where, "abi", s);
    }
  }
  if (!entry_status.ok()) {
    return Fail(error, manifest.plugin_where, "plugin",
                entry_status.WithContext("the entry point failed"));
  }
  if (Status s = CheckPluginTables(call.api, negotiation.negotiated_minor, manifest); !s.ok()) {
    return Fail(error, manifest.plugin_where, "plugin", s);
  }
  counted.kept = true;
  library->api_ = call.api;
  library->negotiation_ = negotiation;
  library->negotiated_minor_ = negotiation.negotiated_minor;
  library->plugin_minor_ = negotiation.plugin_minor;
  if (file && !options.renegotiate_in_place) LiveLoads()[*file] = library;
  Log().debug("loaded plugin {} {} from {} (ABI {}.{})", manifest.name, manifest.version,
              manifest.library_path, options.host.abi_major, negotiation.negotiated_minor);
  return library;
}

PluginLibrary::~PluginLibrary() {
  if (api_ != nullptr && api_->shutdown != nullptr) {
    // Not while the same file is loaded again (its entry point would run beside shutdown).
    std::lock_guard<std::recursive_mutex> lock(LoadMutex());
    // Loaded again since (another thread found this load expired while it was being let go):
    // the plugin's state is that load's now, and that load's shutdown ends it.
    const bool loaded_again =
        entry_calls_of_file_ != nullptr && *entry_calls_of_file_ != entry_call_;
    try {
      if (!loaded_again) api_->shutdown();
    } catch (const std::exception& e) {
      Log().error("[{}] shutdown threw an exception: {}", manifest_.name, e.what());
      NoteEscapedException(manifest_.name, "shutdown", e.what());
    } catch (...) {
      Log().error("[{}] shutdown threw an exception", manifest_.name);
      NoteEscapedException(manifest_.name, "shutdown", nullptr);
    }
  }
  // The host table is promised for the library's whole life (mstar/host.h), and its code stays
  // mapped (RTLD_NODELETE) with whatever kept the table: a plugin's statics, a tensor whose
  // deleter runs later, a thread. One small table per library load.
  if (host_ != nullptr && library_ != nullptr) KeepUntilExit(std::move(host_));
}

const mstar_factory_t* PluginLibrary::FindFactory(uint32_t kind, std::string_view name) const {
  for (uint32_t i = 0; i < api_->num_factories; ++i) {
    const mstar_factory_t& factory = FactoryAt(api_, i);
    if (factory.kind == kind && name == factory.name) return &factory;
  }
  return nullptr;
}

Result<std::vector<std::string>> PluginLibrary::ExportedSymbols() const {
  return ExportedElfSymbols(fs::absolute(manifest_.library_path).string());
}

}  // namespace mstar
