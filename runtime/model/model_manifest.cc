// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The model manifest's schema, read table by table into a ModelSpec (model_validate.cc then
// cross-checks it). Over 600 lines as one idea: each [table]'s reader is short, and the walk
// reader (sections, inputs, edges), about half the file, shares the name, range and port helpers
// at the top with the others; a split would put the schema in two places.
#include "model/model_manifest.h"

#include <charconv>
#include <filesystem>
#include <regex>

#include "config/toml_reader.h"
#include "model/model_validate.h"
#include "model/overrides.h"

namespace mstar {
namespace {

namespace fs = std::filesystem;

bool IsName(const std::string& name) {
  static const std::regex pattern("[A-Za-z_][A-Za-z0-9_-]{0,63}");
  return std::regex_match(name, pattern);
}

// The message for a count outside [1, max].
std::string RangeMessage(int64_t value, int64_t max) {
  return value < 1 ? "must be at least 1" : "must be at most " + std::to_string(max);
}

// Reads the entries of a table of named tables ([nodes.<name>], ...), checking each name.
template <typename Body>
void ForEachNamed(TableReader& top, std::string_view key, Diagnostics& diagnostics, Body&& body) {
  const toml::table* table = top.Table(key, Presence::kOptional);
  if (table == nullptr) return;
  if (table->size() > kMaxManifestEntries) {
    diagnostics.push_back({LocationOf(*table, top.path()), std::string(key),
                           std::to_string(table->size()) + " entries; a model has at most " +
                               std::to_string(kMaxManifestEntries)});
    return;
  }
  for (const auto& [name, node] : *table) {
    std::string full = std::string(key) + "." + std::string(name.str());
    const toml::table* entry = node.as_table();
    if (entry == nullptr) {
      diagnostics.push_back({LocationOf(node, top.path()), full,
                             std::string("expected a table, found ") + TomlTypeName(node)});
      continue;
    }
    if (!IsName(std::string(name.str()))) {
      diagnostics.push_back(
          {LocationOf(node, top.path()), full,
           "names use letters, digits, '_' and '-' and start with a letter or '_'"});
      continue;
    }
    // "done" is where a partition's transitions end: a walk of that name could not be reached.
    if (key == "walks" && name.str() == kDoneWalk) {
      diagnostics.push_back({LocationOf(node, top.path()), full,
                             "'done' is reserved: a transition to it ends the partition"});
      continue;
    }
    TableReader reader(*entry, full, top.path(), &diagnostics);
    body(std::string(name.str()), *entry, reader);
    reader.Finish();
  }
}

// Checks that config, when present, is a table. The table itself is taken later by TakeConfigs.
std::shared_ptr<const ConfigTree> ReadConfig(TableReader& reader) {
  reader.Table("config", Presence::kOptional);
  return nullptr;
}

// Moves each [nodes|resources|tiers.NAME.config] table out of the document into its ConfigTree.
// Moved, not copied: toml++ drops source positions on copy, and a plugin's config errors must name
// the line. Runs once every reader is done with the document.
void TakeConfigs(toml::table& document, ModelSpec& model) {
  auto take = [&](std::string_view section, const std::string& name) {
    toml::table* config = document[section][name]["config"].as_table();
    return std::make_shared<ConfigTree>(config != nullptr ? std::move(*config) : toml::table{},
                                        model.path, std::string(section) + "." + name + ".config");
  };
  for (auto& [name, node] : model.nodes) node.config = take("nodes", name);
  for (auto& [name, resource] : model.resources) resource.config = take("resources", name);
  for (auto& [name, tier] : model.tiers) tier.config = take("tiers", name);
}

std::vector<std::string> ReadNames(TableReader& reader, std::string_view key,
                                   Diagnostics& diagnostics) {
  std::vector<std::string> out;
  const toml::array* array = reader.Array(key, Presence::kOptional);
  for (size_t i = 0; array != nullptr && i < array->size(); ++i) {
    const auto* name = (*array)[i].as_string();
    if (name == nullptr) {
      diagnostics.push_back({LocationOf((*array)[i], reader.path()),
                             reader.FullKey(key) + "[" + std::to_string(i) + "]",
                             "expected a name (string)"});
    } else {
      out.push_back(name->get());
    }
  }
  return out;
}

std::optional<DLDevice> ParseDevice(const std::string& text) {
  // std::regex recurses per character matched: a huge string is refused before it is matched.
  if (text.size() > 32) return std::nullopt;
  static const std::regex pattern("(cpu|cuda)(:([0-9]+))?");
  std::smatch m;
  if (!std::regex_match(text, m, pattern)) return std::nullopt;
  DLDevice device{m[1] == "cpu" ? kDLCPU : kDLCUDA, 0};
  if (m[3].matched) {
    const std::string digits = m[3];
    auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), device.device_id);
    if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  }
  if (device.device_type == kDLCPU && device.device_id != 0) return std::nullopt;  // one host
  return device;
}

