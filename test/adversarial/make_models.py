#!/usr/bin/env python3
"""Adversarial XGBoost models (JSON) for test/adversarial/cancel_check.py, written by hand.

A chain tree: node 2i splits, its left child 2i+1 is a leaf, its right child 2i+2 goes
on; the last split's right child is a leaf too. Level i splits on feature i % features.
A chain of depth d has d + 1 paths whose unmerged lengths sum to about d^2 / 2: what
a path table costs before repeated features merge. Kinds (name: depth, features, trees):

  chain30k:   30,000 levels, 3 features, one tree
  chain200k:  200,000 levels, 3 features, one tree
  chain5k:    5,000 levels, 1,500 features (each of the first 1,500 levels its own), one tree
  forest:     64 trees of 2,000 levels over 200 features
  chain90:    90 levels over 80 features, two trees: paths of up to 80 merged features,
              past the 64 that interaction values take in vector lanes
              (test/core/lanes_check.py: the rest go through the dynamic programme)

Usage: make_models.py KIND [OUT]   (OUT defaults to stdout). Deterministic.
"""
import functools
import json
import random
import sys

KINDS = {
    "chain30k": (30000, 3, 1),
    "chain200k": (200000, 3, 1),
    "chain5k": (5000, 1500, 1),
    "forest": (2000, 200, 64),
    "chain90": (90, 80, 2),
}


def chain_tree(tree_id, depth, features, rng):
    """One chain tree as XGBoost's JSON writes a tree."""
    n = 2 * depth + 1
    left, right, parents = [-1] * n, [-1] * n, [2147483647] * n
    split_index, cond, default_left = [0] * n, [0.0] * n, [0] * n
    hess = [0.0] * n
    weights = [0.0] * n
    for i in range(depth):
        s, leaf, nxt = 2 * i, 2 * i + 1, 2 * i + 2
        left[s], right[s] = leaf, nxt
        parents[leaf] = parents[nxt] = s
        split_index[s] = i % features
        cond[s] = round(rng.uniform(-1.0, 1.0), 4)
        default_left[s] = rng.randint(0, 1)
    for i in range(depth + 1):      # cover: every leaf 1 + a little, a split the sum of its children
        hess[2 * i + 1 if i < depth else n - 1] = 1.0 + (i % 7)
    for i in reversed(range(depth)):
        hess[2 * i] = hess[2 * i + 1] + hess[2 * i + 2]
    for j in range(n):
        if left[j] == -1:
            weights[j] = cond[j] = round(rng.uniform(-0.1, 0.1), 5)   # a leaf's condition is its value
    return {
        "base_weights": weights, "categories": [], "categories_nodes": [], "categories_segments": [],
        "categories_sizes": [], "default_left": default_left, "id": tree_id, "left_children": left,
        "loss_changes": [0.0] * n, "parents": parents, "right_children": right,
        "split_conditions": cond, "split_indices": split_index, "split_type": [0] * n,
        "sum_hessian": hess,
        "tree_param": {"num_deleted": "0", "num_feature": str(features), "num_nodes": str(n),
                       "size_leaf_vector": "1"},
    }


def model(kind):
    depth, features, trees = KINDS[kind]
    rng = random.Random(kind)
    return {
        "learner": {
            "attributes": {}, "feature_names": [], "feature_types": [],
            "gradient_booster": {"model": {
                "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(trees)},
                "iteration_indptr": list(range(trees + 1)), "tree_info": [0] * trees,
                "trees": [chain_tree(t, depth, features, rng) for t in range(trees)], "cats": {}},
                "name": "gbtree"},
            "learner_model_param": {"base_score": "[5E-1]", "boost_from_average": "1", "num_class": "0",
                                    "num_feature": str(features), "num_target": "1"},
            "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}},
        },
        "version": [3, 0, 0],
    }


@functools.lru_cache(maxsize=None)
def model_bytes(kind):
    """The model's JSON, made once per process."""
    return json.dumps(model(kind), separators=(",", ":")).encode()


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in KINDS:
        sys.exit(__doc__)
    data = model_bytes(sys.argv[1])
    if len(sys.argv) > 2:
        with open(sys.argv[2], "wb") as f:
            f.write(data)
    else:
        sys.stdout.buffer.write(data)
