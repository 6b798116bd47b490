// Operation counts of factored and reparameterized attention.
#include "attnlab/qk/reparameterized_attention.hpp"

namespace attnlab {

double factored_attention_multiply_adds(double n, double d, double dk, double dv) {
  return 2 * n * d * dk + n * d * dv + n * n * dk + n * n * dv;
}

double reparameterized_attention_multiply_adds(double n, double d, double r, double dv) {
  return n * d * r + n * r + n * n * r + n * d * dv + n * n * dv;
}

}  // namespace attnlab
