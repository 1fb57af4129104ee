// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// bench_report ROWS.jsonl RESULTS.json: prints the benchmark rows as one table and writes them as
// a JSON array of objects with keys name, figure, unit, baseline, ratio, target (and note, where
// a benchmark gave one: how sure its figure is).
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

std::string Number(const nlohmann::json& value) {
  if (!value.is_number()) return "-";
  std::ostringstream out;
  double v = value.get<double>();
  out << std::setprecision(v >= 100 ? 0 : 3) << std::fixed << v;
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: bench_report ROWS.jsonl RESULTS.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "bench_report: cannot read " << argv[1] << "\n";
    return 1;
  }
  nlohmann::json rows = nlohmann::json::array();
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '{') continue;
    try {
      rows.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      std::cerr << "bench_report: skipping a malformed row: " << e.what() << "\n";
    }
  }
  const std::vector<std::string> header = {"name",  "figure", "unit", "baseline",
                                           "ratio", "target", "note"};
  std::vector<std::vector<std::string>> table = {header};
  for (const auto& row : rows) {
    table.push_back({row.value("name", ""), Number(row["figure"]), row.value("unit", ""),
                     Number(row["baseline"]), Number(row["ratio"]), row.value("target", ""),
                     row.value("note", "")});
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& r : table) {
    for (size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], r[i].size());
  }
  for (const auto& r : table) {
    for (size_t i = 0; i < r.size(); ++i) {
      std::cout << std::left << std::setw(static_cast<int>(widths[i]) + 2) << r[i];
    }
    std::cout << "\n";
  }
  std::ofstream out(argv[2]);
  out << rows.dump(2) << "\n";
  if (!out) {
    std::cerr << "bench_report: cannot write " << argv[2] << "\n";
    return 1;
  }
  std::cout << "\n" << rows.size() << " rows written to " << argv[2] << "\n";
  return 0;
}
