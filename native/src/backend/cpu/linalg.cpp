// Dense factorizations. Row-major throughout: the algorithms are arranged so that inner loops
// run along rows (contiguous), and the O(n^3) part of LU and of the triangular solves goes
// through the packed GEMM in blocks of kBlock columns.
#include "backend/cpu/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backend/cpu/gemm.h"
#include "mnnpy/thread_pool.h"

namespace mnnpy {
namespace cpu {

namespace {

constexpr int64_t kBlock = 48;

template <class T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::Float32 : DType::Float64;
}

// Runs per_matrix(index, inner_pool) over a stack: one matrix per task, or, for a single
// matrix, the whole pool handed to it (its GEMMs thread).
template <class F>
void for_each_matrix(int64_t batch, ThreadPool* pool, F&& per_matrix) {
  if (batch == 1) {
    per_matrix(0, pool);
    return;
  }
  parallel_for(pool, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) per_matrix(i, nullptr);
  });
}

// rows x cols block: c (row stride ldc) -= a (lda) * b (ldb), a copied negated into `neg`.
template <class T>
void subtract_product(int64_t rows, int64_t cols, int64_t inner, const T* a, int64_t lda, const T* b, int64_t ldb,
                      T* c, int64_t ldc, std::vector<T>& neg, ThreadPool* pool) {
  if (rows == 0 || cols == 0 || inner == 0) return;
  neg.resize(rows * inner);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < inner; ++j) neg[i * inner + j] = -a[i * lda + j];
  }
  gemm(dtype_of<T>(), rows, cols, inner, neg.data(), inner, false, b, ldb, false, c, ldc, true, pool);
}

// In-place LU with partial pivoting of an n x n matrix: P A = L U, L unit lower (below the
// diagonal), U upper. piv[k]: the row swapped with row k at step k. Returns 0 or the 1-based
// index of the first zero pivot (the factorization still completes, as LAPACK's getrf).
template <class T>
int32_t lu_factor(T* a, int64_t n, int64_t* piv, std::vector<T>& scratch, ThreadPool* pool) {
  int32_t info = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t k1 = std::min(n, k0 + kBlock);
    for (int64_t k = k0; k < k1; ++k) {
      int64_t p = k;
      T best = std::abs(a[k * n + k]);
      for (int64_t i = k + 1; i < n; ++i) {
        const T v = std::abs(a[i * n + k]);
        if (v > best) {
          best = v;
          p = i;
        }
      }
      piv[k] = p;
      if (p != k) std::swap_ranges(a + k * n, a + k * n + n, a + p * n);
      const T pivot = a[k * n + k];
      if (pivot == T(0)) {
        if (!info) info = (int32_t)(k + 1);
        continue;
      }
      const T* prow = a + k * n;
      for (int64_t i = k + 1; i < n; ++i) {
        T* row = a + i * n;
        const T l = row[k] / pivot;
        row[k] = l;
        if (l != T(0)) {
          for (int64_t j = k + 1; j < k1; ++j) row[j] -= l * prow[j];
        }
      }
    }
    if (k1 == n) break;
    // U12 = L11^-1 A12, then A22 -= L21 U12.
    for (int64_t i = k0 + 1; i < k1; ++i) {
      T* row = a + i * n;
      for (int64_t j = k0; j < i; ++j) {
        const T l = row[j];
        if (l == T(0)) continue;
        const T* src = a + j * n;
        for (int64_t c = k1; c < n; ++c) row[c] -= l * src[c];
      }
    }
    subtract_product(n - k1, n - k1, k1 - k0, a + k1 * n + k0, n, a + k0 * n + k1, n, a + k1 * n + k1, n, scratch,
                     pool);
  }
  return info;
}

