"""High-precision test vectors for src/privacy/normal.rs.

Run:  python3 tests/data/make_normal_vectors.py > tests/data/normal_vectors.csv
Needs mpmath (pip install mpmath). Values are computed at 60 significant digits and
printed with 17, so they are exact to f64 rounding.

Columns: kind,a,b,value  where kind is
  log_cdf   log Φ(a)
  cdf       Φ(a)
  log_g     log G(a),  G(x) = xΦ(x) + φ(x)
  log_mcu   log E_u[Φ(a + b u)], u ~ Unif[0,1], computed as log((G(a+b) − G(a))/b)
            (b = 0: log Φ(a))
"""
import mpmath as mp

mp.mp.dps = 60

def Phi(x):
    return mp.ncdf(x)

def G(x):
    return x * Phi(x) + mp.npdf(x)

def mcu(a, b):
    if b == 0:
        return Phi(a)
    return (G(a + b) - G(a)) / b

def f(x):
    return format(float(x), '.17g')

rows = []
xs = [-1000, -300, -100, -40, -38.5, -20, -12, -8, -5, -3, -2, -1.5, -1, -0.5, -1e-8, 0,
      1e-8, 0.3, 1, 2, 3, 5, 8, 12, 30]
for x in xs:
    x = mp.mpf(x)
    rows.append(('log_cdf', x, 0, mp.log(Phi(x))))
    if x > -300:
        rows.append(('cdf', x, 0, Phi(x)))
    rows.append(('log_g', x, 0, mp.log(G(x))))
bs = [0, 1e-14, 1e-9, 1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.09, 0.2, 1, 3, 10, 40, 400, 4000]
as_ = [-1000, -100, -40, -12, -5, -2, -0.5, 0, 0.5, 2, 5, 40]
for a in as_:
    for b in bs:
        for s in (1, -1):
            if b == 0 and s == -1:
                continue
            a_ = mp.mpf(a)
            b_ = s * mp.mpf(b)
            v = mcu(a_, b_)
            rows.append(('log_mcu', a_, b_, mp.log(v)))
print('kind,a,b,value')
for k, a, b, v in rows:
    print(f"{k},{f(a)},{f(b)},{f(v)}")
