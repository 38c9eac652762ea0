#!/usr/bin/env python3
"""Naive double-precision references for the KDE regress suite (sql/kde.sql).

Plain Python on purpose (no numpy on the CI machine): prints the plug-in,
Scott, Silverman and LSCV bandwidths of the deterministic data sets that
sql/kde.sql builds, from the formulas in DESIGN.md ("KDE definitions").
"""
import math

def data1(n=400):
    return [math.sin(i * 1.3) + (i % 2) * 4 for i in range(1, n + 1)]

def data2(n=300):
    return [(math.sin(i * 1.3) + (i % 2) * 4, math.cos(i * 0.7) + math.sin(i * 1.3) * 0.5) for i in range(1, n + 1)]

def mean_sd(x):
    n = len(x); m = sum(x) / n
    return m, math.sqrt(sum((v - m) ** 2 for v in x) / (n - 1))

PHI0 = 1 / math.sqrt(2 * math.pi)

def psi(z, r, g):
    n = len(z); s = 0.0
    for a in z:
        for b in z:
            t = (a - b) / g; t2 = t * t; phi = PHI0 * math.exp(-t2 / 2)
            if r == 6: s += (t2**3 - 15 * t2**2 + 45 * t2 - 15) * phi
            elif r == 4: s += (t2**2 - 6 * t2 + 3) * phi
            else: s += (t2 - 1) * phi
    return s / (n * n * g ** (r + 1))

def plugin(x):
    n = len(x); m, sd = mean_sd(x); z = [(v - m) / sd for v in x]
    psi8 = 105 / (32 * math.sqrt(math.pi))
    g1 = (-2 * (-15 * PHI0) / (psi8 * n)) ** (1 / 9)
    psi6 = psi(z, 6, g1)
    g2 = (-2 * (3 * PHI0) / (psi6 * n)) ** (1 / 7)
    psi4 = psi(z, 4, g2)
    return sd * ((1 / (2 * math.sqrt(math.pi))) / (psi4 * n)) ** 0.2

def quantile7(x, p):
    s = sorted(x); h = (len(s) - 1) * p; lo = math.floor(h)
    return s[lo] + (h - lo) * (s[min(lo + 1, len(s) - 1)] - s[lo])

def scott(x):
    return 1.06 * mean_sd(x)[1] * len(x) ** -0.2

def silverman(x):
    iqr = quantile7(x, 0.75) - quantile7(x, 0.25)
    return 0.9 * min(mean_sd(x)[1], iqr / 1.34) * len(x) ** -0.2

def lscv(points, grid=150):
    n = len(points); d = len(points[0])
    means = [sum(p[k] for p in points) / n for k in range(d)]
    c = [[p[k] - means[k] for k in range(d)] for p in points]
    S = [[sum(r[a] * r[b] for r in c) / (n - 1) for b in range(d)] for a in range(d)]
    L = [[0.0] * d for _ in range(d)]  # Cholesky
    for i in range(d):
        for j in range(i + 1):
            s = S[i][j] - sum(L[i][k] * L[j][k] for k in range(j))
            L[i][j] = math.sqrt(s) if i == j else s / L[j][j]
    det = 1.0
    for i in range(d): det *= L[i][i] ** 2
    z = []
    for r in c:
        w = [0.0] * d
        for i in range(d): w[i] = (r[i] - sum(L[i][k] * w[k] for k in range(i))) / L[i][i]
        z.append(w)
    Y = [sum((z[i][k] - z[j][k]) ** 2 for k in range(d)) for i in range(n) for j in range(i + 1, n)]
    C1 = (2 * math.pi) ** (d / 2) * math.sqrt(det); C2 = (4 * math.pi) ** (d / 2) * math.sqrt(det)
    def g(h):
        a = sum(math.exp(-y / (4 * h * h)) for y in Y); b = sum(math.exp(-y / (2 * h * h)) for y in Y)
        return h ** -d * ((2 / n**2) * a / C2 - (4 / (n * (n - 1))) * b / C1 + 1 / (n * C2))
    h0 = (4 / (d + 2)) ** (1 / (d + 4)) * n ** (-1 / (d + 4))
    hs = [h0 / 4 + (4 * h0 - h0 / 4) * k / (grid - 1) for k in range(grid)]
    gs = [g(h) for h in hs]; k = min(range(grid), key=lambda i: gs[i])
    a, b = hs[max(k - 1, 0)], hs[min(k + 1, grid - 1)]
    best_h, best_g = hs[k], gs[k]
    r = (math.sqrt(5) - 1) / 2
    x1, x2 = b - r * (b - a), a + r * (b - a); f1, f2 = g(x1), g(x2)
    for _ in range(40):
        for hh, gg in ((x1, f1), (x2, f2)):
            if gg < best_g: best_h, best_g = hh, gg
        if f1 < f2: b, x2, f2 = x2, x1, f1; x1 = b - r * (b - a); f1 = g(x1)
        else: a, x1, f1 = x1, x2, f2; x2 = a + r * (b - a); f2 = g(x2)
    return best_h, best_g, h0

if __name__ == "__main__":
    x = data1()
    print("plugin", repr(plugin(x)))
    print("scott", repr(scott(x)))
    print("silverman", repr(silverman(x)))
    h, gmin, h0 = lscv([(v,) for v in x])
    print("lscv1d h*sd", repr(h * mean_sd(x)[1]), "objective", repr(gmin), "h0", repr(h0))
    h, gmin, h0 = lscv(data2())
    print("lscv2d h", repr(h), "objective", repr(gmin), "h0", repr(h0))
