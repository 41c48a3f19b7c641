# The layers of src/, bottom to top. A file includes headers of its own layer
# and of the layers below it, never above (test/core/layers_check.py checks):
#   base     allocation and error interface, category sets (no PostgreSQL, no CUDA)
#   model    model readers: XGBoost JSON/UBJSON, LightGBM text, CatBoost JSON, Treelite
#   core     path tables, packing, CPU SHAP (EXTEND/UNWOUNDSUM, quadrature), interactions,
#            the row pool that runs them on every core
#   gpu      GPU plan builders: the lane, quadrature and tree layouts cuda/ takes
#   service  the GPU service: a background worker that owns the GPUs, its shared state
#   backend  the backend's SQL glue
# PostgreSQL headers only in service/ and backend/.
# cuda/ holds the kernels behind the plain-C cuda/ts_cuda.h, at the gpu layer.
TS_BASE_SRCS = base/ts_error.c base/ts_alloc.c base/ts_alloc_tracked.c base/ts_interrupt.c
TS_MODEL_SRCS = model/ts_json.c model/ts_ubjson.c model/ts_model.c model/ts_catdict.c \
    model/ts_cityhash.c model/ts_xgboost.c model/ts_xgboost_cats.c model/ts_lightgbm.c \
    model/ts_catboost.c model/ts_treelite.c
TS_CORE_SRCS = core/ts_paths.c core/ts_shap_cpu.c core/ts_quadrature.c core/ts_quad_lanes.c core/ts_quad_tree.c core/ts_quad_pairs.c \
    core/ts_interactions.c \
    core/ts_pack.c core/ts_wire.c core/ts_row_pool.c core/ts_cpu_rows.c core/ts_topk.c \
    core/ts_interventional.c core/ts_interventional_paths.c \
    core/ts_interventional_plan.c
TS_GPU_SRCS = gpu/ts_gpu.c gpu/ts_gpu_quad.c gpu/ts_gpu_forest.c
TS_SERVICE_SRCS = service/ts_service.c service/ts_service_worker.c service/ts_service_relay.c \
    service/ts_service_request.c service/ts_executor.c service/ts_exec_serve.c service/ts_exec_models.c \
    service/ts_exec_device.c service/ts_exec_segments.c service/ts_exec_sched.c service/ts_exec_planner.c
TS_BACKEND_SRCS = backend/pg_treeshap.c backend/ts_settings.c backend/ts_alloc_pg.c \
    backend/ts_catalog.c backend/ts_model_store.c backend/ts_batch.c backend/ts_background.c backend/ts_table_source.c backend/ts_citus.c backend/ts_citus_pool.c backend/ts_explain.c backend/ts_run.c backend/ts_emit.c backend/ts_emit_top.c backend/ts_gpu_pg.c \
    backend/ts_gpu_info.c backend/ts_gpu_status.c backend/ts_jobs.c backend/ts_job_leader.c backend/ts_bulk_write.c backend/ts_job_worker.c backend/ts_threads.c \
    backend/ts_groups.c
# what the standalone tools (test/core/ts_cli, bench/ts_bench) link: no PostgreSQL
TS_TOOL_SRCS = $(TS_BASE_SRCS) $(TS_MODEL_SRCS) $(TS_CORE_SRCS)