// "node.port" -> {node, port}.
std::optional<std::pair<std::string, std::string>> SplitPort(const std::string& text) {
  size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == text.size()) return std::nullopt;
  return std::make_pair(text.substr(0, dot), text.substr(dot + 1));
}

class WalkReader {
 public:
  WalkReader(const std::string& path, Diagnostics& diagnostics)
      : path_(path), diagnostics_(diagnostics) {}

  // A walk's program (its run): sections_ and loops_ count what it holds.
  std::optional<SectionSpec> Run(const toml::node& node, const std::string& key) {
    sections_ = 0;
    loops_ = 0;
    return Section(node, key);
  }

  std::optional<SectionSpec> Section(const toml::node& node, const std::string& key) {
    if (++sections_ > kMaxManifestEntries) {
      if (sections_ == kMaxManifestEntries + 1) {
        Error(node, key,
              "more than " + std::to_string(kMaxManifestEntries) +
                  " sections in one walk; a walk has at most " +
                  std::to_string(kMaxManifestEntries));
      }
      return std::nullopt;
    }
    SectionSpec section;
    section.where = LocationOf(node, path_);
    if (const auto* name = node.as_string()) {
      section.kind = SectionSpec::Kind::kNode;
      section.node = name->get();
      return section;
    }
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      Error(node, key, "expected a node name or a table with sequence, parallel or loop");
      return std::nullopt;
    }
    TableReader reader(*table, key, path_, &diagnostics_);
    int kinds = table->contains("sequence") + table->contains("parallel") + table->contains("loop");
    if (kinds != 1) {
      Error(node, key, "a section has exactly one of sequence, parallel or loop");
      reader.Skip("sequence");
      reader.Skip("parallel");
      reader.Skip("loop");
      reader.Skip("body");
      reader.Skip("max_iterations");
      reader.Skip("max_iterations_param");
      return std::nullopt;
    }
    bool ok = table->contains("loop") ? Loop(reader, *table, key, section)
                                      : Group(reader, *table, section);
    ok = reader.Finish() && ok;
    return ok ? std::optional<SectionSpec>(std::move(section)) : std::nullopt;
  }

  void Inputs(TableReader& walk, WalkSpec& spec) {
    const toml::table* inputs = walk.Table("inputs", Presence::kOptional);
    if (inputs == nullptr) return;
    if (inputs->size() > kMaxManifestEntries) {
      Error(*inputs, walk.FullKey("inputs"),
            std::to_string(inputs->size()) + " inputs; a walk has at most " +
                std::to_string(kMaxManifestEntries));
      return;
    }
    for (const auto& [port, value] : *inputs) {
      std::string key = walk.FullKey("inputs") + ".\"" + std::string(port.str()) + "\"";
      auto target = SplitPort(std::string(port.str()));
      const auto* source = value.as_string();
      if (!target) {
        Error(value, key, "the key names a node input as \"node.input\"");
        continue;
      }
      if (source == nullptr) {
        Error(value, key,
              "expected \"request.NAME\", \"persisted.NAME\", \"stream.NAME\" or "
              "\"controller.NAME\"");
        continue;
      }
      auto from = SplitPort(source->get());
      WalkInputSpec input{target->first, target->second, WalkInputSpec::Source::kRequest, "",
                          LocationOf(value, path_)};
      if (from && from->first == "request") {
        input.source = WalkInputSpec::Source::kRequest;
      } else if (from && from->first == "persisted") {
        input.source = WalkInputSpec::Source::kPersisted;
      } else if (from && from->first == "stream") {
        input.source = WalkInputSpec::Source::kStream;
      } else if (from && from->first == "controller") {
        input.source = WalkInputSpec::Source::kController;
      } else {
        Error(value, key,
              "expected \"request.NAME\", \"persisted.NAME\", \"stream.NAME\" or "
              "\"controller.NAME\", found \"" +
                  source->get() + "\"");
        continue;
      }
      input.name = from->second;
      spec.inputs.push_back(std::move(input));
    }
  }

  void Edges(TableReader& walk, WalkSpec& spec) {
    const toml::array* edges = walk.Array("edges", Presence::kOptional);
    if (edges != nullptr && edges->size() > kMaxManifestEntries) {
      Error(*edges, walk.FullKey("edges"),
            std::to_string(edges->size()) + " edges; a walk has at most " +
                std::to_string(kMaxManifestEntries));
      return;
    }
    for (size_t i = 0; edges != nullptr && i < edges->size(); ++i) {
      std::string key = walk.FullKey("edges") + "[" + std::to_string(i) + "]";
      const toml::table* table = (*edges)[i].as_table();
      if (table == nullptr) {
        Error((*edges)[i], key,
              "expected a table { from = \"node.output\", to | persist | stream | emit = ... }");
        continue;
      }
      if (std::optional<EdgeSpec> edge = Edge(*table, key)) spec.edges.push_back(std::move(*edge));
    }
  }

 private:
  void Error(const toml::node& node, const std::string& key, const std::string& message) {
    diagnostics_.push_back({LocationOf(node, path_), key, message});
  }

  bool Group(TableReader& reader, const toml::table& table, SectionSpec& section) {
    bool sequence = table.contains("sequence");
    section.kind = sequence ? SectionSpec::Kind::kSequence : SectionSpec::Kind::kParallel;
    const char* member = sequence ? "sequence" : "parallel";
    const toml::array* items = reader.Array(member, Presence::kRequired);
    if (items == nullptr) return false;
    if (items->empty()) {
      reader.Error(member, "must list at least one section");
      return false;
    }
    bool ok = true;
    for (size_t i = 0; i < items->size(); ++i) {
      auto child = Section((*items)[i], reader.FullKey(member) + "[" + std::to_string(i) + "]");
      if (child) {
        section.children.push_back(std::move(*child));
      } else {
        ok = false;
      }
    }
    return ok;
  }

  bool Loop(TableReader& reader, const toml::table& table, const std::string& key,
            SectionSpec& section) {
    section.kind = SectionSpec::Kind::kLoop;
    bool ok = true;
    if (auto name = reader.String("loop", Presence::kRequired)) {
      if (!IsName(*name)) {
        reader.Error("loop", "a loop name uses letters, digits, '_' and '-'");
        ok = false;
      }
      section.loop = *name;
    } else {
      ok = false;
    }
    if (auto max = reader.Int("max_iterations", Presence::kRequired)) {
      if (*max < 1 || *max > kMaxLoopIterations) {
        reader.Error("max_iterations", RangeMessage(*max, kMaxLoopIterations));
        ok = false;
      }
      section.max_iterations = static_cast<uint32_t>(*max);
    } else {
      ok = false;
    }
    section.max_iterations_param =
        reader.String("max_iterations_param", Presence::kOptional).value_or("");
    const toml::node* body = table.get("body");
    reader.Skip("body");
    if (body == nullptr) {
      reader.Error("body", "missing required key (the loop's body section)");
      return false;
    }
    if (++loops_ > kMaxNestedLoops) {
      reader.Error("loop", "loops nest more than " + std::to_string(kMaxNestedLoops) +
                               " deep (a stop check names each loop around a node by one of " +
                               std::to_string(kMaxNestedLoops) + " bits)");
      return false;
    }
    auto child = Section(*body, key + ".body");
    --loops_;
    if (!child) return false;
    section.children.push_back(std::move(*child));
    return ok;
  }

  std::optional<EdgeSpec> Edge(const toml::table& table, const std::string& key) {
    TableReader reader(table, key, path_, &diagnostics_);
    EdgeSpec edge;
    edge.where = LocationOf(table, path_);
    bool ok = true;
    if (auto from = reader.String("from", Presence::kRequired)) {
      auto port = SplitPort(*from);
      if (!port) {
        reader.Error("from", "expected \"node.output\"");
        ok = false;
      } else {
        edge.from_node = port->first;
        edge.from_output = port->second;
      }
    } else {
      ok = false;
    }
    int targets = table.contains("to") + table.contains("persist") + table.contains("stream") +
                  table.contains("emit");
    if (targets != 1) {
      reader.Error("from", "an edge has exactly one of to, persist, stream or emit");
      ok = false;
    }
    if (auto to = reader.String("to", Presence::kOptional)) {
      auto port = SplitPort(*to);
      edge.kind = EdgeSpec::Kind::kNode;
      if (!port) {
        reader.Error("to", "expected \"node.input\"");
        ok = false;
      } else {
        edge.to_node = port->first;
        edge.to_input = port->second;
      }
    }
    if (auto persist = reader.String("persist", Presence::kOptional)) {
      edge.kind = EdgeSpec::Kind::kPersist;
      edge.name = *persist;
    }
    if (auto stream = reader.String("stream", Presence::kOptional)) {
      edge.kind = EdgeSpec::Kind::kStream;
      edge.name = *stream;
    }
    if (auto emit = reader.String("emit", Presence::kOptional)) {
      edge.kind = EdgeSpec::Kind::kEmit;
      edge.name = *emit;
      // The client's output name, which also names files (the CLI's audio outputs); "" is
      // the validator's "edge to nothing".
      if (!emit->empty() && !IsName(*emit)) {
        reader.Error("emit",
                     "an output name uses letters, digits, '_' and '-' and starts with "
                     "a letter or '_'");
        ok = false;
      }
    }
    const std::optional<std::string> modality = reader.String("modality", Presence::kOptional);
    edge.modality = modality.value_or(edge.kind == EdgeSpec::Kind::kEmit ? "raw" : "");
    if (modality && edge.kind != EdgeSpec::Kind::kEmit) {
      reader.Error("modality", "only emit edges have a modality");
      ok = false;
    } else if (modality && modality->empty()) {
      reader.Error("modality", "empty: leave it out for \"raw\"");
      ok = false;
    }
    edge.counts_tokens = reader.Bool("counts_tokens", Presence::kOptional).value_or(false);
    if (edge.counts_tokens && edge.kind != EdgeSpec::Kind::kEmit) {
      reader.Error("counts_tokens", "only emit edges count output tokens");
      ok = false;
    }
    if (auto rate = reader.Int("sample_rate", Presence::kOptional)) {
      if (edge.modality != "audio") {
        reader.Error("sample_rate", "only emit edges with modality \"audio\" have a sample rate");
        ok = false;
      } else if (*rate < 1 || *rate > kMaxSampleRate) {
        reader.Error("sample_rate", RangeMessage(*rate, kMaxSampleRate));
        ok = false;
      } else {
        edge.sample_rate = static_cast<uint32_t>(*rate);
      }
    }
    ok = reader.Finish() && ok;
    return ok ? std::optional<EdgeSpec>(std::move(edge)) : std::nullopt;
  }

  const std::string& path_;
  Diagnostics& diagnostics_;
  size_t sections_ = 0;  // in the walk being read
  size_t loops_ = 0;     // around the section being read
};

