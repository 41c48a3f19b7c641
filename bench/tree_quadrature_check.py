#!/usr/bin/env python3
"""A model, in Python, of Quadrature-TreeSHAP carried down each tree instead of
evaluated path by path (issue 46: the form a faster CPU path would take), checked
against brute-force Shapley values of each tree on the given rows.

Per row and tree, a depth-first walk carries G(t_q), the product over the features
met so far of z + t_q (o - z), at the Gauss-Legendre nodes t_q of [0, 1] (ceil(U/2)
of them for the tree's most distinct features U on a path). A feature met again is
merged: its factor is divided out and the factor of the products of its fractions
put in. Walking back up, S(n) sums v G over the leaves below n. The edge into child
c of a split on feature k then adds to phi_k

    (o - z) * sum_q w_q / (z + t_q (o - z)) * (S(c) - sum S(m))

over the topmost splits m on k below c (whose leaves give k's share at m instead):
O(nodes x points) per tree and row, where path by path it is O(paths x d^2 / 2).

    python3 bench/tree_quadrature_check.py WORK_DIR NAME [ROWS]

WORK_DIR as bench/grid.py writes it (NAME.json, an XGBoost model with numerical
splits, and NAME.rows.f32). Prints the worst deviation from brute force, relative
to each tree's largest value, over ROWS rows (default 5) and every tree.
"""
import itertools
import json
import math
import os
import sys

import numpy as np


def tree_of(t):
    """One XGBoost JSON tree, with each child's topmost same-feature splits below it."""
    left, right, feat = t["left_children"], t["right_children"], t["split_indices"]

    def topmost(i, k, out):
        if left[i] != -1:
            if feat[i] == k:
                out.append(i)
            else:
                topmost(left[i], k, out)
                topmost(right[i], k, out)
        return out

    def most_distinct(i, seen):
        if left[i] == -1:
            return len(seen)
        return max(most_distinct(c, seen | {feat[i]}) for c in (left[i], right[i]))

    tops = {c: topmost(c, feat[i], []) for i in range(len(left)) if left[i] != -1 for c in (left[i], right[i])}
    return {"left": left, "right": right, "feat": feat, "cover": t["sum_hessian"],
            "default_left": t["default_left"], "tops": tops,
            "cond": [float(np.float32(c)) for c in t["split_conditions"]],  # leaves: their values
            "points": max(1, math.ceil(most_distinct(0, frozenset()) / 2))}


def goes_left(tr, i, x):
    v = x[tr["feat"][i]]
    return bool(tr["default_left"][i]) if np.isnan(v) else v < tr["cond"][i]


def carried(tr, x, nf):
    """The tree's contributions by the quadrature carried down the tree."""
    t, w = np.polynomial.legendre.leggauss(tr["points"])
    t, w = (t + 1) / 2, w / 2
    left, right, feat, cover = tr["left"], tr["right"], tr["feat"], tr["cover"]
    phi, sums = np.zeros(nf), {}

    def walk(i, g_prod, merged):
        if left[i] == -1:
            sums[i] = tr["cond"][i] * g_prod
            return sums[i]
        k, to_left, total = feat[i], goes_left(tr, i, x), 0.0
        for c, o_c in ((left[i], float(to_left)), (right[i], float(not to_left))):
            z0, o0 = merged.get(k, (1.0, 1.0))
            g_old = z0 + t * (o0 - z0) if k in merged else 1.0
            z, o = z0 * cover[c] / cover[i], o0 * o_c
            g = z + t * (o - z)
            # a factor of 0 (no cover, not taken) stays 0 once merged: so does the product
            g_c = np.where(g_old == 0, 0.0, g_prod / np.where(g_old == 0, 1.0, g_old)) * g
            s_c = walk(c, g_c, {**merged, k: (z, o)})
            own = s_c - sum((sums[m] for m in tr["tops"][c]), 0.0)
            phi[k] += (o - z) * np.sum(w * np.divide(own, g, out=np.zeros_like(own), where=g != 0))
            total = total + s_c
        sums[i] = total
        return total

    walk(0, np.ones(len(t)), {})
    return phi


def game(tr, x):
    """The tree's features and its path-dependent value of a set of them, value(known): at a
    split on a known feature follow x, otherwise weigh both children by cover."""
    left, right, feat, cover = tr["left"], tr["right"], tr["feat"], tr["cover"]
    used = sorted({feat[i] for i in range(len(left)) if left[i] != -1})

    def node_value(i, known):
        if left[i] == -1:
            return tr["cond"][i]
        if feat[i] in known:
            return node_value(left[i] if goes_left(tr, i, x) else right[i], known)
        return (cover[left[i]] * node_value(left[i], known) + cover[right[i]] * node_value(right[i], known)) / cover[i]

    return used, lambda known: node_value(0, known)


def brute(tr, x, nf):
    """The tree's Shapley values over its features, by every subset (path-dependent expectations)."""
    used, value = game(tr, x)
    phi, m = np.zeros(nf), len(used)
    for k in used:
        others = [f for f in used if f != k]
        for r in range(m):
            weight = math.factorial(r) * math.factorial(m - r - 1) / math.factorial(m)
            for sub in itertools.combinations(others, r):
                phi[k] += weight * (value(set(sub) | {k}) - value(set(sub)))
    return phi


def worst_over_trees(work, name, rows, evaluate, reference):
    """The model's trees, and the worst deviation of evaluate(tree, row, features) from
    reference(...) over its first rows and every tree, relative to each reference's largest entry."""
    with open(os.path.join(work, name + ".json")) as f:
        model = json.load(f)
    nf = int(model["learner"]["learner_model_param"]["num_feature"])
    trees = [tree_of(t) for t in model["learner"]["gradient_booster"]["model"]["trees"]]
    x_all = np.fromfile(os.path.join(work, name + ".rows.f32"), dtype=np.float32).reshape(-1, nf)[:rows]
    worst = 0.0
    for x in x_all.astype(np.float64):
        for tr in trees:
            ref = reference(tr, x, nf)
            worst = max(worst, np.abs(evaluate(tr, x, nf) - ref).max() / max(np.abs(ref).max(), 1e-300))
    return trees, worst


def main():
    work, name = sys.argv[1], sys.argv[2]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    trees, worst = worst_over_trees(work, name, rows, carried, brute)
    repeats = sum(1 for tr in trees for below in tr["tops"].values() if below)
    print(f"{name}: {rows} rows x {len(trees)} trees ({repeats} edges with the same feature split below them): "
          f"worst deviation from brute force {worst:.2e} relative")
    return 0 if worst < 1e-12 else 1


if __name__ == "__main__":
    sys.exit(main())