// X (n x k, holding B) = U^-1 L^-1 P X with the factors from lu_factor.
template <class T>
void lu_substitute(const T* lu, const int64_t* piv, int64_t n, T* x, int64_t k, std::vector<T>& scratch,
                   ThreadPool* pool) {
  for (int64_t i = 0; i < n; ++i) {
    if (piv[i] != i) std::swap_ranges(x + i * k, x + i * k + k, x + piv[i] * k);
  }
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t i1 = std::min(n, i0 + kBlock);
    subtract_product(i1 - i0, k, i0, lu + i0 * n, n, x, k, x + i0 * k, k, scratch, pool);
    for (int64_t i = i0 + 1; i < i1; ++i) {
      T* xi = x + i * k;
      for (int64_t j = i0; j < i; ++j) {
        const T l = lu[i * n + j];
        if (l == T(0)) continue;
        const T* xj = x + j * k;
        for (int64_t c = 0; c < k; ++c) xi[c] -= l * xj[c];
      }
    }
  }
  const int64_t last_start = ((n - 1) / kBlock) * kBlock;
  for (int64_t i0 = last_start; i0 >= 0; i0 -= kBlock) {
    const int64_t i1 = std::min(n, i0 + kBlock);
    subtract_product(i1 - i0, k, n - i1, lu + i0 * n + i1, n, x + i1 * k, k, x + i0 * k, k, scratch, pool);
    for (int64_t i = i1 - 1; i >= i0; --i) {
      T* xi = x + i * k;
      for (int64_t j = i + 1; j < i1; ++j) {
        const T u = lu[i * n + j];
        if (u == T(0)) continue;
        const T* xj = x + j * k;
        for (int64_t c = 0; c < k; ++c) xi[c] -= u * xj[c];
      }
      const T inv = T(1) / lu[i * n + i];
      for (int64_t c = 0; c < k; ++c) xi[c] *= inv;
    }
  }
}

template <class T>
void determinant_impl(const T* a, int64_t batch, int64_t n, T* sign, T* logabsdet, T* det, ThreadPool* pool) {
  for_each_matrix(batch, pool, [&](int64_t b, ThreadPool* inner) {
    std::vector<T> lu(a + b * n * n, a + (b + 1) * n * n), scratch;
    std::vector<int64_t> piv(n);
    lu_factor(lu.data(), n, piv.data(), scratch, inner);
    T s = 1, logabs = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T d = lu[i * n + i];
      if (piv[i] != i) s = -s;
      if (d < 0) s = -s;
      if (d == T(0)) {
        s = 0;
        logabs = -std::numeric_limits<T>::infinity();
        break;
      }
      logabs += std::log(std::abs(d));
    }
    if (std::isnan(logabs)) s = std::numeric_limits<T>::quiet_NaN();
    sign[b] = s;
    logabsdet[b] = logabs;
    // As LAPACK-based NumPy: det = sign * exp(logabsdet).
    det[b] = s == T(0) ? T(0) : s * std::exp(logabs);
  });
}

template <class T>
void solve_impl(const T* a, const T* bmat, int64_t batch, int64_t n, int64_t k, T* x, int32_t* info,
                ThreadPool* pool) {
  for_each_matrix(batch, pool, [&](int64_t b, ThreadPool* inner) {
    std::vector<T> lu(a + b * n * n, a + (b + 1) * n * n), scratch;
    std::vector<int64_t> piv(n);
    T* xb = x + b * n * k;
    info[b] = lu_factor(lu.data(), n, piv.data(), scratch, inner);
    if (info[b]) {
      std::fill(xb, xb + n * k, std::numeric_limits<T>::quiet_NaN());
      return;
    }
    if (bmat) {
      std::copy(bmat + b * n * k, bmat + (b + 1) * n * k, xb);
    } else {
      std::fill(xb, xb + n * k, T(0));
      for (int64_t i = 0; i < n; ++i) xb[i * k + i] = T(1);
    }
    lu_substitute(lu.data(), piv.data(), n, xb, k, scratch, inner);
  });
}