// Where table's value under key is written (at --set for an override); the table's place when
// the key is not there.
SourceLocation ValueLocation(const toml::table& table, std::string_view key,
                             const std::string& path) {
  const toml::node* value = table.get(key);
  return LocationOf(value != nullptr ? *value : table, path);
}

void ReadModelTable(TableReader& top, ModelSpec& model, Diagnostics& diagnostics) {
  const toml::table* table = top.Table("model", Presence::kRequired);
  if (table == nullptr) return;
  TableReader reader(*table, "model", top.path(), &diagnostics);
  const std::optional<std::string> name = reader.String("name", Presence::kRequired);
  model.name = name.value_or("");
  if (name && name->empty()) reader.Error("name", "empty: a model needs a name");
  model.description = reader.String("description", Presence::kOptional).value_or("");
  model.controller = reader.String("controller", Presence::kOptional).value_or("");
  model.prompt = reader.String("prompt", Presence::kOptional).value_or("prompt");
  model.checkpoint = reader.String("checkpoint", Presence::kOptional).value_or("");
  model.controller_where = ValueLocation(*table, "controller", top.path());
  model.checkpoint_where = ValueLocation(*table, "checkpoint", top.path());
  if (auto max = reader.Int("max_output_tokens", Presence::kOptional)) {
    if (*max < 1 || *max > kMaxOutputTokens)
      reader.Error("max_output_tokens", RangeMessage(*max, kMaxOutputTokens));
    model.max_output_tokens = static_cast<uint32_t>(*max);
  }
  reader.Finish();
}

