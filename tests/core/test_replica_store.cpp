#include <doctest/doctest.h>

#include <cstdint>

#include "core/errors.hpp"
#include "core/replica_store.hpp"

namespace core = dbench::core;

TEST_CASE("core::replica_store: rows are zeroed, cache-line aligned and padded to whole lines") {
  core::ReplicaStore store(5, core::ParamLayout({{"w", 20}, {"b", 3}}));
  CHECK(store.param_count() == 23);
  CHECK(store.stride() == 32);
  for (std::size_t i = 0; i < 5; ++i) {
    for (const core::ReplicaView v : {store.params(), store.grads(), store.momentum(), store.mix_target()}) {
      CHECK(reinterpret_cast<std::uintptr_t>(v.row_data(i)) % 64 == 0);
      for (float x : v.row(i)) {
        CHECK(x == 0.0f);
      }
    }
  }
}

TEST_CASE("core::replica_store: tensor views follow the layout") {
  core::ReplicaStore store(3, core::ParamLayout({{"w", 20}, {"b", 3}}));
  const auto& t = store.layout().tensors();
  REQUIRE(t.size() == 2);
  CHECK(t[1].name == "b");
  CHECK(t[1].offset == 20);
  store.tensor(2, 1)[0] = 7.0f;
  CHECK(store.params().row_data(2)[20] == 7.0f);
  CHECK(store.tensor(2, 1).size() == 3);
  CHECK_THROWS_AS(store.tensor(3, 0), core::ShapeError);
  CHECK_THROWS_AS(store.tensor(0, 2), core::ShapeError);
}

TEST_CASE("core::replica_store: swap_mixed exchanges parameters and mixing target without copying") {
  core::ReplicaStore store(2, core::ParamLayout({{"w", 4}}));
  float* params = store.params().data;
  float* mixed = store.mix_target().data;
  store.mix_target().row(1)[3] = 2.5f;
  store.swap_mixed();
  CHECK(store.params().data == mixed);
  CHECK(store.mix_target().data == params);
  CHECK(store.params().row(1)[3] == 2.5f);
}

TEST_CASE("core::replica_store: swapping before anything was mixed is an error and keeps the parameters") {
  core::ReplicaStore store(2, core::ParamLayout({{"w", 4}}));
  store.replica(1)[2] = 1.5f;
  float* params = store.params().data;
  CHECK_THROWS_AS(store.swap_mixed(), core::ShapeError);
  CHECK(store.params().data == params);
  CHECK(store.replica(1)[2] == 1.5f);
  // Asked for later, the gradients and the mixing target are zeroed and apart from the parameters.
  CHECK(store.grads().row(1)[2] == 0.0f);
  CHECK(store.mix_target().data != params);
}

TEST_CASE("core::replica_store: broadcast_params copies one replica to all") {
  core::ReplicaStore store(4, core::ParamLayout({{"w", 5}}));
  for (std::size_t c = 0; c < 5; ++c) {
    store.replica(2)[c] = static_cast<float>(c) + 0.5f;
  }
  store.broadcast_params(2);
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t c = 0; c < 5; ++c) {
      CHECK(store.replica(i)[c] == static_cast<float>(c) + 0.5f);
    }
  }
  CHECK_THROWS_AS(store.broadcast_params(4), core::ShapeError);
}

TEST_CASE("core::replica_store: broadcast_momentum copies one replica's momentum and leaves parameters") {
  core::ReplicaStore store(3, core::ParamLayout({{"w", 4}}));
  for (std::size_t c = 0; c < 4; ++c) {
    store.momentum().row(1)[c] = static_cast<float>(c) - 1.5f;
  }
  store.broadcast_momentum(1);
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t c = 0; c < 4; ++c) {
      CHECK(store.momentum().row(i)[c] == static_cast<float>(c) - 1.5f);
      CHECK(store.replica(i)[c] == 0.0f);
    }
  }
  CHECK_THROWS_AS(store.broadcast_momentum(3), core::ShapeError);
}

TEST_CASE("core::replica_store: rejects empty shapes and bad layouts") {
  CHECK_THROWS_AS(core::ReplicaStore(0, core::ParamLayout({{"w", 4}})), core::ShapeError);
  CHECK_THROWS_AS(core::ReplicaStore(2, core::ParamLayout()), core::ShapeError);
  CHECK_THROWS_AS(core::ParamLayout({{"w", 4}, {"w", 2}}), core::ValueError);
  CHECK_THROWS_AS(core::ParamLayout({{"w", 0}}), core::ValueError);
}
