"""High-precision test vectors for src/privacy/accountant.rs.

Run:  python3 tests/data/make_accountant_vectors.py > tests/data/accountant_vectors.csv
Needs mpmath. Every value is computed by direct quadrature at 40 digits, independently
of the closed forms used in Rust (no G function, no log-space tricks).

Columns: kind,p1,p2,p3,p4,p5,value
  rnm      r_max,delta_r,sigma,n,-      Gaussian Report Noisy Max eps (thm:gaussian_priv)
  agauss   delta_r,sigma,delta,-,-      smallest eps with delta(eps) <= delta (Balle & Wang 2018)
  kappa    lambda,sigma_z,r_max,delta_r,L   per-rejection cost (thm:privitp_priv)
  rho      lambda,sigma_z,r_max,delta_r,L   accepting-round cost
"""
import mpmath as mp

mp.mp.dps = 40

def log_mean_cdf_power(c, m):
    if m == 0:
        return mp.mpf(0)
    f = lambda z: mp.log(mp.npdf(z)) + m * mp.log(mp.ncdf(z - c))
    d = lambda z: -z + m * mp.npdf(z - c) / mp.ncdf(z - c)
    lo, hi = mp.mpf(-1), mp.mpf(1)
    while d(lo) < 0: lo *= 2
    while d(hi) > 0: hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if d(mid) > 0: lo = mid
        else: hi = mid
    mode = (lo + hi) / 2
    peak = f(mode)
    pts = [mode + k * mp.mpf('0.25') for k in range(-400, 401)]
    pts = [p for p in pts if f(p) > peak - 90]
    pts = [pts[0] - 1] + pts + [pts[-1] + 1]
    val = mp.quad(lambda z: mp.exp(f(z) - peak), pts)
    return peak + mp.log(val)

def rnm(r_max, delta_r, sigma, n):
    m = n - 1
    return log_mean_cdf_power((r_max - 2 * delta_r) / sigma, m) - log_mean_cdf_power(r_max / sigma, m)

def agauss_delta(eps, D, s):
    a = D / (2 * s); b = s / D
    return mp.ncdf(a - eps * b) - mp.exp(eps) * mp.ncdf(-a - eps * b)

def agauss(D, s, delta):
    if agauss_delta(0, D, s) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(1)
    while agauss_delta(hi, D, s) > delta: hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if agauss_delta(mid, D, s) > delta: lo = mid
        else: hi = mid
    return (lo + hi) / 2

def mean_u(fn):
    # 64 panels: the integrand can vary over many orders of magnitude across [0, 1].
    return mp.quad(fn, mp.linspace(0, 1, 65))

def phase2(lt, sz, r_max, dr, L):
    bm = max(r_max + sz * L - lt, 0)
    kappa = mp.log(mean_u(lambda u: mp.ncdf((lt + bm * u - r_max + dr) / sz))) - \
            mp.log(mean_u(lambda u: mp.ncdf((lt + bm * u - r_max) / sz)))
    rho = mp.log(mean_u(lambda u: mp.ncdf((dr - lt - bm * u) / sz))) - \
          mp.log(mean_u(lambda u: mp.ncdf((-lt - bm * u) / sz)))
    return kappa, rho

def f(x):
    return format(float(x), '.17g')

print('kind,p1,p2,p3,p4,p5,value')
for sigma in ['0.001', '0.01', '0.1', '1', '10']:
    for n in [1, 2, 16, 4096]:
        for dr in ['1', '0.1']:
            v = rnm(mp.mpf(1), mp.mpf(dr), mp.mpf(sigma), n)
            print(f"rnm,1,{dr},{sigma},{n},0,{f(v)}")
for s in ['0.05', '0.2', '1', '5']:
    for delta in ['1e-2', '1e-5']:
        v = agauss(mp.mpf('0.39'), mp.mpf(s), mp.mpf(delta))
        print(f"agauss,0.39,{s},{delta},0,0,{f(v)}")
for lt in ['0', '0.2', '0.5', '1', '1.5']:
    for sz in ['0.05', '0.25', '1']:
        k, r = phase2(mp.mpf(lt), mp.mpf(sz), mp.mpf(1), mp.mpf(1), mp.mpf(4))
        print(f"kappa,{lt},{sz},1,1,4,{f(k)}")
        print(f"rho,{lt},{sz},1,1,4,{f(r)}")