// Reads the optional `device` key into *device; true when the key is there (valid or not).
bool ReadDevice(TableReader& r, DLDevice* device) {
  std::optional<std::string> text = r.String("device", Presence::kOptional);
  if (!text) return false;
  if (auto parsed = ParseDevice(*text)) {
    *device = *parsed;
  } else {
    r.Error("device", "expected \"cpu\", \"cuda\" or \"cuda:N\"");
  }
  return true;
}

void ReadParts(TableReader& top, ModelSpec& model, DLDevice default_device,
               Diagnostics& diagnostics) {
  ForEachNamed(top, "nodes", diagnostics,
               [&](const std::string& name, const toml::table& entry, TableReader& r) {
                 NodeSpec node{name,
                               r.String("plugin", Presence::kRequired).value_or(""),
                               ReadConfig(r),
                               ReadNames(r, "resources", diagnostics),
                               default_device,
                               LocationOf(entry, top.path()),
                               ValueLocation(entry, "resources", top.path())};
                 node.explicit_device = ReadDevice(r, &node.device);
                 model.nodes[name] = std::move(node);
               });
  ForEachNamed(top, "resources", diagnostics,
               [&](const std::string& name, const toml::table& entry, TableReader& r) {
                 ResourceSpec resource{name,
                                       r.String("plugin", Presence::kRequired).value_or(""),
                                       ReadConfig(r),
                                       ReadNames(r, "tiers", diagnostics),
                                       DLDevice{kDLCPU, 0},
                                       false,
                                       LocationOf(entry, top.path()),
                                       ValueLocation(entry, "tiers", top.path())};
                 resource.explicit_device = ReadDevice(r, &resource.device);
                 model.resources[name] = std::move(resource);
               });
  ForEachNamed(top, "tiers", diagnostics,
               [&](const std::string& name, const toml::table& entry, TableReader& r) {
                 model.tiers[name] =
                     TierSpec{name, r.String("plugin", Presence::kRequired).value_or(""),
                              ReadConfig(r), LocationOf(entry, top.path())};
               });
}

