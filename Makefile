# pg_treeshap - PGXS build. CUDA is optional: with nvcc (on PATH or in
# $(CUDA_HOME)) the cuda/ objects link in with a static CUDA runtime;
# WITH_CUDA=no, or no nvcc, gives a CPU-only build.
EXTENSION = pg_treeshap
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" pg_treeshap.control)

MODULE_big = pg_treeshap
include src/sources.mk
OBJS = $(patsubst %.c,src/%.o,$(TS_BASE_SRCS) $(TS_MODEL_SRCS) $(TS_CORE_SRCS) $(TS_SERVICE_SRCS) $(TS_BACKEND_SRCS)) \
    cuda/ts_job.o
# the released scripts, their updates, and the current version's fresh script,
# written from them so that a fresh install and an update give the same catalog
DATA_built = extension/$(EXTENSION)--$(EXTVERSION).sql
DATA = extension/$(EXTENSION)--0.1.0.sql extension/$(EXTENSION)--0.1.0--0.2.0.sql

REGRESS = catalog explain errors
REGRESS_OPTS = --inputdir=. --load-extension=$(EXTENSION)

PG_CONFIG ?= pg_config
PG_CFLAGS += -Wall -Wextra -Werror=implicit-function-declaration
# PostgreSQL's own headers trip -Wextra; treat them as system headers.
PG_CPPFLAGS += -isystem $(shell $(PG_CONFIG) --includedir-server)
# includes name their layer: "core/ts_paths.h", "cuda/ts_cuda.h"
PG_CPPFLAGS += -I$(srcdir)/src -I$(srcdir)

# PGXS wants LLVM bitcode for every object; nvcc objects have none.
override with_llvm = no

CUDA_HOME ?= /usr/local/cuda
WITH_CUDA ?= auto
NVCC := $(shell command -v nvcc 2>/dev/null || ls $(CUDA_HOME)/bin/nvcc 2>/dev/null)
ifeq ($(WITH_CUDA),no)
  NVCC :=
endif
ifeq ($(WITH_CUDA),yes)
  ifeq ($(NVCC),)
    $(error WITH_CUDA=yes but nvcc was not found; set CUDA_HOME)
  endif
endif

include cuda/gencode.mk

ifneq ($(NVCC),)
  CUDA_OBJS = $(patsubst %.c,src/%.o,$(TS_GPU_SRCS)) cuda/ts_device.o cuda/ts_shap.o cuda/ts_runner.o cuda/ts_quad.o cuda/ts_predict.o cuda/ts_interventional.o
  OBJS += $(CUDA_OBJS)
  PG_CPPFLAGS += -DTS_WITH_CUDA
  SHLIB_LINK += -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl -lpthread -lstdc++
  NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC,-Wall,-Wextra --threads 0 $(CUDA_GENCODE) $(CUDA_DEFINES)
endif

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# PGXS tracks no header dependencies: rebuild every object when a header changes.
$(OBJS): $(wildcard src/*/*.h) cuda/ts_cuda.h

cuda/%.o: cuda/%.cu cuda/ts_cuda.h cuda/ts_cuda_status.h cuda/ts_warp_dp.cuh cuda/ts_quad.cuh cuda/ts_predict.cuh cuda/ts_interventional.cuh cuda/ts_device_array.cuh cuda/ts_explain.cuh
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

EXTRA_CLEAN = cuda/*.o src/*/*.o

# 0.2.0 fresh: 0.1.0's script, then the update's without its \echo guard and its
# update-only block, then what a fresh install does on a Citus coordinator
extension/$(EXTENSION)--0.2.0.sql: extension/$(EXTENSION)--0.1.0.sql extension/$(EXTENSION)--0.1.0--0.2.0.sql extension/citus_fresh.sql
	{ sed 's/^-- pg_treeshap 0.1.0:/-- pg_treeshap 0.2.0 (written by the Makefile from the 0.1.0 script and its update):/' $<; \
	  sed '/^\\echo /d; /^-- update only (/,/^-- update only: end/d' extension/$(EXTENSION)--0.1.0--0.2.0.sql; \
	  cat extension/citus_fresh.sql; } > $@
