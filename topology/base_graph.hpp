// Finite-time consensus sequences with bounded degree: k-peer hyper-hypercube and Base-(k+1) graphs
// (Takezawa, Sato, Bao, Niwa, Yamada, "Beyond Exponential Graph: Communication-Efficient Topologies for
// Decentralized Learning via Finite-time Convergence", NeurIPS 2023).
//
// Every round is symmetric and doubly stochastic, no node talks to more than k peers in a round, and applying
// one period W_{period-1} ... W_0 turns any vector into its exact average (up to rounding).
#pragma once

#include "topology/graph.hpp"

namespace dbench::topology {

/// k-peer hyper-hypercube on n = f_0 f_1 ... f_{L-1} nodes with every factor 2 <= f_l <= k+1 (fewest
/// factors): write a node in mixed radix (f_0, ..., f_{L-1}); round l joins the f_l nodes that differ only in
/// digit l into a clique with weights 1/f_l, so after L rounds every digit has been averaged out.
///   n = 6, k = 2 (f = 3, 2):  round 0: {0,1,2} {3,4,5}   round 1: {0,3} {1,4} {2,5}
/// Throws GraphError(GraphInput::nodes, ...) when n has a prime factor above k+1.
GraphSequence hyper_hypercube(int n, int k);

/// Simple Base-(k+1) graph for any n: write n in base k+1, n = sum_l a_l (k+1)^{p_l} with p_0 > p_1 > ...,
/// and split the nodes into blocks V_l of a_l (k+1)^{p_l} nodes.
///   1. every block averages itself with its own hyper-hypercube;
///   2. step j = 0..L-2: each node of V_{>j} pairs with one node in each of V_j's a_j sub-blocks of
///   (k+1)^{p_j}
///      nodes, weight |V_j| / (a_j |V_{>=j}|) per pair, so V_{>j} moves to the average of V_{>=j};
///   3. from the round after its step, V_j re-averages each sub-block with a hyper-hypercube; every sub-block
///      lost the same mass, so V_j ends at the common average too.
///   n = 5, k = 1 (5 = 4 + 1):  rounds 0-1: hypercube on {0..3};  round 2: 4 -- 0 (w = 4/5);
///                              rounds 3-4: hypercube on {0..3} again (0 carried node 4's value in)
/// Period max_l rounds(V_l) + 1 + p_0 (a hyper-hypercube alone when n has no prime factor above k+1).
GraphSequence simple_base_graph(int n, int k);

/// Base-(k+1) graph: n = s r with s the largest divisor of n free of primes above k+1. When it is shorter
/// than the simple graph on n, r-node blocks {g r, ..., g r + r - 1} run a simple Base-(k+1) graph side by
/// side, then the s-node strided sets {c, c + r, c + 2r, ...} run a k-peer hyper-hypercube; otherwise the
/// simple graph.
///   n = 1008, k = 1: 16 blocks of 63 nodes (11 rounds), then 63 hypercubes of 16 nodes (4 rounds): 15 rounds
GraphSequence base_graph(int n, int k);

}  // namespace dbench::topology