template <class T>
void cholesky_impl(const T* a, int64_t batch, int64_t n, bool upper, T* out, int32_t* info, ThreadPool* pool) {
  for_each_matrix(batch, pool, [&](int64_t b, ThreadPool*) {
    const T* ab = a + b * n * n;
    T* ob = out + b * n * n;
    std::vector<T> l(n * n, T(0));
    info[b] = 0;
    for (int64_t i = 0; i < n && !info[b]; ++i) {
      for (int64_t j = 0; j <= i; ++j) {
        T s = upper ? ab[j * n + i] : ab[i * n + j];
        const T* li = l.data() + i * n;
        const T* lj = l.data() + j * n;
        for (int64_t p = 0; p < j; ++p) s -= li[p] * lj[p];
        if (i == j) {
          if (!(s > T(0))) {
            info[b] = (int32_t)(i + 1);
            break;
          }
          l[i * n + i] = std::sqrt(s);
        } else {
          l[i * n + j] = s / l[j * n + j];
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) ob[i * n + j] = upper ? l[j * n + i] : l[i * n + j];
    }
  });
}

template <class T>
void qr_impl(const T* a, int64_t batch, int64_t m, int64_t n, int64_t qcols, int64_t rrows, T* q, T* r,
             ThreadPool* pool) {
  const int64_t k = std::min(m, n);
  for_each_matrix(batch, pool, [&](int64_t b, ThreadPool*) {
    std::vector<T> w(a + b * m * n, a + (b + 1) * m * n), tau(k), dot(std::max(n, qcols));
    for (int64_t j = 0; j < k; ++j) {
      const T alpha = w[j * n + j];
      T xnorm = 0;
      for (int64_t i = j + 1; i < m; ++i) xnorm = std::hypot(xnorm, w[i * n + j]);
      if (xnorm == T(0)) {
        tau[j] = 0;
        continue;
      }
      const T beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
      tau[j] = (beta - alpha) / beta;
      const T scale = T(1) / (alpha - beta);
      for (int64_t i = j + 1; i < m; ++i) w[i * n + j] *= scale;
      w[j * n + j] = beta;
      // Apply H = I - tau v v^T (v = [1, w[j+1.., j]]) to the columns right of j.
      const int64_t c0 = j + 1, cols = n - c0;
      if (cols <= 0) continue;
      std::copy(w.begin() + j * n + c0, w.begin() + j * n + n, dot.begin());
      for (int64_t i = j + 1; i < m; ++i) {
        const T v = w[i * n + j];
        for (int64_t c = 0; c < cols; ++c) dot[c] += v * w[i * n + c0 + c];
      }
      for (int64_t c = 0; c < cols; ++c) w[j * n + c0 + c] -= tau[j] * dot[c];
      for (int64_t i = j + 1; i < m; ++i) {
        const T tv = tau[j] * w[i * n + j];
        for (int64_t c = 0; c < cols; ++c) w[i * n + c0 + c] -= tv * dot[c];
      }
    }
    if (r) {
      T* rb = r + b * rrows * n;
      for (int64_t i = 0; i < rrows; ++i) {
        for (int64_t c = 0; c < n; ++c) rb[i * n + c] = (i < m && c >= i) ? w[i * n + c] : T(0);
      }
    }
    if (q) {
      T* qb = q + b * m * qcols;
      std::fill(qb, qb + m * qcols, T(0));
      for (int64_t i = 0; i < std::min(m, qcols); ++i) qb[i * qcols + i] = T(1);
      for (int64_t j = k - 1; j >= 0; --j) {
        if (tau[j] == T(0)) continue;
        std::copy(qb + j * qcols, qb + j * qcols + qcols, dot.begin());
        for (int64_t i = j + 1; i < m; ++i) {
          const T v = w[i * n + j];
          for (int64_t c = 0; c < qcols; ++c) dot[c] += v * qb[i * qcols + c];
        }
        for (int64_t c = 0; c < qcols; ++c) qb[j * qcols + c] -= tau[j] * dot[c];
        for (int64_t i = j + 1; i < m; ++i) {
          const T tv = tau[j] * w[i * n + j];
          for (int64_t c = 0; c < qcols; ++c) qb[i * qcols + c] -= tv * dot[c];
        }
      }
    }
  });
}

// (x, y) <- (c x - s y, s x + c y) over `len` elements.
template <class T>
inline void rotate(T* x, T* y, int64_t len, T c, T s) {
  for (int64_t i = 0; i < len; ++i) {
    const T xi = x[i], yi = y[i];
    x[i] = c * xi - s * yi;
    y[i] = s * xi + c * yi;
  }
}

template <class T>
inline void rotate_strided(T* x, T* y, int64_t len, int64_t stride, T c, T s) {
  for (int64_t i = 0; i < len; ++i) {
    const T xi = x[i * stride], yi = y[i * stride];
    x[i * stride] = c * xi - s * yi;
    y[i * stride] = s * xi + c * yi;
  }
}

template <class T>
void eigh_impl(const T* a, int64_t batch, int64_t n, bool lower, T* w, T* v, ThreadPool* pool) {
  const T eps = std::numeric_limits<T>::epsilon();
  for_each_matrix(batch, pool, [&](int64_t b, ThreadPool*) {
    const T* ab = a + b * n * n;
    std::vector<T> s(n * n), vt(n * n, T(0));
    for (int64_t i = 0; i < n; ++i) {
      vt[i * n + i] = 1;
      for (int64_t j = 0; j <= i; ++j) {
        const T x = lower ? ab[i * n + j] : ab[j * n + i];
        s[i * n + j] = s[j * n + i] = x;
      }
    }
    T total = 0;
    for (T x : s) total += x * x;
    for (int sweep = 0; sweep < 100; ++sweep) {
      T off = 0;
      for (int64_t p = 0; p < n; ++p) {
        for (int64_t q = p + 1; q < n; ++q) off += s[p * n + q] * s[p * n + q];
      }
      if (!(off > eps * eps * total * T(1e-2))) break;
      for (int64_t p = 0; p < n; ++p) {
        for (int64_t q = p + 1; q < n; ++q) {
          const T apq = s[p * n + q];
          if (apq == T(0)) continue;
          const T theta = (s[q * n + q] - s[p * n + p]) / (2 * apq);
          const T t = (theta >= 0 ? T(1) : T(-1)) / (std::abs(theta) + std::sqrt(T(1) + theta * theta));
          const T c = T(1) / std::sqrt(T(1) + t * t), sn = t * c;
          // S <- J^T S J with J the rotation in the (p, q) plane; V <- V J.
          rotate(&s[p * n], &s[q * n], n, c, sn);
          rotate_strided(&s[p], &s[q], n, n, c, sn);
          s[p * n + q] = s[q * n + p] = 0;
          rotate(&vt[p * n], &vt[q * n], n, c, sn);
        }
      }
    }
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x * n + x] < s[y * n + y]; });
    for (int64_t i = 0; i < n; ++i) {
      w[b * n + i] = s[order[i] * n + order[i]];
      if (v) {
        for (int64_t r = 0; r < n; ++r) v[b * n * n + r * n + i] = vt[order[i] * n + r];
      }
    }
  });
}

