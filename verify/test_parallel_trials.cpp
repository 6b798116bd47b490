// Checks of parallel trials: order independent of threads, exceptions carried out.
#include <doctest/doctest.h>

#include <omp.h>
#include <stdexcept>

#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;

TEST_CASE("trial results come back in trial order with the same values for 1 and 2 threads") {
  const std::uint64_t seed = attnlab::testing::test_seed(5);
  auto run = [seed](int threads) {
    omp_set_num_threads(threads);
    return run_trials<double>(100, "test", [seed](std::size_t i) {
      Rng rng(derive_seed(seed, i));
      double s = 0;
      for (int k = 0; k < 1000 + static_cast<int>(i); ++k) s += rng.normal();
      return s;
    });
  };
  const auto one = run(1), two = run(2);
  CHECK(one == two);
  CHECK(one.size() == 100);
}

TEST_CASE("an exception in a trial is rethrown after the loop") {
  CHECK_THROWS_WITH_AS(run_trials<int>(10, "test", [](std::size_t i) -> int {
                         if (i == 7) throw std::runtime_error("trial 7 failed");
                         return static_cast<int>(i);
                       }),
                       "trial 7 failed", std::runtime_error);
}
