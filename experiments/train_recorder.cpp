#include "experiments/train_recorder.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace dbench::experiments {
namespace {

/// Length-prefixed fields, so that CSV text survives a checkpoint unchanged.
std::string pack(const std::vector<std::string>& fields) {
  std::string out;
  for (const auto& f : fields) {
    out += std::to_string(f.size()) + '\n' + f;
  }
  return out;
}

/// A whole non-negative decimal number; throws std::invalid_argument naming `what` otherwise.
std::int64_t whole_number(std::string_view text, const std::string& what) {
  std::int64_t value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw std::invalid_argument(
        fmt::format("{}: expected a whole number, got '{}'", what, text.substr(0, 32)));
  }
  return value;
}

std::vector<std::string> unpack(const std::string& text) {
  std::vector<std::string> fields;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t eol = text.find('\n', pos);
    const std::string what = fmt::format("field {}", fields.size());
    if (eol == std::string::npos) {
      throw std::invalid_argument(what + ": no length");
    }
    const auto length =
        static_cast<std::uint64_t>(whole_number(std::string_view(text).substr(pos, eol - pos), what));
    if (length > text.size() - eol - 1) {
      throw std::invalid_argument(
          fmt::format("{}: {} bytes but only {} left", what, length, text.size() - eol - 1));
    }
    fields.push_back(text.substr(eol + 1, length));
    pos = eol + 1 + length;
  }
  return fields;
}

std::string without_header(const std::string& csv) {
  const std::size_t eol = csv.find('\n');
  return eol == std::string::npos ? std::string() : csv.substr(eol + 1);
}

}  // namespace

void TrainRecorder::on_trace(const std::vector<std::vector<runtime::StepTrace>>& per_worker) {
  // trace.csv has the simulator's columns, one row per iteration: the synchronous step goes at the pace of
  // its slowest worker, so total_s and compute_s are maxima over workers, comm_s the rest of total_s (the
  // communication no worker hid), bytes_sent the mean per worker. trace_worker.csv keeps every worker's
  // row.
  std::vector<TraceRow> rows;
  std::vector<WorkerTraceRow> worker_rows;
  const std::size_t iterations = per_worker.empty() ? 0 : per_worker.front().size();
  for (std::size_t r = 0; r < iterations; ++r) {
    TraceRow row;
    row.iteration = per_worker.front()[r].iteration;
    const auto at = static_cast<std::size_t>(row.iteration);
    row.graph = at < graphs_.size() ? graphs_[at] : "";
    for (std::size_t w = 0; w < per_worker.size(); ++w) {
      const runtime::StepTrace& s = per_worker[w][r];
      row.compute_s = std::max(row.compute_s, s.compute_s);
      row.total_s = std::max(row.total_s, s.total_s);
      row.bytes_sent += static_cast<double>(s.bytes_sent);
      worker_rows.push_back({s.iteration, static_cast<std::int64_t>(w), s.compute_s, s.comm_s, s.total_s,
                             static_cast<double>(s.bytes_sent), s.loss, s.lr});
    }
    row.comm_s = row.total_s - row.compute_s;
    row.bytes_sent /= static_cast<double>(per_worker.size());
    rows.push_back(std::move(row));
  }
  trace_ = trace_csv(rows);
  worker_trace_ = worker_trace_csv(worker_rows);
}

std::string TrainRecorder::checkpoint_state() const {
  return pack({metrics_csv(), schedule_csv(), replica_norms_csv(), std::to_string(gossip_messages())});
}

void TrainRecorder::restore_state(const std::string& state) {
  const auto fields = unpack(state);
  if (fields.size() != 4) {
    throw std::invalid_argument(fmt::format("{} fields where 4 were written", fields.size()));
  }
  metrics_prefix_ = fields[0];
  schedule_prefix_ = fields[1];
  norms_prefix_ = fields[2];
  messages_prefix_ = whole_number(fields[3], "gossip messages");
  // The graphs of the iterations before the checkpoint, for trace.csv: schedule.csv's rows, one per
  // iteration from 0, in order.
  std::istringstream lines(without_header(schedule_prefix_));
  std::int64_t row = 0;
  for (std::string line; std::getline(lines, line); ++row) {
    const auto comma = line.find(',');
    const std::int64_t iteration =
        whole_number(std::string_view(line).substr(0, comma), fmt::format("schedule row {}", row));
    if (comma == std::string::npos || iteration != row) {
      throw std::invalid_argument(fmt::format("schedule row {}: expected iteration {},GRAPH", row, row));
    }
    set_graph(iteration, line.substr(comma + 1));
  }
}

std::string TrainRecorder::metrics_csv() const {
  return metrics_prefix_.empty() ? recorder_.metrics_csv()
                                 : metrics_prefix_ + without_header(recorder_.metrics_csv());
}

std::string TrainRecorder::replica_norms_csv() const {
  return norms_prefix_.empty() ? recorder_.replica_norms_csv()
                               : norms_prefix_ + without_header(recorder_.replica_norms_csv());
}

std::string TrainRecorder::schedule_csv() const {
  return schedule_prefix_.empty() ? recorder_.schedule_csv()
                                  : schedule_prefix_ + without_header(recorder_.schedule_csv());
}

}  // namespace dbench::experiments
