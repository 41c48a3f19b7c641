/*
 * ts_predict.cu - predictions on a GPU: one thread per row walks every tree
 * from its root to a leaf and adds the leaf's values to the row's margins,
 * tree after tree, as the host's ts_model_predict_margin does; additions in
 * the same order give the same doubles, bit for bit. A block first copies
 * its rows to shared memory when they fit, since each thread reads its row
 * once per node on every tree.
 */
#include "ts_predict.cuh"

#include "ts_device_array.cuh"
#include "ts_warp_dp.cuh"

struct TsGpuForest
{
	TsGpuNode  *nodes;
	int32_t    *roots;
	int32_t    *groups;
	double	   *values;
	double	   *base;
	uint32_t   *cat_pool;		/* the model's category sets; nullptr when none */
	int32_t		num_trees;
	int32_t		leaf_width;
	int32_t		num_outputs;
};

namespace
{

constexpr int kPredictThreads = 128;
constexpr size_t kPredictShared = 32 * 1024;	/* the block's rows, when they fit */

/* Where a present or missing x goes at a node: its next node. */
__device__ __forceinline__ int32_t
next_node(int4 node, const float *row, const uint32_t *__restrict__ cat_pool)
{
	float		x = row[node.y & TS_GPU_NODE_FEATURE];
	bool		left;

	if (isnan(x))
		left = (node.y & TS_GPU_NODE_DEFAULT_LEFT) != 0;
	else if (node.y & TS_GPU_NODE_CATEGORICAL)
		left = ts_warp::category_in(cat_pool + node.x, x);
	else
		left = x < __int_as_float(node.x);
	return left ? node.z : node.w;
}

/* The leaf a row reaches in a tree: x = threshold or cat, y = flags, z = left, w = right. */
__device__ __forceinline__ int4
leaf_of(const TsGpuNode *__restrict__ nodes, int32_t root, const float *row,
		const uint32_t *__restrict__ cat_pool)
{
	const int4 *n4 = reinterpret_cast<const int4 *>(nodes);
	int4		node = __ldg(n4 + root);

	while (node.z >= 0)
		node = __ldg(n4 + next_node(node, row, cat_pool));
	return node;
}

/*
 * Margins of a block's rows. kScalar: one output and scalar leaves, summed
 * in a register; otherwise in the row's outputs of out, in tree order.
 */
template <bool kStage, bool kScalar>
__global__ void __launch_bounds__(kPredictThreads)
predict_kernel(TsGpuForest f, const float *__restrict__ x, int32_t nrows, int32_t num_features,
			   double *__restrict__ out)
{
	const uint32_t *cat_pool = f.cat_pool;
	extern __shared__ float tile[];
	int64_t		first = (int64_t) blockIdx.x * kPredictThreads;
	int64_t		row = first + threadIdx.x;
	const float *xr = x + row * num_features;

	if (kStage)
	{
		int64_t		count = (nrows - first < kPredictThreads ? nrows - first : kPredictThreads) *
			(int64_t) num_features;

		for (int64_t i = threadIdx.x; i < count; i += kPredictThreads)
			tile[i] = x[first * num_features + i];
		__syncthreads();
		xr = tile + (int64_t) threadIdx.x * num_features;
	}
	if (row >= nrows)
		return;
	if (kScalar)
	{
		double		acc = f.base[0];

		for (int32_t t = 0; t < f.num_trees; t++)
			acc += __ldg(f.values + leaf_of(f.nodes, __ldg(f.roots + t), xr, cat_pool).w);
		out[row] = acc;
		return;
	}
	double	   *margin = out + row * f.num_outputs;

	for (int32_t k = 0; k < f.num_outputs; k++)
		margin[k] = f.base[k];
	for (int32_t t = 0; t < f.num_trees; t++)
	{
		const double *v = f.values + (int64_t) leaf_of(f.nodes, __ldg(f.roots + t), xr, cat_pool).w *
			f.leaf_width;
		double	   *m = margin + __ldg(f.groups + t);

		for (int32_t k = 0; k < f.leaf_width; k++)
			m[k] += __ldg(v + k);
	}
}

template <bool kStage>
void
launch_predict(const TsGpuForest *f, const float *x, int32_t nrows, int32_t num_features, double *out,
			   size_t shared, cudaStream_t stream)
{
	unsigned	blocks = (unsigned) ((nrows + kPredictThreads - 1) / kPredictThreads);

	if (f->num_outputs == 1 && f->leaf_width == 1)
		predict_kernel<kStage, true><<<blocks, kPredictThreads, shared, stream>>>(
			*f, x, nrows, num_features, out);
	else
		predict_kernel<kStage, false><<<blocks, kPredictThreads, shared, stream>>>(
			*f, x, nrows, num_features, out);
}

}								/* namespace */

static_assert(sizeof(TsGpuNode) == 16, "a node is one 16-byte load");

cudaError_t
ts_forest_upload(const TsGpuForestDesc *desc, int32_t num_outputs, TsGpuForest **out)
{
	TsGpuForest *f = new TsGpuForest();
	int32_t		width = desc->leaf_width > 1 ? desc->leaf_width : 1;
	cudaError_t rc;

	f->num_trees = desc->num_trees;
	f->leaf_width = width;
	f->num_outputs = num_outputs;
	if ((rc = ts_upload_array(&f->nodes, desc->nodes, (size_t) desc->num_nodes)) != cudaSuccess ||
		(rc = ts_upload_array(&f->roots, desc->roots, (size_t) desc->num_trees)) != cudaSuccess ||
		(rc = ts_upload_array(&f->groups, desc->groups, (size_t) desc->num_trees)) != cudaSuccess ||
		(rc = ts_upload_array(&f->values, desc->values, (size_t) desc->num_leaves * width)) != cudaSuccess ||
		(rc = ts_upload_array(&f->base, desc->base_margin, (size_t) num_outputs)) != cudaSuccess ||
		(desc->cat_pool_len > 0 &&
		 (rc = ts_upload_array(&f->cat_pool, desc->cat_pool, (size_t) desc->cat_pool_len)) != cudaSuccess))
	{
		ts_forest_free(f);
		*out = nullptr;
		return rc;
	}
	*out = f;
	return cudaSuccess;
}

void
ts_forest_free(TsGpuForest *f)
{
	if (f == nullptr)
		return;
	cudaFree(f->nodes);
	cudaFree(f->roots);
	cudaFree(f->groups);
	cudaFree(f->values);
	cudaFree(f->base);
	cudaFree(f->cat_pool);
	delete f;
}

cudaError_t
ts_forest_enqueue(const TsGpuForest *f, const float *x, int32_t nrows, int32_t num_features,
				  double *out, cudaStream_t stream)
{
	size_t		shared = (size_t) kPredictThreads * num_features * sizeof(float);

	if (nrows <= 0)
		return cudaSuccess;
	if (shared <= kPredictShared)
		launch_predict<true>(f, x, nrows, num_features, out, shared, stream);
	else
		launch_predict<false>(f, x, nrows, num_features, out, 0, stream);
	return cudaGetLastError();
}
