#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace strata {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000}) {
      for (int64_t grain : {1, 4, 16}) {  // ranges must start on grain boundaries
        std::vector<std::atomic<int>> hits(n);
        pool.parallel_for(
            n,
            [&](int64_t b, int64_t e, int) {
              if (grain > 1 && b % grain != 0) ADD_FAILURE() << "unaligned begin " << b;
              for (int64_t i = b; i < e; ++i) hits[i]++;
            },
            grain);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "i=" << i;
      }
    }
  }
}

TEST(ThreadPoolTest, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallel_for(4, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      pool.parallel_for(10, [&](int64_t b2, int64_t e2, int) { total += e2 - b2; });
    }
  });
  EXPECT_EQ(total.load(), 40);
}

TEST(ThreadPoolTest, ManyBackToBackJobs) {
  ThreadPool pool(2);
  int64_t sum = 0;
  std::vector<int64_t> partial(2);
  for (int rep = 0; rep < 2000; ++rep) {
    partial.assign(2, 0);
    pool.parallel_for(100, [&](int64_t b, int64_t e, int t) { partial[t] += e - b; });
    sum += partial[0] + partial[1];
  }
  EXPECT_EQ(sum, 2000 * 100);
}

}  // namespace
}  // namespace strata
