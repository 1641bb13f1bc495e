#include "validation/calibration.hpp"

#include <fmt/core.h>

#include <stdexcept>

namespace dbench::validation {
namespace {

nlohmann::json line_json(const LineFit& line) {
  return {{"intercept", line.intercept},
          {"slope", line.slope},
          {"residuals", line.residuals},
          {"rms_residual", line.rms_residual},
          {"max_relative_residual", line.max_relative_residual},
          {"r_squared", line.r_squared}};
}

LineFit line_from(const nlohmann::json& j) {
  LineFit line;
  line.intercept = j.at("intercept").get<double>();
  line.slope = j.at("slope").get<double>();
  line.residuals = j.at("residuals").get<std::vector<double>>();
  line.rms_residual = j.at("rms_residual").get<double>();
  line.max_relative_residual = j.at("max_relative_residual").get<double>();
  line.r_squared = j.at("r_squared").get<double>();
  return line;
}

nlohmann::json link_json(const LinkCalibration& link) {
  return {{"pattern", link.pattern},
          {"bytes", link.bytes},
          {"seconds", link.seconds},
          {"alpha_s", link.fit.alpha_s},
          {"bandwidth_Bps", link.fit.bandwidth_Bps},
          {"fit", line_json(link.fit.line)}};
}

LinkCalibration link_from(const nlohmann::json& j) {
  LinkCalibration link;
  link.pattern = j.at("pattern").get<std::string>();
  link.bytes = j.at("bytes").get<std::vector<double>>();
  link.seconds = j.at("seconds").get<std::vector<double>>();
  link.fit.alpha_s = j.at("alpha_s").get<double>();
  link.fit.bandwidth_Bps = j.at("bandwidth_Bps").get<double>();
  link.fit.line = line_from(j.at("fit"));
  return link;
}

std::string residual_lines(const std::vector<double>& x, const std::vector<double>& y, const LineFit& line,
                           const char* x_name) {
  std::string out;
  for (std::size_t i = 0; i < x.size() && i < line.residuals.size(); ++i) {
    out +=
        fmt::format("#   {} {:>10g}: measured {:.4e} s, fitted {:.4e} s, residual {:+.2f} %\n", x_name, x[i],
                    y[i], y[i] - line.residuals[i], y[i] != 0.0 ? 100.0 * line.residuals[i] / y[i] : 0.0);
  }
  return out;
}

}  // namespace

const ModelCalibration& model_calibration(const Calibration& calibration, const std::string& model) {
  std::string known;
  for (const auto& m : calibration.models) {
    if (m.model == model) {
      return m;
    }
    known += (known.empty() ? "" : ", ") + m.model;
  }
  throw std::invalid_argument(fmt::format(
      "calibration: model '{}' was not calibrated (calibrated: {}); run dbench calibrate --models {}", model,
      known.empty() ? "none" : known, model));
}

AlphaBetaFit anchored_fit(const AlphaBetaFit& fit, double bytes, double seconds) {
  AlphaBetaFit anchored = fit;
  if (bytes > 0.0 && seconds > fit.alpha_s) {
    anchored.bandwidth_Bps = bytes / (seconds - fit.alpha_s);
  }
  return anchored;
}

AlphaBetaFit anchored_fit(const LinkCalibration& link, double bytes) {
  for (std::size_t i = 0; i < link.bytes.size() && i < link.seconds.size(); ++i) {
    if (link.bytes[i] == bytes) {
      return anchored_fit(link.fit, bytes, link.seconds[i]);
    }
  }
  return link.fit;
}

double fit_seconds(const AlphaBetaFit& fit, double bytes) {
  return fit.alpha_s + bytes / fit.bandwidth_Bps;
}

double port_latency_s(const AlphaBetaFit& exchange) {
  return exchange.alpha_s / 2.0;
}

std::string platform_toml(const Calibration& c, const ModelCalibration& m) {
  // A single worker has no links to measure; its platform's links carry no traffic and take the all-reduce's
  // fit only to hold valid values.
  const bool links_measured = !c.exchange.bytes.empty();
  const bool link_in_loop = links_measured && m.link_in_loop.bandwidth_Bps > 0.0;
  const AlphaBetaFit link = link_in_loop     ? m.link_in_loop
                            : links_measured ? anchored_fit(c.exchange, m.parameter_bytes)
                                             : c.allreduce.fit;
  const bool in_loop = m.allreduce_in_loop_s > 0.0;
  AlphaBetaFit allreduce = in_loop ? anchored_fit(c.allreduce.fit, m.parameter_bytes, m.allreduce_in_loop_s)
                                   : anchored_fit(c.allreduce, m.parameter_bytes);
  if (in_loop && m.allreduce_in_loop_s <= c.allreduce.fit.alpha_s) {
    // Paid below the micro-benchmark's latency: half of it is latency, half the message's transfer.
    allreduce.alpha_s = m.allreduce_in_loop_s / 2.0;
    allreduce.bandwidth_Bps = m.parameter_bytes / allreduce.alpha_s;
  }
  // What the anchoring changed, for the comments.
  const auto anchored = [&](const LinkCalibration& l, const AlphaBetaFit& fit) {
    return fit.bandwidth_Bps == l.fit.bandwidth_Bps
               ? std::string()
               : fmt::format(
                     " (the line through the {:g} bytes of {}'s parameters as measured: {:.4e} s, where "
                     "the fit gives {:.4e} s)",
                     m.parameter_bytes, m.model, fit.alpha_s + m.parameter_bytes / fit.bandwidth_Bps,
                     l.fit.alpha_s + m.parameter_bytes / l.fit.bandwidth_Bps);
  };
  std::string out;
  out += fmt::format(
      "# Platform of {} workers ({}) on {} for {}, fitted by dbench calibrate from micro-benchmarks on the\n"
      "# real workers. One node of {} GPUs (the workers), its intra-node links fitted to concurrent "
      "exchanges.\n",
      c.workers, c.device, c.host, m.model, c.workers);
  out += "base = \"custom\"\n";
  out += fmt::format("gpus_per_node = {}\n", c.workers);
  out += fmt::format(
      "# What the step below was fitted to: dbench simulate warns where it times another model or batch "
      "here.\n"
      "fitted_model = \"{}\"\n",
      m.model);
  if (m.step_between) {
    out += fmt::format("fitted_batch_per_gpu = {:g}\n", m.step_batch);
  }
  if (m.step_between) {
    out += fmt::format(
        "# The step at batch {:g} per worker (the config's) lies between two timed batches: the line "
        "through\n"
        "# their steps, {:.4e} s there, where the line through all of them (below) gives {:.4e} s.\n",
        m.step_batch, m.step_between->seconds_at(m.step_batch, m.flops_per_sample),
        m.fit.seconds_at(m.step_batch, m.flops_per_sample));
  }
  out += fmt::format("gpu_flops_per_s = {:.6e}\n", m.platform_step().flops_per_s);
  out +=
      "# The step's fixed cost, the one-double all-reduce every iteration of dbench train pays included.\n";
  out += fmt::format("iteration_overhead_s = {:.6e}\n", m.platform_step().overhead_s);
  if (c.workers_per_core > 1 || m.gradient_step_overhead_s > 0.0) {
    out += fmt::format(
        "# {} workers pinned to one core take turns on it: each waits for the others' steps before its "
        "exchange,\n# this many of its own (the ring loop's communication against its step over the "
        "batches).\nshared_core_turns = {:.6e}\n"
        "# A centralized step's separate update, over the ring's fused step, as dbench train's loops took "
        "them.\ngradient_step_overhead_s = {:.6e}\n",
        c.workers_per_core, m.shared_core_turns, m.gradient_step_overhead_s);
  }
  if (c.cores > 0 && c.workers_per_core > 1) {
    out += fmt::format(
        "# The workers are pinned round-robin to {} cores (rank r on the r mod {}-th).\ncores_per_node = "
        "{}\n",
        c.cores, c.cores, c.cores);
  }
  if (m.same_core_relief > 0.0) {
    out += fmt::format(
        "# The steps a gossiping worker does not wait for in-neighbours on its own core: the ring's loop\n"
        "# communicated more than the exponential graph's (the median over the batches of their difference, "
        "over\n# the step and their shares of such in-neighbours apart).\n"
        "same_core_relief = {:.6e}\n",
        m.same_core_relief);
  }
  if (m.same_core_relief_whole) {
    out += fmt::format(
        "# The steps spared a worker whose in-neighbours all share its core: the one-peer graph's loop, "
        "whose\n"
        "# rounds alternate between an in-neighbour on the other core and one on the worker's own, waited "
        "that\n"
        "# much less beyond its simulated exchange (the median over the batches).\n"
        "same_core_relief_whole = {:.6e}\n",
        *m.same_core_relief_whole);
  }
  out +=
      link_in_loop
          ? fmt::format(
                "# A message between two workers crosses two GPU ports: latency alpha / 2 on each. The "
                "link is the one\n# whose simulated ring exchange is the {:.4e} s the ring's loop paid "
                "beyond the turns (the\n# concurrent exchanges alone give {:.4e} s per message).\n",
                m.ring_exchange_in_loop_s,
                fit_seconds(anchored_fit(c.exchange, m.parameter_bytes), m.parameter_bytes))
      : links_measured
          ? fmt::format(
                "# A message between two workers crosses two GPU ports: latency alpha / 2 on each{}.\n",
                anchored(c.exchange, link))
          : "# One worker: no link was measured; the links carry no traffic and take the all-reduce's fit.\n";
  out += fmt::format("intra_node_latency_s = {:.6e}\n", port_latency_s(link));
  if (link_in_loop && m.round_latency_s > 0.0) {
    out += fmt::format(
        "# Every gossip round's fixed cost (the loss's all-reduce, the wait for the slowest): with these "
        "links "
        "it gives\n# the ring's and the one-peer graph's exchanges as their loops paid them.\n"
        "collective_latency_s = {:.6e}\n",
        m.round_latency_s);
  }
  out += fmt::format("intra_node_bandwidth_Bps = {:.6e}\n", link.bandwidth_Bps);
  out +=
      "# Centralized steps pay the measured all-reduce (the mean of a gradient as the workers take it), not "
      "a\n"
      "# ring simulated over the links above";
  out += in_loop
             ? fmt::format(
                   " (the line through the all-reduce as dbench train's centralized loop paid it, {:.4e} s:\n"
                   "# its communication less the turns of workers sharing a core, the median over batches; "
                   "the widening\n# and the summing count; the micro-benchmark alone gives {:.4e} s)",
                   m.allreduce_in_loop_s,
                   fit_seconds(anchored_fit(c.allreduce, m.parameter_bytes), m.parameter_bytes))
             : anchored(c.allreduce, allreduce);
  out += ".\n";
  out += fmt::format("allreduce_latency_s = {:.6e}\n", allreduce.alpha_s);
  out += fmt::format("allreduce_bandwidth_Bps = {:.6e}\n", allreduce.bandwidth_Bps);
  out += "# One node: the NIC and fabric carry no traffic; they only need valid values.\n";
  out += "fabric = \"star\"\n";
  out += fmt::format("nic_bandwidth_Bps = {:.6e}\n", link.bandwidth_Bps);
  out += "nic_latency_s = 0.0\n";
  out += fmt::format("switch_bandwidth_Bps = {:.6e}\n", link.bandwidth_Bps);
  out += "switch_latency_s = 0.0\n";
  out += "\n# Fits (least squares, weighted by 1/measured^2), their inputs and residuals:\n";
  out += fmt::format("# compute {}: seconds = {:.4e} + batch * {:.4e} FLOP / {:.4e} FLOP/s (R^2 {:.4f})\n",
                     m.model, m.fit.overhead_s, m.flops_per_sample, m.fit.flops_per_s, m.fit.line.r_squared);
  out += residual_lines(m.batches, m.seconds, m.fit.line, "batch");
  const bool loops = m.ring_loop_seconds.size() == m.batches.size();
  out += loops
             ? "# (the step: the compute of dbench train's ring loop per iteration, as its trace splits it)\n"
             : "# (the step in the training loop: a step and a communication round - a ring's gossip, or a "
               "single\n# worker's all-reduce - less the round alone)\n";
  for (std::size_t i = 0; i < m.batches.size() && i < m.seconds_alone.size() && i < m.gossip_seconds.size() &&
                          i < m.kernel_seconds.size();
       ++i) {
    out += fmt::format(
        "#   batch {:>10g}: step timed back to back {:.4e} s, in a gossip loop {:.4e} s, round alone "
        "{:.4e} s",
        m.batches[i], m.seconds_alone[i], m.kernel_seconds[i], m.gossip_seconds[i]);
    out +=
        loops && i < m.ring_loop_comm_s.size() && i < m.allreduce_loop_comm_s.size()
            ? fmt::format(
                  ";\n#     dbench train: ring {:.4e} s (compute {:.4e}, communication {:.4e}), all-reduce "
                  "{:.4e} s (compute {:.4e}, communication {:.4e}) per iteration\n",
                  m.ring_loop_seconds[i], m.ring_loop_compute_s[i], m.ring_loop_comm_s[i],
                  m.allreduce_loop_seconds[i], m.allreduce_loop_compute_s[i], m.allreduce_loop_comm_s[i])
            : std::string("\n");
  }
  out += fmt::format("# per-iteration all-reduce of one double (in the overhead above): {:.4e} s\n",
                     c.small_allreduce_s);
  for (const LinkCalibration* l : {&c.exchange, &c.point_to_point, &c.allreduce}) {
    if (l->bytes.empty()) {
      continue;
    }
    out += fmt::format("# {}: seconds = {:.4e} + bytes / {:.4e} B/s (R^2 {:.4f})\n", l->pattern,
                       l->fit.alpha_s, l->fit.bandwidth_Bps, l->fit.line.r_squared);
    out += residual_lines(l->bytes, l->seconds, l->fit.line, "bytes");
  }
  return out;
}

nlohmann::json to_json(const Calibration& c) {
  nlohmann::json models = nlohmann::json::array();
  for (const auto& m : c.models) {
    models.push_back({{"model", m.model},
                      {"flops_per_sample", m.flops_per_sample},
                      {"parameter_bytes", m.parameter_bytes},
                      {"batches", m.batches},
                      {"seconds", m.seconds},
                      {"kernel_seconds", m.kernel_seconds},
                      {"ring_loop_seconds", m.ring_loop_seconds},
                      {"allreduce_loop_seconds", m.allreduce_loop_seconds},
                      {"ring_loop_compute_s", m.ring_loop_compute_s},
                      {"ring_loop_comm_s", m.ring_loop_comm_s},
                      {"allreduce_loop_compute_s", m.allreduce_loop_compute_s},
                      {"allreduce_loop_comm_s", m.allreduce_loop_comm_s},
                      {"allreduce_in_loop_s", m.allreduce_in_loop_s},
                      {"gradient_step_overhead_s", m.gradient_step_overhead_s},
                      {"shared_core_turns", m.shared_core_turns},
                      {"one_peer_loop_comm_s", m.one_peer_loop_comm_s},
                      {"exponential_loop_comm_s", m.exponential_loop_comm_s},
                      {"same_core_relief", m.same_core_relief},
                      {"round_latency_s", m.round_latency_s},
                      {"ring_exchange_in_loop_s", m.ring_exchange_in_loop_s},
                      {"link_in_loop_alpha_s", m.link_in_loop.alpha_s},
                      {"link_in_loop_bandwidth_Bps", m.link_in_loop.bandwidth_Bps},
                      {"seconds_alone", m.seconds_alone},
                      {"gossip_seconds", m.gossip_seconds},
                      {"overhead_s", m.fit.overhead_s},
                      {"flops_per_s", m.fit.flops_per_s},
                      {"fit", line_json(m.fit.line)}});
    if (m.same_core_relief_whole) {
      models.back()["same_core_relief_whole"] = *m.same_core_relief_whole;
    }
    if (m.speed_step_s > 0.0) {
      models.back()["speed_step_s"] = m.speed_step_s;
      models.back()["speed_step_batch"] = m.speed_step_batch;
    }
    if (m.step_between) {
      models.back()["step_between"] = {{"batch", m.step_batch},
                                       {"overhead_s", m.step_between->overhead_s},
                                       {"flops_per_s", m.step_between->flops_per_s}};
    }
  }
  nlohmann::json readings = nlohmann::json::array();
  for (const auto& r : c.speed_readings) {
    readings.push_back({{"after", r.after}, {"seconds", r.seconds}});
    if (r.step_seconds > 0.0) {
      readings.back()["step_seconds"] = r.step_seconds;
    }
  }
  return {{"workers", c.workers},
          {"workers_per_core", c.workers_per_core},
          {"cores", c.cores},
          {"host", c.host},
          {"device", c.device},
          {"models", models},
          {"point_to_point", link_json(c.point_to_point)},
          {"exchange", link_json(c.exchange)},
          {"allreduce", link_json(c.allreduce)},
          {"small_allreduce_s", c.small_allreduce_s},
          {"reference_kernel_s", c.reference_kernel_s},
          {"speed_readings", readings},
          {"drift_tolerance", c.drift_tolerance}};
}

Calibration calibration_from_json(const nlohmann::json& j) {
  Calibration c;
  c.workers = j.at("workers").get<int>();
  c.workers_per_core = j.value("workers_per_core", 1);
  c.cores = j.value("cores", 0);
  c.host = j.at("host").get<std::string>();
  c.device = j.value("device", std::string("cpu-worker"));
  for (const auto& mj : j.at("models")) {
    ModelCalibration m;
    m.model = mj.at("model").get<std::string>();
    m.flops_per_sample = mj.at("flops_per_sample").get<double>();
    m.parameter_bytes = mj.value("parameter_bytes", 0.0);
    m.batches = mj.at("batches").get<std::vector<double>>();
    m.seconds = mj.at("seconds").get<std::vector<double>>();
    m.kernel_seconds = mj.value("kernel_seconds", m.seconds);
    m.ring_loop_seconds = mj.value("ring_loop_seconds", std::vector<double>{});
    m.allreduce_loop_seconds = mj.value("allreduce_loop_seconds", std::vector<double>{});
    m.allreduce_in_loop_s = mj.value("allreduce_in_loop_s", 0.0);
    m.ring_loop_compute_s = mj.value("ring_loop_compute_s", std::vector<double>{});
    m.ring_loop_comm_s = mj.value("ring_loop_comm_s", std::vector<double>{});
    m.allreduce_loop_compute_s = mj.value("allreduce_loop_compute_s", std::vector<double>{});
    m.allreduce_loop_comm_s = mj.value("allreduce_loop_comm_s", std::vector<double>{});
    m.gradient_step_overhead_s = mj.value("gradient_step_overhead_s", 0.0);
    m.shared_core_turns = mj.value("shared_core_turns", 0.0);
    m.one_peer_loop_comm_s = mj.value("one_peer_loop_comm_s", std::vector<double>{});
    m.exponential_loop_comm_s = mj.value("exponential_loop_comm_s", std::vector<double>{});
    m.same_core_relief = mj.value("same_core_relief", 0.0);
    if (mj.contains("same_core_relief_whole")) {
      m.same_core_relief_whole = mj.at("same_core_relief_whole").get<double>();
    }
    m.round_latency_s = mj.value("round_latency_s", 0.0);
    m.ring_exchange_in_loop_s = mj.value("ring_exchange_in_loop_s", 0.0);
    m.link_in_loop.alpha_s = mj.value("link_in_loop_alpha_s", 0.0);
    m.link_in_loop.bandwidth_Bps = mj.value("link_in_loop_bandwidth_Bps", 0.0);
    m.speed_step_s = mj.value("speed_step_s", 0.0);
    m.speed_step_batch = mj.value("speed_step_batch", 0);
    m.seconds_alone = mj.value("seconds_alone", std::vector<double>{});
    m.gossip_seconds = mj.value("gossip_seconds", std::vector<double>{});
    m.fit.overhead_s = mj.at("overhead_s").get<double>();
    m.fit.flops_per_s = mj.at("flops_per_s").get<double>();
    m.fit.line = line_from(mj.at("fit"));
    if (mj.contains("step_between")) {
      const auto& between = mj.at("step_between");
      m.step_batch = between.at("batch").get<double>();
      ComputeFit fit;
      fit.overhead_s = between.at("overhead_s").get<double>();
      fit.flops_per_s = between.at("flops_per_s").get<double>();
      fit.line.intercept = fit.overhead_s;
      fit.line.slope = m.flops_per_sample / fit.flops_per_s;
      fit.line.r_squared = 1.0;
      m.step_between = fit;
    }
    c.models.push_back(std::move(m));
  }
  c.point_to_point = link_from(j.at("point_to_point"));
  c.exchange = link_from(j.at("exchange"));
  c.allreduce = link_from(j.at("allreduce"));
  c.small_allreduce_s = j.at("small_allreduce_s").get<double>();
  c.reference_kernel_s = j.value("reference_kernel_s", 0.0);
  for (const auto& r : j.value("speed_readings", nlohmann::json::array())) {
    c.speed_readings.push_back(
        {r.at("after").get<std::string>(), r.at("seconds").get<double>(), r.value("step_seconds", 0.0)});
  }
  c.drift_tolerance = j.value("drift_tolerance", 0.0);
  return c;
}

}  // namespace dbench::validation