// Makes rows [0, want) of `basis` (rows of length p) orthonormal: rows flagged valid are kept
// (they are orthonormal already), the others are filled from unit vectors by Gram-Schmidt.
template <class T>
void complete_basis(T* basis, int64_t p, int64_t want, const std::vector<bool>& valid) {
  std::vector<bool> done(want, false);
  for (int64_t i = 0; i < want && i < (int64_t)valid.size(); ++i) done[i] = valid[i];
  int64_t candidate = 0;
  std::vector<T> x(p);
  for (int64_t row = 0; row < want; ++row) {
    if (done[row]) continue;
    for (;; ++candidate) {
      std::fill(x.begin(), x.end(), T(0));
      x[candidate % p] = 1;
      for (int pass = 0; pass < 2; ++pass) {  // twice: classical Gram-Schmidt loses orthogonality once
        for (int64_t o = 0; o < want; ++o) {
          if (!done[o]) continue;
          const T* u = basis + o * p;
          T d = 0;
          for (int64_t i = 0; i < p; ++i) d += u[i] * x[i];
          for (int64_t i = 0; i < p; ++i) x[i] -= d * u[i];
        }
      }
      T norm = 0;
      for (T e : x) norm += e * e;
      norm = std::sqrt(norm);
      if (norm > T(0.1) || candidate >= 4 * p) {
        for (int64_t i = 0; i < p; ++i) basis[row * p + i] = x[i] / norm;
        done[row] = true;
        ++candidate;
        break;
      }
    }
  }
}

