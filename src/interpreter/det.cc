// Det: the determinant of each square matrix of X [*, M, M] -> [*], by LU decomposition
// with partial pivoting in double precision (the sign flips with each row swap).
#include <algorithm>
#include <cmath>
#include <utility>

#include "interpreter/kernels.h"

namespace kora::interp {

std::vector<Tensor> run_det(const OpaqueCall& call) {
  const Tensor& x = call.required(0);
  const Shape& s = x.shape();
  const int64_t m = s.back(), size = m * m;
  const std::vector<double> xv = x.to_double();
  const ValueInfo& out = call.out(0);
  Tensor y(out.dtype, out.shape);
  std::vector<double> a(static_cast<size_t>(size));
  for (int64_t b = 0; b < y.numel(); ++b) {
    std::copy(xv.begin() + b * size, xv.begin() + (b + 1) * size, a.begin());
    double det = 1;
    for (int64_t k = 0; k < m && det != 0; ++k) {
      int64_t pivot = k;
      for (int64_t i = k + 1; i < m; ++i)
        if (std::abs(a[i * m + k]) > std::abs(a[pivot * m + k])) pivot = i;
      if (a[pivot * m + k] == 0) {
        det = 0;
        break;
      }
      if (pivot != k) {
        for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
        det = -det;
      }
      det *= a[k * m + k];
      for (int64_t i = k + 1; i < m; ++i) {
        const double f = a[i * m + k] / a[k * m + k];
        for (int64_t j = k; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
      }
    }
    set_element(y, b, det);
  }
  return {y};
}

}  // namespace kora::interp
