# The GPU code nvcc builds, for the extension (Makefile) and bench/Makefile:
# a cubin for each architecture of CUDA_ARCHS (every one CUDA 13
# supports, Turing on) and PTX for CUDA_PTX (default the newest), which the
# driver compiles for GPUs newer than the list. Narrow them for a faster
# development build: make CUDA_ARCHS=90; CUDA_ARCHS= CUDA_PTX=75 is PTX only.
CUDA_ARCHS ?= 75 80 86 89 90 100 120
CUDA_PTX ?= $(lastword $(CUDA_ARCHS))
comma := ,
CUDA_GENCODE = $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a)$(comma)code=sm_$(a)) \
    $(if $(CUDA_PTX),-gencode arch=compute_$(CUDA_PTX)$(comma)code=compute_$(CUDA_PTX))
CUDA_TARGETS = $(foreach a,$(CUDA_ARCHS),sm_$(a)) $(if $(CUDA_PTX),compute_$(CUDA_PTX))
# the targets, for the messages of a GPU the build cannot run (cuda/ts_device.cu)
CUDA_DEFINES = -DTS_CUDA_TARGETS='"$(strip $(CUDA_TARGETS))"'
ifeq ($(strip $(CUDA_TARGETS)),)
  $(error CUDA_ARCHS and CUDA_PTX are both empty: no GPU code to build)
endif