// One-sided Jacobi on the q rows of x (each of length p): afterwards the rows are orthogonal,
// x_out = Z x_in with Z (q x q, rows) orthogonal.
template <class T>
void one_sided_jacobi(T* x, int64_t q, int64_t p, T* z) {
  const T eps = std::numeric_limits<T>::epsilon();
  std::fill(z, z + q * q, T(0));
  for (int64_t i = 0; i < q; ++i) z[i * q + i] = 1;
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (int64_t i = 0; i < q; ++i) {
      for (int64_t j = i + 1; j < q; ++j) {
        T* xi = x + i * p;
        T* xj = x + j * p;
        T alpha = 0, beta = 0, gamma = 0;
        for (int64_t e = 0; e < p; ++e) {
          alpha += xi[e] * xi[e];
          beta += xj[e] * xj[e];
          gamma += xi[e] * xj[e];
        }
        if (!(std::abs(gamma) > eps * std::sqrt(alpha * beta)) || gamma == T(0)) continue;
        rotated = true;
        const T zeta = (beta - alpha) / (2 * gamma);
        const T t = (zeta >= 0 ? T(1) : T(-1)) / (std::abs(zeta) + std::sqrt(T(1) + zeta * zeta));
        const T c = T(1) / std::sqrt(T(1) + t * t), s = c * t;
        rotate(xi, xj, p, c, s);
        rotate(z + i * q, z + j * q, q, c, s);
      }
    }
    if (!rotated) break;
  }
}

template <class T>
void svd_impl(const T* a, int64_t batch, int64_t m, int64_t n, bool full, T* u, T* s, T* vh, ThreadPool* pool) {
  const int64_t k = std::min(m, n);
  const bool tall = m >= n;  // work on A's columns (tall) or rows (wide)
  const int64_t q = k, p = tall ? m : n;
  const int64_t want = full ? p : k;
  const T eps = std::numeric_limits<T>::epsilon();
  for_each_matrix(batch, pool, [&](int64_t b, ThreadPool*) {
    const T* ab = a + b * m * n;
    std::vector<T> x(std::max(want, q) * p), z(q * q);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (tall) x[j * p + i] = ab[i * n + j];
        else x[i * p + j] = ab[i * n + j];
      }
    }
    one_sided_jacobi(x.data(), q, p, z.data());
    std::vector<T> sigma(q);
    for (int64_t i = 0; i < q; ++i) {
      T norm = 0;
      for (int64_t e = 0; e < p; ++e) norm += x[i * p + e] * x[i * p + e];
      sigma[i] = std::sqrt(norm);
    }
    std::vector<int64_t> order(q);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return sigma[i] > sigma[j]; });
    for (int64_t i = 0; i < q; ++i) s[b * k + i] = sigma[order[i]];
    if (!u) return;
    // Sorted, normalized singular vectors of the long side (rows of `hat`, length p) and of
    // the short side (rows of `zs`, length q).
    const T tiny = (q ? sigma[order[0]] : T(0)) * eps * T(p);
    std::vector<T> hat(want * p, T(0)), zs(q * q);
    std::vector<bool> valid(q);
    for (int64_t i = 0; i < q; ++i) {
      const int64_t src = order[i];
      valid[i] = sigma[src] > tiny && sigma[src] > T(0);
      if (valid[i]) {
        for (int64_t e = 0; e < p; ++e) hat[i * p + e] = x[src * p + e] / sigma[src];
      }
      std::copy(z.begin() + src * q, z.begin() + src * q + q, zs.begin() + i * q);
    }
    complete_basis(hat.data(), p, want, valid);
    T* ub = u + b * m * (tall ? want : k);
    T* vb = vh + b * (tall ? k : want) * n;
    if (tall) {
      // A = hat^T diag(s) zs: U[r][i] = hat[i][r], Vh = zs.
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t i = 0; i < want; ++i) ub[r * want + i] = hat[i * p + r];
      }
      std::copy(zs.begin(), zs.end(), vb);
    } else {
      // A = zs^T diag(s) hat: U[r][i] = zs[i][r], Vh = hat.
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t i = 0; i < k; ++i) ub[r * k + i] = zs[i * q + r];
      }
      std::copy(hat.begin(), hat.begin() + want * p, vb);
    }
  });
}

