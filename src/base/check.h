// Invariant checks. STRATA_CHECK is always on; STRATA_DCHECK only in debug
// builds (use it inside hot loops). A failed check prints file:line, the
// condition and any streamed context, then aborts: it marks a bug in Strata,
// never bad input (bad input is a Status).
//
//   STRATA_CHECK(n <= capacity) << "n=" << n << " capacity=" << capacity;
#pragma once

#include <sstream>

namespace strata::internal {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & stream` type-check with a streamed tail.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace strata::internal

#define STRATA_CHECK(cond)                 \
  (cond) ? (void)0                         \
         : ::strata::internal::Voidify() & \
               ::strata::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#ifdef NDEBUG
#define STRATA_DCHECK(cond) \
  while (false) STRATA_CHECK(cond)
#else
#define STRATA_DCHECK(cond) STRATA_CHECK(cond)
#endif
