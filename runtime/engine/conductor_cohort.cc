// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The conductor's cohorts (cohort.h): which walks run as cohorts, joining, forming a cohort's
// columnar step, and settling it after its exec and after its stop check. Leaving a cohort is in
// conductor_cohort_leave.cc.
#include <algorithm>
#include <cstring>

#include "core/logging.h"
#include "device/device.h"
#include "engine/conductor.h"
#include "engine/conductor_pending.h"
#include "plugin/columnar.h"

namespace mstar {

uint64_t StepsRun(const Request& r) {
  uint64_t steps = r.steps;
  for (const PartitionRun& p : r.partitions) steps += p.member != nullptr ? p.member->steps : 0;
  return steps;
}

bool Conductor::CohortShape(const QueueKey& key, int walk_node) {
  const size_t index =
      static_cast<size_t>(key.node) * walks_.size() + static_cast<size_t>(key.walk);
  if (index >= cohort_shapes_.size()) cohort_shapes_.resize(index + 1, -1);
  if (cohort_shapes_[index] >= 0) return cohort_shapes_[index] == 1;
  const CompiledWalk& walk = *walks_[key.walk];
  const CompiledNode& node = walk.nodes()[walk_node];
  const bool loop = node.loops.size() == 1 && walk.sections()[node.loops[0]].parent == -1 &&
                    walk.sections()[node.loops[0]].children.size() == 1 &&
                    walk.sections()[walk.sections()[node.loops[0]].children[0]].node == walk_node;
  const bool one_step = node.loops.empty() && walk.nodes().size() == 1;
  bool shape = options_.cohorts && (loop || one_step) && engine_.RunsColumnar(key.node) &&
               !SplitsByCaptureKey(key);
  PluginInstance* controller = engine_.runtime().controller();
  const bool controller_encodes =
      controller != nullptr && controller->model()->encode_output != nullptr;
  std::vector<int> feeding(node.ports.size(), 0);
  for (const CompiledEdge& edge : node.edges) {
    const EdgeSpec::Kind kind = edge.spec->kind;
    if (kind == EdgeSpec::Kind::kNode) {
      shape = shape && edge.to_node == walk_node;
      if (edge.to_node == walk_node) ++feeding[static_cast<size_t>(edge.to_port)];
    } else if (kind == EdgeSpec::Kind::kEmit && controller_encodes) {
      shape = false;
    }
  }
  // In a loop every port is fed from exactly one self edge; a single step has no node edges.
  for (int fed : feeding) shape = shape && fed == (loop ? 1 : 0);
  cohort_shapes_[index] = shape ? 1 : 0;
  return shape;
}

Cohort* Conductor::CohortFor(const QueueKey& key, int walk_node) {
  for (const auto& cohort : cohorts_) {
    if (cohort->key.node == key.node && cohort->key.walk == key.walk &&
        cohort->members.size() < cohort->cap)
      return cohort.get();
  }
  auto cohort = std::make_unique<Cohort>();
  cohort->key = key;
  cohort->walk_node = walk_node;
  const CompiledWalk& walk = *walks_[key.walk];
  const CompiledNode& node = walk.nodes()[walk_node];
  if (node.loops.empty()) {  // a single step: every input comes from the walk
    for (size_t i = 0; i < node.ports.size(); ++i)
      cohort->feeds.push_back({node.ports[i].name, "", static_cast<int>(i)});
  } else {
    cohort->loop_section = node.loops[0];
    cohort->loop_name = walk.sections()[node.loops[0]].loop;
    for (const CompiledEdge& edge : node.edges) {
      if (edge.spec->kind != EdgeSpec::Kind::kNode) continue;
      cohort->feeds.push_back({node.ports[static_cast<size_t>(edge.to_port)].name,
                               edge.spec->from_output, edge.to_port});
    }
  }
  cohort->cap = CapFor(key);
  cohorts_.push_back(std::move(cohort));
  return cohorts_.back().get();
}

void Conductor::JoinCohort(Request& r, PartitionRun& p, const QueueKey& key, int walk_node) {
  Cohort* cohort = CohortFor(key, walk_node);
  std::unique_ptr<CohortMember> member;
  if (spare_members_.empty()) {
    member = std::make_unique<CohortMember>();
  } else {
    member = std::move(spare_members_.back());
    spare_members_.pop_back();
    const uint32_t stale_rows = member->stale_rows;  // rows of its earlier memberships
    *member = CohortMember{};
    member->stale_rows = stale_rows;
  }
  member->req = &r;
  member->partition = p.index;
  member->serial = ++cohort_serial_;
  member->index = cohort->members.size();
  member->limit = cohort->loop_section >= 0 ? p.run->limit(cohort->loop_section) : 1;
  member->ending = p.ending;
  member->info = WalkInfo(r, p);
  p.cohort = cohort;
  p.member = member.get();
  p.cohort_serial = member->serial;
  cohort->members.push_back(std::move(member));
  NoteWork();
}

bool Conductor::AnyCohortReady() const {
  return std::any_of(cohorts_.begin(), cohorts_.end(),
                     [](const std::unique_ptr<Cohort>& c) { return c->Ready(); });
}

bool Conductor::FormCohortBatch(BatchWork* work, Pending& pending) {
  Cohort* cohort = nullptr;
  for (size_t i = 0; i < cohorts_.size() && cohort == nullptr; ++i) {
    Cohort* candidate = cohorts_[(next_cohort_ + i) % cohorts_.size()].get();
    if (candidate->Ready()) {
      cohort = candidate;
      next_cohort_ = (next_cohort_ + i + 1) % cohorts_.size();
    }
  }
  if (cohort == nullptr) return false;
  // Members whose first step is due take their inputs from their walk now.
  std::vector<std::pair<Request*, std::string>> failures;
  for (const auto& m : cohort->members) {
    if (m->dispatched || !Cohort::Formable(*m)) continue;
    PartitionRun& p = m->req->partitions[static_cast<size_t>(m->partition)];
    m->joined = NewTensorMap();
    Status dispatched = p.run->Dispatch(cohort->walk_node, m->joined.get(), &m->ticket);
    if (!dispatched.ok()) {
      failures.emplace_back(m->req, dispatched.message());
      continue;
    }
    m->dispatched = true;
    ++p.steps_pending;
  }
  for (auto& [r, message] : failures) Fail(*r, message, pending);
  // A recycled batch keeps its buffers (Recycle cleared it).
  std::unique_ptr<ColumnarBatch> batch = work->batch.columnar != nullptr
                                             ? std::move(work->batch.columnar)
                                             : std::make_unique<ColumnarBatch>();
  batch->cohort = cohort;
  batch->loop_name = cohort->loop_section >= 0 ? cohort->loop_name.c_str() : nullptr;
  std::vector<CohortMember*>& rows = cohort_rows_;
  rows.clear();
  for (const auto& m : cohort->members) {
    if (m->dispatched && Cohort::Formable(*m)) rows.push_back(m.get());
  }
  if (rows.empty() || !StackCohortInputs(*cohort, rows, *batch, pending)) {
    batch->Clear();
    work->batch.columnar = std::move(batch);  // kept for the next try
    return false;
  }
  const size_t n = rows.size();
  // Filled by appending: nothing is written twice. A row's info is copied (and linked to its
  // counters) only when this batch object last held another membership there
  // (ColumnarBatch::info_serials) or its counters moved.
  batch->rows.clear();
  batch->iterations.clear();
  batch->limits.clear();
  batch->iterations.reserve(n);
  batch->limits.reserve(n);
  batch->rows.reserve(n);
  batch->infos.resize(n);
  batch->info_serials.resize(n, 0);  // 0: no membership
  batch->info_ptrs.reserve(n);       // (emptied by Clear)
  const bool relink = batch->CountersMoved();
  for (size_t k = 0; k < n; ++k) {
    CohortMember* m = rows[k];
    ColumnarRow& row = batch->rows.emplace_back();
    row.member = m;
    row.req = m->req;
    row.serial = m->serial;
    batch->iterations.push_back(m->formed++);
    batch->limits.push_back(m->limit);
    if (batch->info_serials[k] != m->serial) {
      batch->infos[k] = m->info;
      batch->info_serials[k] = m->serial;
      batch->LinkInfo(k);
    } else if (relink) {
      batch->LinkInfo(k);
    }
    batch->info_ptrs.push_back(&batch->infos[k]);
    ++m->in_flight;
  }
  // (The per-request records stay in the spare lists.)
  work->batch.Reset(cohort->key.node, engine_.runtime().node(cohort->key.node)->name,
                    cohort->key.walk, walks_[cohort->key.walk]->name());
  work->batch.columnar = std::move(batch);
  work->origins.clear();
  work->sequence = ++batch_sequence_;
  work->key = cohort->key;
  work->planned = false;
  work->finished = false;
  cohort->executing = true;
  ++batches_in_flight_;
  ++stats_.batches;
  ++stats_.cohort_batches;
  uint32_t& largest = *StatsFor(cohort->key.node).largest;
  largest = std::max(largest, static_cast<uint32_t>(n));
  return true;
}

bool Conductor::StackCohortInputs(Cohort& cohort, std::vector<CohortMember*>& rows,
                                  ColumnarBatch& batch, Pending& pending) {
  const std::string node = "node '" + engine_.runtime().node(cohort.key.node)->name + "': ";
  while (!rows.empty()) {
    std::vector<std::pair<CohortMember*, std::string>> odd;
    const Status stacked = TryStackCohortInputs(cohort, rows, batch, &odd);
    if (stacked.ok()) return true;
    batch.inputs->Clear();
    batch.input_rows->Clear();
    // Rare (a plugin whose rows change shape between steps, a controller whose inputs differ by
    // prompt): the requests whose rows do not stack with the others' fail and the rest step
    // without them; when no row stands out, every request fails. The requests are all settled
    // before any fails (a failing request leaves the cohort, and its members with it).
    if (odd.empty()) {
      for (CohortMember* m : rows) odd.emplace_back(m, stacked.message());
    }
    std::vector<std::pair<Request*, std::string>> failing;
    for (const auto& entry : odd) {
      Request* r = entry.first->req;
      const bool listed =
          std::any_of(failing.begin(), failing.end(), [&](const auto& f) { return f.first == r; });
      if (!listed) failing.emplace_back(r, node + entry.second);
    }
    std::erase_if(rows, [&](CohortMember* m) {
      return std::any_of(failing.begin(), failing.end(),
                         [&](const auto& f) { return f.first == m->req; });
    });
    for (auto& [r, why] : failing) Fail(*r, why, pending);
  }
  return false;
}

Status Conductor::TryStackCohortInputs(Cohort& cohort, const std::vector<CohortMember*>& rows,
                                       ColumnarBatch& batch,
                                       std::vector<std::pair<CohortMember*, std::string>>* odd) {
  const auto n = static_cast<uint32_t>(rows.size());
  // The common case: every row is the same row of the last step's outputs (no member joined or
  // left since), so each input is the last step's output tensor whole, shared rather than copied.
  bool whole = cohort.last != nullptr && n == cohort.last_count;
  for (uint32_t k = 0; whole && k < n; ++k)
    whole = rows[k]->joined == nullptr && rows[k]->src == static_cast<int32_t>(k);
  if (whole && ShareLastOutputs(cohort, batch)) return Status::Ok();
  for (const CohortFeed& feed : cohort.feeds) {
    // The previous step's output feeding this port, found once for every row.
    const mstar_tensor_t* last = nullptr;
    RowOffsets last_rows;
    if (cohort.last != nullptr && !feed.from_output.empty()) {
      const mstar_tensor_map::Entry* e = cohort.last->tensors->Find(feed.from_output);
      if (e != nullptr && !e->tensors.empty()) {
        last = e->tensors[0];
        last_rows = RowOffsets(*cohort.last->rows, feed.from_output, 0);
      }
    }
    std::vector<RowSlice> slices(n);
    for (uint32_t k = 0; k < n; ++k) {
      CohortMember& m = *rows[k];
      RowSlice& slice = slices[k];
      if (m.joined != nullptr) {
        const mstar_tensor_map::Entry* e = m.joined->Find(feed.port);
        if (e != nullptr && e->tensors.size() == 1 && e->tensors[0]->dl.ndim >= 1) {
          slice = {e->tensors[0], 0, e->tensors[0]->dl.shape[0]};
        }
      } else if (last != nullptr && m.src >= 0) {
        const auto src = static_cast<uint32_t>(m.src);
        slice = {last, last_rows.begin(src), last_rows.count(src)};
      }
      if (slice.tensor == nullptr) {
        odd->emplace_back(&m, "input '" + feed.port + "' of request " + std::to_string(m.req->id) +
                                  " is missing or not one tensor of at least one dimension");
      }
    }
    if (!odd->empty()) return InvalidArgument("cohort rows missing an input");
    const Status stacked =
        StackRows(slices, feed.port, "input", batch.inputs.get(), batch.input_rows.get());
    if (stacked.ok()) continue;
    for (uint32_t k : UnstackableRows(slices)) {
      odd->emplace_back(rows[k], "input '" + feed.port + "' of request " +
                                     std::to_string(rows[k]->req->id) +
                                     " is not a contiguous host tensor, or differs in dtype or "
                                     "dimensions after the first from the other requests'");
    }
    return stacked;
  }
  return Status::Ok();
}

bool Conductor::ShareLastOutputs(const Cohort& cohort, ColumnarBatch& batch) {
  bool shared = true;
  for (const CohortFeed& feed : cohort.feeds) {
    const mstar_tensor_map::Entry* e = cohort.last->tensors->Find(feed.from_output);
    shared = e != nullptr && e->tensors.size() == 1;  // if not, the general path says why
    if (!shared) break;
    Result<mstar_tensor_t*> tensor = ShareTensor(e->tensors[0]);
    shared = tensor.ok();
    if (!shared) break;
    batch.inputs->AppendHost(feed.port, tensor.value());
    const mstar_tensor_map::Entry* offsets = cohort.last->rows->Find(feed.from_output);
    if (offsets == nullptr || offsets->tensors.empty()) continue;
    Result<mstar_tensor_t*> rows = ShareTensor(offsets->tensors[0]);
    shared = rows.ok();
    if (!shared) break;
    batch.input_rows->AppendHost(feed.port, rows.value());
  }
  if (!shared) {
    batch.inputs->Clear();
    batch.input_rows->Clear();
  }
  return shared;
}

void Conductor::KeepFeeds(Cohort& cohort, const std::shared_ptr<ColumnarOutputs>& outputs) {
  // A kept record no one else holds (steps share its tensors, not it) is reused in place; one
  // still held (a step's whole outputs, kept when a share failed) is left to its holders.
  if (cohort.last == nullptr || cohort.last.use_count() != 1) {
    cohort.last = std::make_shared<ColumnarOutputs>();
  }
  ColumnarOutputs& kept = *cohort.last;
  kept.tensors->Clear();
  kept.rows->Clear();
  auto share = [](const mstar_tensor_map& from, const std::string& name, mstar_tensor_map& into) {
    const mstar_tensor_map::Entry* entry = from.Find(name);
    if (entry == nullptr || into.Find(name) != nullptr) return true;
    for (const mstar_tensor_t* tensor : entry->tensors) {
      Result<mstar_tensor_t*> shared = ShareTensor(tensor);
      if (!shared.ok()) return false;
      into.AppendHost(name, shared.value());
    }
    return true;
  };
  for (const CohortFeed& feed : cohort.feeds) {
    if (feed.from_output.empty()) continue;
    if (!share(*outputs->tensors, feed.from_output, *kept.tensors) ||
        !share(*outputs->rows, feed.from_output, *kept.rows)) {
      cohort.last = outputs;  // kept whole: nothing is lost, only held longer
      return;
    }
  }
}

// Inline: it runs once per row and step, in one of two loops.
inline void Conductor::SettleExecRow(const ColumnarRow& row) {
  CohortMember& m = *row.member;
  if (m.serial != row.serial) return;  // the membership ended (its request may have too)
  if (row.out < 0) {
    // The finish decides whether the failure counts, or hands a deferred row's member (its first
    // inputs still held) to the per-request path.
    m.blocked = true;
    return;
  }
  m.joined.reset();  // its first inputs were consumed by this step
  m.src = row.out;
  ++m.steps;
  ++stats_.steps;
}

void Conductor::TakeCohortExec(BatchWork& work) {
  ColumnarBatch& c = *work.batch.columnar;
  Cohort& cohort = *c.cohort;
  cohort.executing = false;
  const uint32_t ran = c.ran();
  if (ran == 0) return;
  // The next step's inputs; none when every member left while the step ran (a cancel, say):
  // a cohort no one is in holds nothing (DropMember).
  if (cohort.loop_section >= 0 && !cohort.members.empty()) {
    KeepFeeds(cohort, c.outputs);
    cohort.last_count = ran;
  }
  NodeBatchStats& node = *StatsFor(work.batch.node).batches;
  ++node.batches;
  node.request_steps += ran;
  node.largest = std::max(node.largest, ran);
}

bool Conductor::CohortAfterExec(BatchWork& work, BatchWork* next, bool finish_follows) {
  // The finish that follows on this thread takes the exec's results too, in its one lock pass;
  // until then the cohort counts as executing, so no step of it is formed.
  if (finish_follows) return false;
  Pending pending;
  bool formed = false;
  bool posted = false;
  Spare spare = SpareFor(next);
  {
    std::unique_lock<std::mutex> lock(mu_);
    ColumnarBatch& c = *work.batch.columnar;
    TakeCohortExec(work);
    ++c.cohort->unchecked;
    for (const ColumnarRow& row : c.rows) SettleExecRow(row);
    WakeForBeneficiaries(c);
    c.rows_settled = true;
    NoteWork();
    formed = FormNext(next, spare, pending);
    posted = Post(pending);
    WakeScheduler(lock);
  }
  if (next != nullptr && !formed) GiveBackSpare(std::move(spare));
  if (posted) Deliver();
  return formed;
}

void Conductor::CohortEdges(const Cohort& cohort, const ColumnarBatch& c,
                            std::vector<CohortEdgeRows>* edges) {
  edges->clear();
  const CompiledNode& node =
      walks_[static_cast<size_t>(cohort.key.walk)]->nodes()[cohort.walk_node];
  for (const CompiledEdge& edge : node.edges) {
    if (edge.spec->kind == EdgeSpec::Kind::kNode) continue;
    CohortEdgeRows& out = edges->emplace_back();
    out.spec = edge.spec;
    if (c.outputs == nullptr) continue;
    const mstar_tensor_map::Entry* entry = c.outputs->tensors->Find(edge.spec->from_output);
    if (entry == nullptr || entry->tensors.empty()) continue;
    out.tensor = entry->tensors[0];
    out.rows = RowOffsets(*c.outputs->rows, edge.spec->from_output, 0);
  }
}

void Conductor::RouteCohortRow(Request& r, CohortMember& m, const ColumnarRow& row,
                               const std::vector<CohortEdgeRows>& edges, Pending& pending) {
  const auto out = static_cast<uint32_t>(row.out);
  bool streamed = false;
  for (const CohortEdgeRows& edge : edges) {
    const EdgeSpec& spec = *edge.spec;
    if (edge.tensor == nullptr) {
      return Fail(r,
                  "node '" + spec.from_node + "' produced no output '" + spec.from_output +
                      "' for the edge at " + EdgeWhere(spec),
                  pending);
    }
    uint64_t rows = static_cast<uint64_t>(edge.rows.count(out));
    if (spec.kind == EdgeSpec::Kind::kPersist) {
      TensorList& value = r.persisted[spec.name];
      value.Clear();
      Result<mstar_tensor_t*> shared = ShareTensor(edge.tensor);
      if (!shared.ok())
        return Fail(r, "persisting '" + spec.name + "': " + shared.status().message(), pending);
      NarrowToRows(shared.value(), edge.rows.begin(out), edge.rows.count(out));
      value.Add(shared.value());
      continue;
    }
    if (spec.kind == EdgeSpec::Kind::kStream) {
      mstar_tensor_t view;
      RowView(*edge.tensor, edge.rows.begin(out), edge.rows.count(out), &view, &view_dims_);
      Status appended = r.streams[spec.name]->Append(view);
      if (!appended.ok())
        return Fail(r, "stream '" + spec.name + "': " + appended.message(), pending);
      streamed = true;
      continue;
    }
    // An emit, encoded after the lock with the step's other rows (Pending::Rows), from host
    // memory only.
    if (!IsHostDevice(edge.tensor->dl.device)) return Fail(r, DeviceEmitError(spec), pending);
    const uint64_t all = rows;
    rows = r.RowsToSend(spec.counts_tokens, all);
    if (rows > 0 || all == 0) {  // otherwise nothing of it is within the limit
      pending.rows[edge.emit_list].rows.push_back(
          {r.stream.get(), r.id, edge.rows.begin(out), static_cast<int64_t>(rows)});
    }
    if (spec.counts_tokens) {
      r.tokens += rows;
      // The output limit ends the partition, also when another partition's outputs reached it
      // (as on the per-request path).
      if (r.tokens >= r.token_limit) EndPartition(r, m);
    }
  }
  if (streamed) FeedConsumers(r, pending);
}

void Conductor::EndPartition(Request& r, CohortMember& m) {
  m.ending = true;
  r.partitions[static_cast<size_t>(m.partition)].ending = true;
}

bool Conductor::CohortAfterFinish(BatchWork& work, BatchWork* next) {
  Pending pending;
  Spare spare = SpareFor(next);
  std::unique_lock<std::mutex> lock(mu_);
  ColumnarBatch& c = *work.batch.columnar;
  // Settled after its exec (AfterExec without a finish following), or taken here with the finish.
  const bool settle = !c.rows_settled;
  if (settle) {
    TakeCohortExec(work);
  } else {
    --c.cohort->unchecked;
  }
  Reuse(spare_rows_, &pending.rows);
  CohortEdges(*c.cohort, c, &cohort_edges_);
  for (CohortEdgeRows& edge : cohort_edges_) {
    if (edge.spec->kind != EdgeSpec::Kind::kEmit || edge.tensor == nullptr) continue;
    edge.emit_list = pending.rows.size();
    Pending::Rows& list = pending.rows.emplace_back();
    list.outputs = c.outputs;
    list.tensor = edge.tensor;
    list.spec = edge.spec;
    list.rows.reserve(c.rows.size());
  }
  if (settle) WakeForBeneficiaries(c);  // before the rows below may end memberships
  for (size_t k = 0; k < c.rows.size(); ++k) {
    const ColumnarRow& row = c.rows[k];
    if (settle) SettleExecRow(row);
    Request& r = *row.req;
    CohortMember& m = *row.member;
    if (m.serial != row.serial) {  // the membership ended: the row counts on the request
      --m.stale_rows;              // (the record may be freed once none is left)
      --r.in_flight;
      ++r.wasted_steps;  // run ahead of a stop, or for a request that ended meanwhile
      ++stats_.wasted_steps;
      MaybeFinalize(r, pending);
      continue;
    }
    --m.in_flight;
    if (row.failed()) {
      Fail(r,
           "node '" + work.batch.node_name + "' in walk '" + work.batch.walk +
               "': " + c.ErrorOf(row),
           pending);
      MaybeFinalize(r, pending);
      continue;
    }
    if (row.deferred) {
      HandOff(r, r.partitions[static_cast<size_t>(m.partition)], c, k, pending);
      MaybeFinalize(r, pending);
      continue;
    }
    ++m.confirmed;
    if ((row.stop_mask & MSTAR_STOP_PARTITION) != 0) EndPartition(r, m);
    RouteCohortRow(r, m, row, cohort_edges_, pending);
    // (A failure in routing ended the membership: r is no longer active.)
    if (!r.active() || (row.stop_mask & 1u) != 0 || m.confirmed >= m.limit || m.ending) {
      if (r.active()) LeaveCohort(r, r.partitions[static_cast<size_t>(m.partition)], pending);
      MaybeFinalize(r, pending);
    }
  }
  c.rows_settled = true;
  return BatchDone(next, spare, pending, lock);
}

}  // namespace mstar
