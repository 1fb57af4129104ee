// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Engine::Decl: a step as the node's resources see it (mstar_step_decl_t), over some requests of
// a batch: members of a per-request batch (engine_step.cc) or rows of a columnar one
// (engine_columnar.cc). The declaration points into the vectors it holds: it is valid until the
// next Build.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"

namespace mstar {

struct Engine::Decl {
  std::vector<size_t> members;  // indices into batch.requests, or into its columnar rows
  std::vector<mstar_request_id_t> ids;
  std::vector<uint32_t> tokens;
  std::vector<const mstar_request_info_t*> infos;
  std::vector<const mstar_tensor_t*> input_tokens;  // borrowed: per member, null when unknown
  std::vector<uint8_t> succeeded;                   // CommitResources' per-member flags
  mstar_step_decl_t decl{};

  // Rows a leased bucket holds beyond the step's members (0 when the step runs eagerly).
  static uint32_t PaddedRows(const ExecutingBatch& batch, size_t members) {
    uint32_t bucket_rows = batch.slot >= 0 ? batch.lease.rows + batch.lease.padding : 0;
    return bucket_rows > members ? bucket_rows - static_cast<uint32_t>(members) : 0;
  }

  // Over members of a per-request batch.
  void Build(const ExecutingBatch& batch, std::vector<size_t> chosen) {
    members = std::move(chosen);
    ids.clear();
    tokens.clear();
    infos.clear();
    input_tokens.clear();
    for (size_t m : members) {
      ids.push_back(batch.requests[m].id);
      tokens.push_back(batch.requests[m].num_tokens);
      infos.push_back(&batch.requests[m].info);
      input_tokens.push_back(batch.requests[m].input_tokens);
    }
    Finish(batch);
  }

  // Keeps only the members for which keep(member) holds, in order (their ids, tokens and infos
  // with them), and declares those.
  template <class Pred>
  void Keep(const ExecutingBatch& batch, Pred keep) {
    size_t kept = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      if (!keep(members[i])) continue;
      members[kept] = members[i];
      ids[kept] = ids[i];
      tokens[kept] = tokens[i];
      infos[kept] = infos[i];
      input_tokens[kept] = input_tokens[i];
      ++kept;
    }
    members.resize(kept);
    ids.resize(kept);
    tokens.resize(kept);
    infos.resize(kept);
    input_tokens.resize(kept);
    Finish(batch);
  }

  // Over rows of a columnar batch, with the tokens prepare gave each (row_tokens[i] for rows[i])
  // and their ids (row_input_tokens[i], borrowed; null when unknown).
  void BuildRows(const ExecutingBatch& batch, const std::vector<uint32_t>& rows,
                 const std::vector<uint32_t>& row_tokens,
                 const std::vector<const mstar_tensor_t*>& row_input_tokens) {
    members.assign(rows.begin(), rows.end());
    tokens = row_tokens;
    input_tokens = row_input_tokens;
    ids.clear();
    infos.clear();
    for (uint32_t k : rows) {
      infos.push_back(batch.columnar->info_ptrs[k]);
      ids.push_back(infos.back()->request_id);
    }
    Finish(batch);
  }

 private:
  void Finish(const ExecutingBatch& batch) {
    decl = mstar_step_decl_t{sizeof(mstar_step_decl_t),
                             MSTAR_ABI_MINOR,
                             batch.node_name.c_str(),
                             batch.walk.c_str(),
                             static_cast<uint32_t>(members.size()),
                             batch.slot,
                             ids.data(),
                             tokens.data(),
                             infos.data(),
                             0,
                             PaddedRows(batch, members.size()),
                             input_tokens.data()};
  }
};

// What a step's resources planned: one view per resource, in the node's order.
struct ResourceViews {
  std::vector<TensorMapPtr> maps;
  std::vector<mstar_resource_view_t> views;

  void AttachTo(mstar_step_t& step) const {
    step.num_resources = static_cast<uint32_t>(views.size());
    step.resources = views.empty() ? nullptr : views.data();
  }
};

// How admission outcomes are recorded on the batch: on its requests (per-request steps) or on
// its columnar rows. Members are Decl::members entries.
class Engine::AdmitMarks {
 public:
  virtual ~AdmitMarks() = default;
  virtual bool Active(size_t member) const = 0;
  virtual void Unservable(size_t member, const std::string& message) = 0;
  virtual void NotReady(size_t member, const mstar_admit_t& admit, const std::string& resource) = 0;
};

}  // namespace mstar
