// Multi-head attention parameter counts.
#include "attnlab/theory/attention_params.hpp"

#include <stdexcept>
#include <string>

namespace attnlab {

bool head_count_allowed(const AttentionShape& s) {
  return s.h >= 1 && s.d_k >= 0 && s.d_v >= 0 && s.d_k % s.h == 0 && s.d_v % s.h == 0;
}

std::int64_t parameter_count(const AttentionShape& s) {
  if (!head_count_allowed(s))
    throw std::invalid_argument("parameter_count: h (= " + std::to_string(s.h) + ") does not divide d_k (= " +
                                std::to_string(s.d_k) + ") and d_v (= " + std::to_string(s.d_v) + ")");
  const std::int64_t extra = s.bias ? 1 : 0;
  std::int64_t count = 0;
  for (std::int64_t head = 0; head < s.h; ++head) {
    count += 2 * (s.d_e + extra) * (s.d_k / s.h);  // W_Q_i, W_K_i
    count += (s.d_e + extra) * (s.d_v / s.h);      // W_V_i
  }
  return count + (s.d_v + extra) * s.d_e;  // W_O
}

double remark11_count(const AttentionShape& s) {
  const double de = static_cast<double>(s.d_e), dk = static_cast<double>(s.d_k), dv = static_cast<double>(s.d_v),
               h = static_cast<double>(s.h);
  return (2 * (de * dk / h) + de * dv / h) * h + dv * de;
}

}  // namespace attnlab
