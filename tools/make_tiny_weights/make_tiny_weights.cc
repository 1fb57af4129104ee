// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// make-tiny-weights [--force] [--lm-layers N] [--lm-hidden N] [--lm-heads N] [--lm-kv-heads N]
//                   [--lm-intermediate N] OUTDIR
//
// Writes the tiny models' deterministic weights: OUTDIR/tiny-lm/{config.json,model.safetensors}
// (a Hugging Face Llama checkpoint for the tiny_lm plugin) and OUTDIR/tiny-codec/{config.json,
// model.safetensors} (for the tiny_codec plugin). The bytes are the same on every run and host.
// A file already holding exactly those bytes is left alone, so running it again is cheap; a file
// holding anything else is an error unless --force is given, in which case it is replaced. Each
// file is written to a temporary name and renamed into place. Prints one line per file. The
// --lm-* options give the language model other dimensions (the same vocabulary and tensor names),
// e.g. 8 layers of hidden 1024 for the device check's step timings.
// Exit status: 0 on success, 1 on a file problem, 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "tiny_models.h"

namespace {

namespace fs = std::filesystem;
using mstar::tools::ModelFiles;

struct PlannedFile {
  fs::path path;
  std::vector<uint8_t> bytes;
  bool unchanged = false;
};

bool ReadAll(const fs::path& path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

bool WriteAtomically(const fs::path& path, const std::vector<uint8_t>& bytes, std::string* error) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    *error = "cannot create " + path.parent_path().string() + ": " + ec.message();
    return false;
  }
  fs::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      *error = "cannot write " + temporary.string();
      return false;
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    *error = "cannot rename " + temporary.string() + " to " + path.string() + ": " + ec.message();
    return false;
  }
  return true;
}

int Usage(const char* message) {
  if (message != nullptr) std::fprintf(stderr, "make-tiny-weights: %s\n", message);
  std::fprintf(stderr,
               "usage: make-tiny-weights [--force] [--lm-layers N] [--lm-hidden N] [--lm-heads N]\n"
               "                         [--lm-kv-heads N] [--lm-intermediate N] OUTDIR\n"
               "writes OUTDIR/tiny-lm/ and OUTDIR/tiny-codec/ (config.json, model.safetensors)\n"
               "  --force            replace files that exist with other contents\n"
               "  --lm-layers N      language model layers (default 2)\n"
               "  --lm-hidden N      hidden size (default 64; a multiple of --lm-heads)\n"
               "  --lm-heads N       attention heads (default 4; head size = hidden / heads)\n"
               "  --lm-kv-heads N    key/value heads (default 2; divides --lm-heads)\n"
               "  --lm-intermediate N  MLP size (default 128)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool force = false;
  std::string out_dir;
  mstar::tools::LmShape shape;
  const std::pair<const char*, int64_t*> dimensions[] = {
      {"--lm-layers", &shape.layers},
      {"--lm-hidden", &shape.hidden},
      {"--lm-heads", &shape.heads},
      {"--lm-kv-heads", &shape.kv_heads},
      {"--lm-intermediate", &shape.intermediate}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    int64_t* dimension = nullptr;
    for (const auto& [flag, target] : dimensions) {
      if (arg == flag) dimension = target;
    }
    if (dimension != nullptr) {
      if (i + 1 == argc) return Usage((arg + " needs a value").c_str());
      char* end = nullptr;
      *dimension = std::strtoll(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || *dimension <= 0)
        return Usage((arg + " needs a positive integer, got '" + argv[i] + "'").c_str());
    } else if (arg == "--force") {
      force = true;
    } else if (arg == "-h" || arg == "--help") {
      Usage(nullptr);
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return Usage(("unknown option " + arg).c_str());
    } else if (out_dir.empty()) {
      out_dir = arg;
    } else {
      return Usage("more than one OUTDIR");
    }
  }
  if (out_dir.empty()) return Usage("missing OUTDIR");
  if (std::string problem = shape.Problem(); !problem.empty()) return Usage(problem.c_str());

  std::vector<PlannedFile> plan;
  for (const ModelFiles& model :
       {mstar::tools::BuildTinyLm(shape), mstar::tools::BuildTinyCodec()}) {
    fs::path dir = fs::path(out_dir) / model.name;
    plan.push_back({dir / "config.json",
                    std::vector<uint8_t>(model.config_json.begin(), model.config_json.end())});
    plan.push_back({dir / "model.safetensors", model.safetensors});
  }
  // Check every file before writing any, so a refusal leaves the directory as it was.
  bool refused = false;
  for (PlannedFile& file : plan) {
    std::vector<uint8_t> existing;
    if (!fs::exists(file.path)) continue;
    if (ReadAll(file.path, &existing) && existing == file.bytes) {
      file.unchanged = true;
    } else if (!force) {
      std::fprintf(stderr,
                   "make-tiny-weights: %s exists with other contents (--force replaces it)\n",
                   file.path.c_str());
      refused = true;
    }
  }
  if (refused) return 1;
  for (const PlannedFile& file : plan) {
    if (file.unchanged) {
      std::printf("unchanged %s (%zu bytes)\n", file.path.c_str(), file.bytes.size());
      continue;
    }
    std::string error;
    if (!WriteAtomically(file.path, file.bytes, &error)) {
      std::fprintf(stderr, "make-tiny-weights: %s\n", error.c_str());
      return 1;
    }
    std::printf("wrote %s (%zu bytes)\n", file.path.c_str(), file.bytes.size());
  }
  return 0;
}