void ReadStreams(TableReader& top, ModelSpec& model, Diagnostics& diagnostics) {
  ForEachNamed(top, "streams", diagnostics,
               [&](const std::string& name, const toml::table& entry, TableReader& r) {
                 StreamSpec stream{name,
                                   r.String("to", Presence::kRequired).value_or(""),
                                   {},
                                   LocationOf(entry, top.path()),
                                   r.Where("to")};
                 const std::optional<std::string> given = r.String("policy", Presence::kRequired);
                 const std::string policy = given.value_or("");
                 // 0 when the key is missing or out of range (reported already).
                 auto positive = [&](std::string_view key) -> uint32_t {
                   std::optional<int64_t> v = r.Int(key, Presence::kRequired);
                   if (v && (*v < 1 || *v > 1000000)) r.Error(key, RangeMessage(*v, 1000000));
                   return v && *v >= 1 && *v <= 1000000 ? static_cast<uint32_t>(*v) : 0;
                 };
                 if (policy == "sliding_window") {
                   stream.policy.kind = ChunkPolicySpec::Kind::kSlidingWindow;
                   stream.policy.window = positive("window");
                   stream.policy.stride = positive("stride");
                   // Compared only when both were given well: a missing window is one problem.
                   if (stream.policy.window > 0 && stream.policy.stride > stream.policy.window)
                     r.Error("stride", "must not exceed window");
                 } else if (policy == "fixed") {
                   stream.policy.kind = ChunkPolicySpec::Kind::kFixed;
                   stream.policy.window = positive("size");
                   stream.policy.stride = stream.policy.window;
                 } else {
                   if (given) {  // (a missing one is reported already)
                     r.Error("policy", "unknown chunk policy '" + policy +
                                           "' (expected sliding_window or fixed)");
                   }
                   // The policy's keys belong to the policy meant: one problem, not also three
                   // unknown keys.
                   for (std::string_view key : {"window", "stride", "size"}) r.Skip(key);
                 }
                 model.streams[name] = std::move(stream);
               });
}

