"""Phase-2 kappa/rho vectors at random extreme points (log-uniform scales),
beyond the fixed grid of make_budget_vectors.py: where Delta_r/sigma_z is
tiny next to R_max/sigma_z and |lambda|/sigma_z (deep in Phi's lower tail)
and where every interval is ~1e-6 wide near 0 — the regimes of
accountant::shifted_log_ratio's small-shift series and lower-tail form.

Run:  python3 tests/data/make_phase2_vectors.py > tests/data/phase2_vectors.csv
Needs mpmath. Same definitions as make_budget_vectors.py (kappa, rho in units
of sigma_z; betaM = max(R + L - lambda, 0)), at 80 digits: the terms reach
1e13 while the differences are ~1e-12.
"""
import random
import mpmath as mp

mp.mp.dps = 80


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


rng = random.Random(20)
print('kind,p1,p2,p3,p4,value')
for i in range(120):
    if i % 2 == 0:
        # Lower tail: R in [1e2, 1e6], Delta/R in [1e-12, 1e-3].
        R = 10 ** rng.uniform(2, 6)
        D = R * 10 ** rng.uniform(-12, -3)
        lam = R * rng.choice([-1.0, 0.0, 0.25, 0.5, 1.0, 1.5, 3.0]) * rng.uniform(0.9, 1.1)
    else:
        # Tiny intervals near 0: R in [1e-8, 1e-3], Delta/R in [1e-9, 1].
        R = 10 ** rng.uniform(-8, -3)
        D = R * 10 ** rng.uniform(-9, 0)
        lam = R * rng.uniform(-1.5, 1.5)
    L = rng.choice([0.0, 0.0, 1.0, 4.0]) if i % 2 == 0 else 0.0
    # The float64 inputs, exactly as the Rust test passes them.
    lam, R, D, L = (float(f(v)) for v in (lam, R, D, L))
    R_, D_, L_, lam_ = mp.mpf(R), mp.mpf(D), mp.mpf(L), mp.mpf(lam)
    bm = max(R_ + L_ - lam_, 0)
    kappa = log_mean_phi(lam_ - R_ + D_, bm) - log_mean_phi(lam_ - R_, bm)
    rho = log_mean_phi(D_ - lam_, -bm) - log_mean_phi(-lam_, -bm)
    print(f"kappa,{f(lam)},{f(R)},{f(D)},{f(L)},{f(kappa)}", flush=True)
    print(f"rho,{f(lam)},{f(R)},{f(D)},{f(L)},{f(rho)}", flush=True)
