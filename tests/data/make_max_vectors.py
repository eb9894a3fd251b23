"""High-precision vectors for the accountant's maxima over the released
threshold (README "Reliability", rule 4; src/privacy/accountant.rs
`privitp_eps_max`, src/privacy/budget.rs `eps2_at_mean_halting`).

Run:  python3 tests/data/make_max_vectors.py > tests/data/max_vectors.csv
Needs mpmath (pip install mpmath). 50 significant digits; every value from
its definition, independently of the Rust code paths:

  kappa(l), rho(l)  log E_u[Phi(x + b u)] differences with b = betaM/sigma_z,
                    betaM = max(R_max + sigma_z L - l, 0), E_u[Phi(x + b u)] =
                    (G(x + b) - G(x))/b, G(x) = x Phi(x) + phi(x) (b = 0: Phi(x))
  eps1              smallest eps with delta(eps) <= delta (Balle & Wang), by
                    400 bisection steps
  itpmax            eps1 + max over l in [lo, hi] of (n-1) kappa + max(kappa, rho)
                    (`budget --mechanism privitp-max`)
  table             max over l in [lo, hi] of (t-1) kappa + rho at sigma_z = sigma/2
                    (`budget`'s eps2_post column)

Each maximum: a 2001-point grid over [lo, hi], then 300 golden-section steps
on the two grid intervals around the best point, keeping the larger of the
grid and golden values.
"""
import mpmath as mp

mp.mp.dps = 50


def G(x):
    return x * mp.ncdf(x) + mp.npdf(x)


def log_mean_phi(x, b):
    if b == 0:
        return mp.log(mp.ncdf(x))
    if b < 0:
        x, b = x + b, -b
    return mp.log((G(x + b) - G(x)) / b)


def terms(lam, sz, R, D, L):
    """kappa, rho at threshold lam (all in reward units)."""
    bm = max(R + sz * L - lam, 0)
    kappa = log_mean_phi((lam - R + D) / sz, bm / sz) - log_mean_phi((lam - R) / sz, bm / sz)
    rho = log_mean_phi((D - lam) / sz, -bm / sz) - log_mean_phi(-lam / sz, -bm / sz)
    return kappa, rho


def agauss_delta(eps, d):
    return mp.ncdf(d / 2 - eps / d) - mp.exp(eps) * mp.ncdf(-d / 2 - eps / d)


def eps1(D, sx, delta):
    d = D / sx
    if agauss_delta(0, d) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(1)
    while agauss_delta(hi, d) > delta:
        hi *= 2
    for _ in range(400):
        mid = (lo + hi) / 2
        if agauss_delta(mid, d) > delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def maximise(g, lo, hi):
    if hi <= lo:
        return g(lo)
    k = 2000
    with mp.workdps(30):
        vals = [g(lo + (hi - lo) * i / k) for i in range(k + 1)]
    i = max(range(k + 1), key=lambda j: vals[j])
    best = g(lo + (hi - lo) * i / k)
    a = lo + (hi - lo) * max(i - 1, 0) / k
    b = lo + (hi - lo) * min(i + 1, k) / k
    phi = (mp.sqrt(5) - 1) / 2
    for _ in range(300):
        x1, x2 = b - phi * (b - a), a + phi * (b - a)
        if g(x1) > g(x2):
            b = x2
        else:
            a = x1
    return max(best, g((a + b) / 2))


def f(x):
    return format(float(x), '.17g')


print('kind,r_max,delta_r,sigma_x,sigma_z,l,n,lo,hi,delta,t_mean,value')
# budget --mechanism privitp-max: the paper's settings and extremes of each input.
for R, D, sx, sz, L, n, lo, hi, delta in [
    ('1', '1', '0.25', '0.25', '4', 16, '0', '1', '1e-2'),
    ('1', '1', '0.05', '0.05', '4', 16, '0', '1', '1e-2'),
    ('1', '0.39', '0.5', '0.5', '4', 16, '0', '1', '1e-2'),
    ('1', '1', '0.25', '0.25', '0', 4096, '0', '1', '1e-5'),
    ('1', '1', '2', '0.1', '8', 2, '-0.5', '1.5', '1e-2'),
    ('1', '1e-3', '0.5', '0.5', '4', 1000000, '0', '1', '1e-2'),
    ('1', '1', '1e-3', '1e-3', '4', 16, '0', '1', '1e-2'),
    ('1', '1', '10', '10', '4', 16, '0', '1', '1e-2'),
    ('1e6', '1e6', '2.5e5', '2.5e5', '4', 16, '0', '1e6', '1e-2'),
    ('1e-6', '1e-6', '2.5e-7', '2.5e-7', '4', 16, '0', '1e-6', '1e-2'),
    ('1', '1', '0.25', '0.25', '4', 16, '0.3', '0.3', '1e-2'),
]:
    R_, D_, sx_, sz_, L_, lo_, hi_ = map(mp.mpf, (R, D, sx, sz, L, lo, hi))
    e2 = maximise(lambda lam: (lambda k, r: (n - 1) * k + max(k, r))(*terms(lam, sz_, R_, D_, L_)), lo_, hi_)
    val = eps1(D_, sx_, mp.mpf(delta)) + e2
    print(f"itpmax,{R},{D},{sx},{sz},{L},{n},{lo},{hi},{delta},0,{f(val)}", flush=True)
# budget (the table): eps2_post at mean halting time t, sigma_x = sigma_z = sigma/2.
for R, D, sigma, L, n, lo, hi, t in [
    ('1', '1', '0.1', '4', 16, '0', '1', '1'),
    ('1', '1', '0.25', '4', 16, '0', '1', '1'),
    ('1', '1', '0.5', '4', 16, '0', '1', '1'),
    ('1', '1', '0.75', '4', 16, '0', '1', '1'),
    ('1', '1', '1', '4', 16, '0', '1', '1'),
    ('1', '1', '0.5', '4', 16, '0', '1', '3.7'),
    ('1', '1', '0.5', '4', 16, '0', '1', '17'),
    ('1', '0.39', '0.5', '0', 64, '-1', '2', '9.25'),
    ('1', '1', '1e-3', '4', 16, '0', '1', '2'),
    ('1e3', '1e3', '250', '4', 16, '0', '1e3', '5'),
]:
    R_, D_, s_, L_, lo_, hi_, t_ = map(mp.mpf, (R, D, sigma, L, lo, hi, t))
    sz_ = s_ / 2
    val = maximise(lambda lam: (lambda k, r: (t_ - 1) * k + r)(*terms(lam, sz_, R_, D_, L_)), lo_, hi_)
    print(f"table,{R},{D},{f(sz_)},{f(sz_)},{L},{n},{lo},{hi},1e-2,{t},{f(val)}", flush=True)