void ReadWalksAndPartitions(TableReader& top, ModelSpec& model, Diagnostics& diagnostics) {
  WalkReader walks(top.path(), diagnostics);
  ForEachNamed(top, "walks", diagnostics,
               [&](const std::string& name, const toml::table& entry, TableReader& r) {
                 WalkSpec walk;
                 walk.name = name;
                 walk.where = LocationOf(entry, top.path());
                 walk.partition = r.String("partition", Presence::kRequired).value_or("");
                 r.Skip("run");
                 if (const toml::node* run = entry.get("run")) {
                   if (auto section = walks.Run(*run, r.FullKey("run")))
                     walk.run = std::move(*section);
                 } else {
                   r.Error("run",
                           "missing required key (the walk's program: a node name or a section)");
                 }
                 walks.Inputs(r, walk);
                 walks.Edges(r, walk);
                 model.walks[name] = std::move(walk);
               });
  ForEachNamed(
      top, "partitions", diagnostics,
      [&](const std::string& name, const toml::table& entry, TableReader& r) {
        PartitionSpec partition;
        partition.name = name;
        partition.where = LocationOf(entry, top.path());
        partition.initial = r.String("initial", Presence::kRequired).value_or("");
        if (const toml::table* transitions = r.Table("transitions", Presence::kOptional)) {
          for (const auto& [from, to] : *transitions) {
            if (const auto* target = to.as_string()) {
              partition.transitions[std::string(from.str())] = target->get();
              partition.transition_where[std::string(from.str())] = LocationOf(to, top.path());
            } else {
              diagnostics.push_back({LocationOf(to, top.path()),
                                     r.FullKey("transitions") + "." + std::string(from.str()),
                                     "expected the next walk's name or \"done\""});
            }
          }
        }
        model.partitions[name] = std::move(partition);
      });
}

ModelParse FromTable(toml::table table, const std::string& path,
                     const std::vector<std::string>& overrides, const PluginRegistry* registry,
                     DLDevice default_device, Diagnostics diagnostics) {
  ModelParse out;
  out.diagnostics = std::move(diagnostics);
  ApplyOverrides(table, overrides, &out.diagnostics);
  ModelSpec model;
  model.path = path;
  model.base_dir = fs::path(path).parent_path().string();
  TableReader top(table, "", path, &out.diagnostics);
  top.Format(kModelManifestFormat, "model manifest");
  ReadModelTable(top, model, out.diagnostics);
  ReadParts(top, model, default_device, out.diagnostics);
  ReadStreams(top, model, out.diagnostics);
  ReadWalksAndPartitions(top, model, out.diagnostics);
  top.Finish();
  SortByLocation(&out.diagnostics);
  if (!out.diagnostics.empty()) return out;
  TakeConfigs(table, model);
  // The checks of the walks' order follow what the named controller chooses, when its plugin is
  // at hand.
  ValidateModel(model, &out.diagnostics,
                registry != nullptr ? ControllerChoicesOf(model, *registry) : ControllerChoices{});
  // Beside the graph's problems: the plugin names were read whole, whatever the graph's state.
  if (registry != nullptr) CheckModelPlugins(model, *registry, &out.diagnostics);
  if (out.diagnostics.empty()) out.model = std::move(model);
  return out;
}

}  // namespace

ModelParse ParseModelManifestText(std::string_view text, const std::string& path,
                                  const std::vector<std::string>& overrides,
                                  const PluginRegistry* registry, DLDevice default_device) {
  Diagnostics diagnostics;
  std::optional<toml::table> table = ParseTomlText(text, path, &diagnostics);
  if (!table) return ModelParse{std::nullopt, std::move(diagnostics)};
  return FromTable(std::move(*table), path, overrides, registry, default_device,
                   std::move(diagnostics));
}

ModelParse ParseModelManifestFile(const std::string& path,
                                  const std::vector<std::string>& overrides,
                                  const PluginRegistry* registry, DLDevice default_device) {
  Diagnostics diagnostics;
  std::optional<toml::table> table = ParseTomlFile(path, &diagnostics);
  if (!table) return ModelParse{std::nullopt, std::move(diagnostics)};
  return FromTable(std::move(*table), path, overrides, registry, default_device,
                   std::move(diagnostics));
}

}  // namespace mstar
