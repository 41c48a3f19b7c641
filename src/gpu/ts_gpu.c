/*
 * ts_gpu.c - building GPU plans from path tables. No PostgreSQL here: the
 * extension and the benchmark both use it.
 */
#include "gpu/ts_gpu.h"

#include <math.h>
#include <string.h>

#include "gpu/ts_gpu_forest.h"
#include "gpu/ts_gpu_quad.h"
#include "core/ts_shap_cpu.h"

/*
 * A path adds at most |v| * prod(max(1, z)) to any one phi: the Shapley
 * weights over subsets sum to 1 and every factor is in [0, max(1, z)]. The
 * sum over paths bounds |phi|; 2^61 / bound leaves headroom in int64.
 */
double
ts_gpu_fixed_scale(const TsPathTable *pt)
{
	double		bound = 0.0;
	int			exponent;

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		double		c = 0.0;

		for (int32_t k = 0; k < pt->value_width; k++)
			c += fabs(ts_path_value(pt, p, k));
		for (int64_t e = pt->path_start[p]; e < pt->path_start[p + 1]; e++)
			if (pt->zero_fraction[e] > 1.0)
				c *= pt->zero_fraction[e];
		bound += c;
		ts_check_interrupts_after(1 + ts_path_len(pt, p));
	}
	if (!isfinite(bound))
		return ldexp(1.0, 61 - 1024);
	if (bound <= 0.0)
		bound = 1.0;
	frexp(bound, &exponent);	/* bound < 2^exponent */
	return ldexp(1.0, 61 - exponent);
}

/* Fill the lanes of one path starting at lane first of bin. */
static void
fill_path(TsGpuLane *bin, const TsPathTable *pt, int64_t p, int first)
{
	int64_t		start = pt->path_start[p];
	int			len = (int) (pt->path_start[p + 1] - start);

	for (int i = 0; i < len; i++)
	{
		TsGpuLane  *l = &bin[first + i];

		l->zero_fraction = pt->zero_fraction[start + i];
		if (pt->value_width == 1)
			l->value = pt->path_value[p];
		else
			l->value_at = p * pt->value_width;
		l->lower = pt->lower[start + i];
		l->upper = pt->upper[start + i];
		l->feature = pt->feature[start + i];
		l->group = pt->path_group[p];
		l->missing = pt->missing[start + i];
		l->cat = pt->cat[start + i];
		l->first = (uint8_t) first;
		l->len = (uint8_t) len;
	}
}

TsGpuLane *
ts_gpu_lanes(const TsPathTable *pt, const TsPacking *pk)
{
	TsGpuLane  *lanes = ts_alloc0((size_t) (pk->num_bins > 0 ? pk->num_bins : 1) *
								  TS_GPU_LANES * sizeof(TsGpuLane));

	for (int64_t b = 0; b < pk->num_bins; b++)
	{
		TsGpuLane  *bin = lanes + b * TS_GPU_LANES;
		int			lane = 0;

		ts_check_interrupts_after(4 * TS_GPU_LANES);
		for (int64_t i = pk->bin_start[b]; i < pk->bin_start[b + 1]; i++)
		{
			int64_t		p = pk->paths[i];

			fill_path(bin, pt, p, lane);
			lane += (int) (pt->path_start[p + 1] - pt->path_start[p]);
		}
		for (; lane < TS_GPU_LANES; lane++)
		{
			bin[lane].feature = TS_GPU_LANE_EMPTY;
			bin[lane].cat = -1;
			bin[lane].zero_fraction = 1.0;
			bin[lane].first = (uint8_t) lane;
			bin[lane].len = 1;
		}
	}
	return lanes;
}

/* Bytes a layout takes on a GPU, about: its arrays (allocation rounding aside). */
static size_t
device_bytes(const TsGpuTableDesc *d)
{
	const TsGpuQuadDesc *q = d->quad;
	size_t		bytes = (size_t) d->num_bins * TS_GPU_LANES * sizeof(TsGpuLane) +
		(size_t) d->num_outputs * sizeof(double) + (size_t) d->cat_pool_len * sizeof(uint32_t) +
		(d->values != NULL ? (size_t) d->num_values * sizeof(double) : 0);

	if (q != NULL)
		bytes += (size_t) q->num_chunks * sizeof(TsGpuQuadChunk) +
			(size_t) q->num_paths * (sizeof(TsGpuQuadPath) + (q->leaf_value != NULL ? sizeof(double) : 0)) +
			(size_t) q->num_elems * (sizeof(TsGpuQuadElem) + sizeof(int32_t)) +
			(size_t) q->num_coef * sizeof(double) + (size_t) q->num_slots * sizeof(int32_t);
	if (d->forest != NULL)
		bytes += ts_gpu_forest_bytes(d->forest);
	return bytes;
}

TsGpuPlan *
ts_gpu_plan_layout(const TsPathTable *pt, const TsModel *model, TsPackAlgo algo)
{
	TsGpuPlan  *plan = ts_alloc0(sizeof(TsGpuPlan));
	TsGpuTableDesc *desc = &plan->desc;

	plan->paths = pt;
	plan->packing = ts_pack_paths(pt, algo);
	plan->fixed_scale = ts_gpu_fixed_scale(pt);
	desc->lanes = ts_gpu_lanes(pt, plan->packing);
	desc->num_bins = plan->packing->num_bins;
	desc->num_features = pt->num_features;
	desc->num_outputs = pt->num_outputs;
	desc->bias = pt->bias;
	desc->cat_pool = pt->cat_pool;
	desc->cat_pool_len = pt->cat_pool_len;
	desc->fixed_scale = plan->fixed_scale;
	desc->value_width = pt->value_width;
	desc->values = pt->value_width > 1 ? pt->path_value : NULL;
	desc->num_values = pt->num_paths * pt->value_width;
	desc->quad = ts_gpu_quad_build(pt);
	desc->forest = model != NULL ? ts_gpu_forest_build(model) : NULL;
	plan->device_bytes = device_bytes(desc);
	return plan;
}

TsGpuStatus
ts_gpu_plan_upload(const TsGpuPlan *plan, TsGpuTable **out, char *msg, size_t msglen)
{
	return ts_gpu_table_upload(&plan->desc, out, msg, msglen);
}

void
ts_gpu_plan_free(TsGpuPlan *plan)
{
	if (plan == NULL)
		return;
	ts_gpu_plan_release_device(plan);
	ts_gpu_quad_free((TsGpuQuadDesc *) plan->desc.quad);
	ts_gpu_forest_free((TsGpuForestDesc *) plan->desc.forest);
	ts_free((TsGpuLane *) plan->desc.lanes);
	ts_pack_free(plan->packing);
	ts_free(plan);
}

TsGpuStatus
ts_gpu_plan_build(const TsPathTable *pt, const TsModel *model, TsPackAlgo algo, TsGpuPlan **out,
				  char *msg, size_t msglen)
{
	TsGpuPlan  *plan = ts_gpu_plan_layout(pt, model, algo);
	TsGpuStatus rc = ts_gpu_plan_upload(plan, &plan->table, msg, msglen);

	*out = NULL;
	if (rc != TS_GPU_OK)
	{
		ts_gpu_plan_free(plan);
		return rc;
	}
	*out = plan;
	return TS_GPU_OK;
}

void
ts_gpu_plan_release_device(TsGpuPlan *plan)
{
	ts_gpu_table_free(plan->table);
	plan->table = NULL;
}
