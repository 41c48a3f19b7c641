#!/usr/bin/env python3
"""A model, in Python, of SHAP interaction values by quadrature (issue 46: the
form a faster CPU path for interactions would take), checked against brute-force
Shapley interaction values of each tree on the given rows.

On a path whose merged elements l have zero fractions z_l and one fractions o_l
(the path's value v), the Shapley interaction index of two of its features i != j
is sum over S of |S|! (m - |S| - 2)! / (m - 1)! times the pair's second difference,
and in product form that is

    Phi_ij = 1/2 v (o_i - z_i) (o_j - z_j) * integral_0^1 prod_{l != i, j} (z_l + t (o_l - z_l)) dt

(the half: XGBoost's pred_interactions and shap put half of the index at (i, j)
and half at (j, i)); the diagonal is phi_i minus the row's other entries. The
integrand has degree d - 2 for a path of d features, so ceil(d / 2) Gauss-Legendre
nodes, the path's own for phi, are exact for both. Per path and point the products
without two elements come from prefix, running and suffix products: O(d^2) a point,
no division.

    python3 bench/interactions_quadrature_check.py WORK_DIR NAME [ROWS]

WORK_DIR as bench/grid.py writes it (NAME.json, an XGBoost model with numerical
splits, and NAME.rows.f32). Prints the worst deviation from brute force, relative
to each tree's largest entry, over ROWS rows (default 3) and every tree.
"""
import itertools
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tree_quadrature_check import game, goes_left, worst_over_trees  # noqa: E402


def paths(tr, x):
    """Each root-to-leaf path's merged elements {feature: (z, o)} and its leaf value."""
    left, right, feat, cover = tr["left"], tr["right"], tr["feat"], tr["cover"]
    out = []

    def walk(i, merged):
        if left[i] == -1:
            out.append((merged, tr["cond"][i]))
            return
        k, to_left = feat[i], goes_left(tr, i, x)
        for c, o_c in ((left[i], float(to_left)), (right[i], float(not to_left))):
            z0, o0 = merged.get(k, (1.0, 1.0))
            walk(c, {**merged, k: (z0 * cover[c] / cover[i], o0 * o_c)})

    walk(0, {})
    return out


def by_quadrature(tr, x, nf):
    """The tree's interaction matrix, path by path, by the product form above."""
    phi = np.zeros((nf, nf))
    for merged, v in paths(tr, x):
        feats = list(merged)
        z = np.array([merged[f][0] for f in feats])
        o = np.array([merged[f][1] for f in feats])
        d = len(feats)
        t, w = np.polynomial.legendre.leggauss(max(1, math.ceil(d / 2)))
        t, w = (t + 1) / 2, w / 2
        g = z[None, :] + t[:, None] * (o - z)[None, :]          # points x elements
        pre = np.cumprod(np.hstack([np.ones((len(t), 1)), g]), axis=1)[:, :d]           # before e
        suf = np.cumprod(np.hstack([np.ones((len(t), 1)), g[:, ::-1]]), axis=1)[:, :d][:, ::-1]  # after e
        for a in range(d):
            phi[feats[a], feats[a]] += v * (o[a] - z[a]) * np.sum(w * pre[:, a] * suf[:, a])
            run = np.ones(len(t))                                  # product strictly between a and b
            for b in range(a + 1, d):
                pair = 0.5 * v * (o[a] - z[a]) * (o[b] - z[b]) * np.sum(w * pre[:, a] * run * suf[:, b])
                phi[feats[a], feats[b]] += pair
                phi[feats[b], feats[a]] += pair
                run = run * g[:, b]
    for a in range(nf):                                            # the diagonal: phi_a minus the rest
        phi[a, a] -= phi[a].sum() - phi[a, a]
    return phi


def brute(tr, x, nf):
    """The tree's interaction matrix by every subset: half the Shapley interaction index
    off the diagonal, phi_a minus the row's others on it (pred_interactions' definition)."""
    used, value = game(tr, x)
    m, out = len(used), np.zeros((nf, nf))
    for a, b in itertools.combinations(used, 2):
        others = [f for f in used if f not in (a, b)]
        index = 0.0
        for r in range(m - 1):
            weight = math.factorial(r) * math.factorial(m - r - 2) / math.factorial(m - 1)
            for sub in itertools.combinations(others, r):
                s = set(sub)
                index += weight * (value(s | {a, b}) - value(s | {a}) - value(s | {b}) + value(s))
        out[a, b] = out[b, a] = index / 2
    for a in used:
        others = [f for f in used if f != a]
        phi = sum(math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m)
                  * (value(set(sub) | {a}) - value(set(sub)))
                  for r in range(m) for sub in itertools.combinations(others, r))
        out[a, a] = phi - (out[a].sum() - out[a, a])
    return out


def main():
    work, name = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    trees, worst = worst_over_trees(work, name, rows, by_quadrature, brute)
    print(f"{name}: {rows} rows x {len(trees)} trees: interaction values by quadrature, worst deviation "
          f"from brute force {worst:.2e} relative")
    return 0 if worst < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
