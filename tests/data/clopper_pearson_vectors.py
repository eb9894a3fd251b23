"""Reference Clopper-Pearson bounds for src/audit/clopper_pearson.rs.

Computed independently of the Rust code: SciPy's betaincinv (Boost) gives
lower = I^-1_alpha(k, n-k+1) and upper = 1 - I^-1_alpha(n-k, k+1); for n <= 1000
every value is cross-checked against a 50-digit mpmath bisection on the
regularised incomplete beta (the script aborts if they disagree beyond 1e-12).
Run: python3 tests/data/clopper_pearson_vectors.py > tests/data/clopper_pearson_vectors.csv
"""
from mpmath import mp, mpf, betainc
from scipy.special import betaincinv

mp.dps = 50


def mp_inv(a, b, alpha):
    lo, hi = mpf(0), mpf(1)
    for _ in range(200):
        mid = (lo + hi) / 2
        if betainc(a, b, 0, mid, regularized=True) < alpha:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def bounds(k, n, alpha):
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, alpha))
    hi = 1.0 if k == n else 1.0 - float(betaincinv(n - k, k + 1, alpha))
    if n <= 1000:
        a = mpf(alpha)
        mlo = mpf(0) if k == 0 else mp_inv(k, n - k + 1, a)
        mhi = mpf(1) if k == n else 1 - mp_inv(n - k, k + 1, a)
        for s, m in ((lo, mlo), (hi, mhi)):
            assert abs(s - m) <= 1e-12 * max(abs(m), mpf("1e-300")), (k, n, alpha, s, m)
        lo, hi = float(mlo), float(mhi)
    return lo, hi


cases = []
for n in [1, 2, 10, 100, 1000, 50000, 500000, 1000000]:
    ks = {0, 1, 2, n // 3, n // 2, n - 1, n}
    if n > 7:
        ks.add(7)
    if n > 12345:
        ks.add(12345)
    for k in sorted(x for x in ks if 0 <= x <= n):
        for alpha in ["0.05", "1e-6", "5e-7", "1e-12"]:
            cases.append((k, n, alpha))

print("k,n,alpha,lower,upper")
for k, n, alpha in cases:
    lo, hi = bounds(k, n, float(alpha))
    print(f"{k},{n},{alpha},{lo!r},{hi!r}")