template <class T>
void correlate_impl(const T* a, int64_t na, const T* v, int64_t nv, int64_t first_lag, int64_t count, T* out,
                    ThreadPool* pool) {
  parallel_for(pool, count, std::max<int64_t>(1, 16384 / std::max<int64_t>(nv, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t start = t + first_lag;
      const int64_t j0 = std::max<int64_t>(0, -start), j1 = std::min<int64_t>(nv, na - start);
      T acc = 0;
      for (int64_t j = j0; j < j1; ++j) acc += a[start + j] * v[j];
      out[t] = acc;
    }
  });
}

}  // namespace

#define MNNPY_LINALG_DISPATCH(dt, CALL)                      \
  do {                                                       \
    if ((dt) == DType::Float32) {                            \
      using T = float;                                       \
      CALL;                                                  \
    } else {                                                 \
      using T = double;                                      \
      CALL;                                                  \
    }                                                        \
  } while (0)

void lu_determinant(DType dt, const void* a, int64_t batch, int64_t n, void* sign, void* logabsdet, void* det,
                    ThreadPool* pool) {
  MNNPY_LINALG_DISPATCH(dt, determinant_impl<T>(static_cast<const T*>(a), batch, n, static_cast<T*>(sign),
                                                static_cast<T*>(logabsdet), static_cast<T*>(det), pool));
}

void lu_solve(DType dt, const void* a, const void* b, int64_t batch, int64_t n, int64_t k, void* x, int32_t* info,
              ThreadPool* pool) {
  MNNPY_LINALG_DISPATCH(dt, solve_impl<T>(static_cast<const T*>(a), static_cast<const T*>(b), batch, n, k,
                                          static_cast<T*>(x), info, pool));
}

void cholesky(DType dt, const void* a, int64_t batch, int64_t n, bool upper, void* out, int32_t* info,
              ThreadPool* pool) {
  MNNPY_LINALG_DISPATCH(dt, cholesky_impl<T>(static_cast<const T*>(a), batch, n, upper, static_cast<T*>(out), info,
                                             pool));
}

void qr(DType dt, const void* a, int64_t batch, int64_t m, int64_t n, int64_t qcols, int64_t rrows, void* q, void* r,
        ThreadPool* pool) {
  MNNPY_LINALG_DISPATCH(dt, qr_impl<T>(static_cast<const T*>(a), batch, m, n, qcols, rrows, static_cast<T*>(q),
                                       static_cast<T*>(r), pool));
}

void eigh(DType dt, const void* a, int64_t batch, int64_t n, bool lower, void* w, void* v, ThreadPool* pool) {
  MNNPY_LINALG_DISPATCH(dt, eigh_impl<T>(static_cast<const T*>(a), batch, n, lower, static_cast<T*>(w),
                                         static_cast<T*>(v), pool));
}

void svd(DType dt, const void* a, int64_t batch, int64_t m, int64_t n, bool full, void* u, void* s, void* vh,
         ThreadPool* pool) {
  MNNPY_LINALG_DISPATCH(dt, svd_impl<T>(static_cast<const T*>(a), batch, m, n, full, static_cast<T*>(u),
                                        static_cast<T*>(s), static_cast<T*>(vh), pool));
}

void correlate(DType dt, const void* a, int64_t na, const void* v, int64_t nv, int64_t first_lag, int64_t count,
               void* out, ThreadPool* pool) {
  switch (dt) {
    case DType::Float32:
      correlate_impl(static_cast<const float*>(a), na, static_cast<const float*>(v), nv, first_lag, count,
                     static_cast<float*>(out), pool);
      break;
    case DType::Float64:
      correlate_impl(static_cast<const double*>(a), na, static_cast<const double*>(v), nv, first_lag, count,
                     static_cast<double*>(out), pool);
      break;
    default:
      correlate_impl(static_cast<const int64_t*>(a), na, static_cast<const int64_t*>(v), nv, first_lag, count,
                     static_cast<int64_t*>(out), pool);
  }
}

}  // namespace cpu
}  // namespace mnnpy
