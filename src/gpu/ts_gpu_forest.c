/*
 * ts_gpu_forest.c - a model's node arrays in the GPU's form: a 16-byte node
 * (threshold or category set, feature and flags, children with global
 * indices) and the leaves' values by leaf ordinal, so that the traversal
 * loads one node per level and one value per tree.
 */
#include "gpu/ts_gpu_forest.h"

/* One node of tree node range base, at global index g, as the GPU reads it. */
static TsGpuNode
gpu_node(const TsModel *m, int64_t base, int64_t g, int32_t leaf)
{
	TsGpuNode	n;

	if (m->left[g] == -1)
	{
		n.threshold = 0.0f;
		n.flags_feature = 0;
		n.left = -1;
		n.right = leaf;
		return n;
	}
	n.flags_feature = m->split_feature[g] | (m->default_left[g] ? TS_GPU_NODE_DEFAULT_LEFT : 0);
	if (m->cat_set[g] != -1)
	{
		n.cat = m->cat_set[g];
		n.flags_feature |= TS_GPU_NODE_CATEGORICAL;
	}
	else
		n.threshold = m->threshold[g];
	n.left = (int32_t) (base + m->left[g]);
	n.right = (int32_t) (base + m->right[g]);
	return n;
}

TsGpuForestDesc *
ts_gpu_forest_build(const TsModel *m)
{
	TsGpuForestDesc *f = ts_alloc0(sizeof(TsGpuForestDesc));
	int32_t		width = ts_leaf_size(m);
	TsGpuNode  *nodes = ts_alloc(sizeof(TsGpuNode) * (size_t) (m->num_nodes > 0 ? m->num_nodes : 1));
	int32_t    *roots = ts_alloc(sizeof(int32_t) * (size_t) (m->num_trees > 0 ? m->num_trees : 1));
	int64_t		num_leaves = 0;
	double	   *values;
	int32_t		leaves = 0;

	/* every node marked a leaf gets values, reachable or not */
	for (int64_t g = 0; g < m->num_nodes; g++)
		num_leaves += m->left[g] == -1;
	values = ts_alloc(sizeof(double) * (size_t) (num_leaves > 0 ? num_leaves : 1) * width);

	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int64_t		base = m->tree_offset[t];

		roots[t] = (int32_t) base;
		ts_check_interrupts_after(m->tree_offset[t + 1] - base);
		for (int64_t g = base; g < m->tree_offset[t + 1]; g++)
		{
			nodes[g] = gpu_node(m, base, g, leaves);
			if (m->left[g] != -1)
				continue;
			for (int32_t k = 0; k < width; k++)
				values[(size_t) leaves * width + k] = m->leaf_value[g * width + k];
			leaves++;
		}
	}
	f->nodes = nodes;
	f->num_nodes = m->num_nodes;
	f->roots = roots;
	f->groups = m->tree_group;
	f->num_trees = m->num_trees;
	f->values = values;
	f->num_leaves = leaves;
	f->leaf_width = width;
	f->base_margin = m->base_margin;
	f->cat_pool = m->cat_pool_len > 0 ? m->cat_pool : NULL;
	f->cat_pool_len = m->cat_pool_len;
	return f;
}

size_t
ts_gpu_forest_bytes(const TsGpuForestDesc *f)
{
	return (size_t) f->num_nodes * sizeof(TsGpuNode) + (size_t) f->num_trees * 2 * sizeof(int32_t) +
		(size_t) f->num_leaves * f->leaf_width * sizeof(double) + (size_t) f->cat_pool_len * sizeof(uint32_t);
}

void
ts_gpu_forest_free(TsGpuForestDesc *f)
{
	if (f == NULL)
		return;
	ts_free((TsGpuNode *) f->nodes);
	ts_free((int32_t *) f->roots);
	ts_free((double *) f->values);
	ts_free(f);
}
