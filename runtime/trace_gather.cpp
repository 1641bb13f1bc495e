#include "runtime/trace_gather.hpp"

#include <array>

namespace dbench::runtime {

std::vector<std::vector<StepTrace>> gather_traces(Communicator& comm, int rank, int workers,
                                                  std::span<const StepTrace> mine) {
  constexpr std::size_t kFields = 7;
  std::array<double, 1> longest{static_cast<double>(mine.size())};
  comm.allreduce(std::span<double>(longest), ReduceOp::max);
  const auto per_worker = static_cast<std::size_t>(longest[0]);
  std::vector<double> table(static_cast<std::size_t>(workers) * per_worker * kFields, 0.0);
  for (std::size_t r = 0; r < mine.size(); ++r) {
    double* out = &table[(static_cast<std::size_t>(rank) * per_worker + r) * kFields];
    const StepTrace& s = mine[r];
    out[0] = static_cast<double>(s.iteration);
    out[1] = s.compute_s;
    out[2] = s.comm_s;
    out[3] = s.total_s;
    out[4] = static_cast<double>(s.bytes_sent);
    out[5] = s.loss;
    out[6] = s.lr;
  }
  comm.allreduce(std::span<double>(table), ReduceOp::sum);
  std::vector<std::vector<StepTrace>> all(static_cast<std::size_t>(workers));
  for (std::size_t w = 0; w < all.size(); ++w) {
    for (std::size_t r = 0; r < per_worker; ++r) {
      const double* in = &table[(w * per_worker + r) * kFields];
      all[w].push_back({static_cast<std::int64_t>(in[0]), in[1], in[2], in[3],
                        static_cast<std::int64_t>(in[4]), in[5], in[6]});
    }
  }
  return all;
}

}  // namespace dbench::runtime
