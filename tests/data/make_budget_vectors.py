"""High-precision vectors for the accountant over its whole accepted range
(README "Reliability", rule 4; src/privacy/rnm.rs, accountant.rs).

Run:  python3 tests/data/make_budget_vectors.py > tests/data/budget_vectors.csv
Needs mpmath (pip install mpmath). 60 significant digits throughout; every
value is computed from its definition, independently of the Rust code paths:

  rnm      a=R_max/sigma, d=Delta_r/sigma, n   log E[Phi(z-a+2d)^m] - log E[Phi(z-a)^m], m=n-1,
           each expectation by tanh-sinh quadrature on panels around the
           integrand's mode (no tilting identity, no log-difference tricks)
  agauss   d=Delta_r/sigma_x, delta            smallest eps with delta(eps) <= delta (Balle & Wang),
           by 400 bisection steps at 60 digits
  kappa    A=(lambda-R_max)/sigma_z, D=Delta_r/sigma_z, b=betaM/sigma_z
  rho      same parameters; E_u[Phi(x + b u)] = (G(x+b) - G(x))/b with
           G(x) = x Phi(x) + phi(x) evaluated at 60 digits (b = 0: Phi(x))

Only ratios enter every formula, so one vector serves every (R_max, sigma)
scale; the Rust test multiplies them by scales from 1e-300 to 1e300.
"""
import mpmath as mp

mp.mp.dps = 60


def log_e_phi_pow(c, m):
    """log E_z[Phi(z - c)^m]."""
    if m == 0:
        return mp.mpf(0)
    f = lambda z: -z * z / 2 - mp.log(mp.sqrt(2 * mp.pi)) + m * mp.log(mp.ncdf(z - c))
    d = lambda z: -z + m * mp.npdf(z - c) / mp.ncdf(z - c)
    lo, hi = mp.mpf(-1), mp.mpf(1)
    while d(lo) <= 0:
        lo = 2 * lo - 1
    while d(hi) >= 0:
        hi = 2 * hi + 1
    for _ in range(400):
        mid = (lo + hi) / 2
        if d(mid) > 0:
            lo = mid
        else:
            hi = mid
    z0 = (lo + hi) / 2
    x = z0 - c
    r = mp.npdf(x) / mp.ncdf(x)
    s = 1 / mp.sqrt(1 + m * r * (x + r))
    peak = f(z0)
    pts = [z0]
    for sign in (-1, 1):
        step, z = s, z0
        side = []
        while True:
            z = z + sign * step
            side.append(z)
            if f(z) - peak < -110:
                break
            step *= 1.5
        pts = (side[::-1] + pts) if sign < 0 else (pts + side)
    val = mp.quad(lambda z: mp.exp(f(z) - peak), pts)
    return peak + mp.log(val)


def rnm(a, d, n):
    m = n - 1
    with mp.workdps(40):  # F ~ a^2/2 <= 5e11: 40 digits leave 28 for eps
        return log_e_phi_pow(a - 2 * d, m) - log_e_phi_pow(a, m)


def agauss_delta(eps, d):
    return mp.ncdf(d / 2 - eps / d) - mp.exp(eps) * mp.ncdf(-d / 2 - eps / d)


def agauss(d, delta):
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


def G(x):
    return x * mp.ncdf(x) + mp.npdf(x)


def log_mean_phi(x, b):
    if b == 0:
        return mp.log(mp.ncdf(x))
    if b < 0:
        x, b = x + b, -b
    return mp.log((G(x + b) - G(x)) / b)


def f(x):
    return format(float(x), '.17g')


print('kind,p1,p2,p3,p4,value')
for a in ['1e-6', '1e-2', '1', '1e2', '1e4', '1e6']:
    for ratio in ['1', '0.5', '1e-6']:
        for n in [2, 16, 4096, 1000000]:
            A, D = mp.mpf(a), mp.mpf(a) * mp.mpf(ratio)
            print(f"rnm,{a},{f(D)},{n},0,{f(rnm(A, D, n))}", flush=True)
for d in ['1e-250', '1e-6', '0.01', '0.5', '1', '3', '30', '1e3', '1e6']:
    for delta in ['0.5', '1e-2', '1e-5', '1e-300']:
        print(f"agauss,{d},{delta},0,0,{f(agauss(mp.mpf(d), mp.mpf(delta)))}", flush=True)
# Phase 2 in units of sigma_z: lambda, R_max, Delta_r, L (beta M = R + L - lambda, floored at 0).
for R in ['1e-6', '1', '1e3', '1e6']:
    for Dr in ['1', '1e-3', '1e-9']:
        for lam_frac in ['-1', '0', '0.5', '1', '2']:
            for L in ['0', '4']:
                R_, D_, L_ = mp.mpf(R), mp.mpf(R) * mp.mpf(Dr), mp.mpf(L)
                lam = R_ * mp.mpf(lam_frac)
                bm = max(R_ + L_ - lam, 0)
                kappa = log_mean_phi(lam - R_ + D_, bm) - log_mean_phi(lam - R_, bm)
                rho = log_mean_phi(D_ - lam, -bm) - log_mean_phi(-lam, -bm)
                print(f"kappa,{f(lam)},{R},{f(D_)},{L},{f(kappa)}", flush=True)
                print(f"rho,{f(lam)},{R},{f(D_)},{L},{f(rho)}", flush=True)
