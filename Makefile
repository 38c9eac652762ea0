# approx_gpu: PGXS build of a C++17 extension with optional CUDA engines.
#
#   make                 build (CUDA engines when nvcc is found)
#   make WITH_CUDA=0     CPU-only build, identical SQL
#   make install         install into the PostgreSQL of pg_config
#   make unit            GoogleTest binary build/unit_tests (engines only)
#   make bench           benchmark binaries under build/
#   test/run             the whole test suite (README: "Test")

EXTENSION   = approx_gpu
EXTVERSION  = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" approx_gpu.control)
MODULE_big  = approx_gpu
# The newest full script is built from the feature fragments; every released
# version's script and every upgrade script is committed and installed
# (pgvector's pattern), so older databases can ALTER EXTENSION ... UPDATE.
DATA_built  = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA        = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*.sql))
PGFILEDESC  = "approx_gpu - approximate and GPU-accelerated analytics"

# Extension script: one fragment per feature, concatenated in name order.
SQL_PARTS   = $(sort $(wildcard sql/ext/*.sql))

# pg_regress suites: every test/sql/<suite>.sql, expected output in
# test/expected/ (pgvector's layout); sql/ holds only the extension scripts.
REGRESS     = $(patsubst test/sql/%.sql,%,$(wildcard test/sql/*.sql))
# The suites name objects approx_gpu.*: they run on 0.5's layout (CREATE
# EXTENSION approx_gpu SCHEMA approx_gpu), which --load-extension cannot ask
# for, in a database test/lib.sh's create_test_db makes (REGRESS_PREP).
REGRESS_OPTS = --inputdir=test --use-existing   # PGXS adds --dbname=$(CONTRIB_TESTDB)
REGRESS_PREP = regress-database

CUDA_HOME  ?= /usr/local/cuda
NVCC       ?= $(shell command -v nvcc 2>/dev/null || (test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc))
ifeq ($(NVCC),)
WITH_CUDA  ?= 0
else
WITH_CUDA  ?= 1
endif

# Glue: src/*.cpp and one folder per feature (src/<feature>/*.cpp), with one
# level of subfolders (src/aqp/box/*.cpp); src/core/ is the engines' folder and
# is listed apart (globbing src/*/*.cpp alone would build the engines twice and
# link gpu_none.cpp's CPU stubs beside CUDA's).
GLUE_DIRS   = $(filter-out src/core/%,$(sort $(dir $(wildcard src/*/*.cpp src/*/*/*.cpp))))
GLUE_SRCS   = $(wildcard src/*.cpp) $(foreach d,$(GLUE_DIRS),$(wildcard $(d)*.cpp))
GLUE_HDRS   = $(wildcard src/*.h) $(foreach d,$(GLUE_DIRS),$(wildcard $(d)*.h))
# Engines in rooms of their own (src/core/starjoin/) are picked up too.
CORE_SRCS   = $(filter-out src/core/gpu_none.cpp,$(wildcard src/core/*.cpp) $(wildcard src/core/*/*.cpp))
CORE_HDRS   = $(wildcard src/core/*.hpp) $(wildcard src/core/*/*.hpp)
# A room's headers are its own objects' (and the glue's) dependency only.
ROOM_HDRS   = $(wildcard src/core/*/*.hpp)
ROOM_OBJS   = $(patsubst %.cpp,%.o,$(wildcard src/core/*/*.cpp))
CUDA_SRCS   = $(wildcard cuda/*.cu)
CORE_OBJS   = $(CORE_SRCS:.cpp=.o)
ifeq ($(WITH_CUDA),1)
CUDA_OBJS   = $(CUDA_SRCS:.cu=.o)
ENGINE_OBJS = $(CORE_OBJS) $(CUDA_OBJS)
CUDA_LIBS   = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt
else
CUDA_OBJS   =
ENGINE_OBJS = $(CORE_OBJS) src/core/gpu_none.o
CUDA_LIBS   =
endif
OBJS        = $(GLUE_SRCS:.cpp=.o) $(ENGINE_OBJS)

CUDA_DEFS   = $(if $(filter 1,$(WITH_CUDA)),-DAPPROX_WITH_CUDA,)
PG_CXXFLAGS = -std=c++17 -fPIC -Wextra -Wno-register -Wno-unused-parameter -Wno-missing-field-initializers $(CUDA_DEFS)
PG_CPPFLAGS = -Isrc
SHLIB_LINK  = $(CUDA_LIBS) -lstdc++ -lpthread

NVCC_ARCH   = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
# Includes by path from src/ ("core/kde.hpp") and, for test and benchmark
# code, from the root ("cuda/common.cuh"); -I. comes after CCCL's folder, so
# that our cuda/ never shadows its <cuda/...> headers.
NVCCFLAGS   = -std=c++17 -O3 $(NVCC_ARCH) -Xcompiler -fPIC,-Wall -DAPPROX_WITH_CUDA \
              -I$(CUDA_HOME)/include/cccl -Isrc -I. --expt-relaxed-constexpr -lineinfo

EXTRA_CLEAN = build src/*.bc src/*/*.bc src/*/*/*.bc test/bench/*.o test/unit/*.o

PG_CONFIG  ?= pg_config
PGXS       := $(shell $(PG_CONFIG) --pgxs)
# JIT-inlining our C++ functions buys nothing; skip the clang bitcode pass
# (set before the include: an override wins over Makefile.global's value).
override with_llvm = no
include $(PGXS)

sql/$(EXTENSION)--$(EXTVERSION).sql: $(SQL_PARTS) approx_gpu.control
	cat $(SQL_PARTS) > $@

cuda/%.o: cuda/%.cu $(wildcard cuda/*.cuh) $(wildcard src/core/*.hpp)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<
# cuda/<room>.cu includes its room's headers.
$(patsubst src/core/%/,cuda/%.o,$(sort $(dir $(ROOM_HDRS)))): $(ROOM_HDRS)

$(GLUE_SRCS:.cpp=.o) $(CORE_OBJS): $(GLUE_HDRS) $(wildcard src/core/*.hpp)
$(GLUE_SRCS:.cpp=.o) $(ROOM_OBJS): $(ROOM_HDRS)

# Objects differ with and without CUDA: build/with_cuda holds the value and is
# rewritten (newer mtime) when it changes, so every object is rebuilt.
BUILD_STAMP := build/with_cuda
$(shell mkdir -p build; test "$$(cat $(BUILD_STAMP) 2>/dev/null)" = "$(WITH_CUDA)" || echo "$(WITH_CUDA)" > $(BUILD_STAMP))
$(GLUE_SRCS:.cpp=.o) $(CORE_OBJS) $(CUDA_OBJS) src/core/gpu_none.o: $(BUILD_STAMP)

# ---- engine unit tests and benchmarks (no PostgreSQL involved) ----------------
GTEST_LIBS  = /usr/lib/x86_64-linux-gnu/libgtest_main.a /usr/lib/x86_64-linux-gnu/libgtest.a
UNIT_SRCS   = $(wildcard test/unit/*_test.cpp)
TEST_CXX    = $(CXX) -std=c++17 -O2 -g -Wall -Wextra -Wno-unused-parameter $(CUDA_DEFS) -Isrc

# Test-only GPU code (test seams such as test/unit/hashjoin_seam.cu): linked
# into build/unit_tests of a CUDA build, never into approx_gpu.so.
ifeq ($(WITH_CUDA),1)
UNIT_CUDA_OBJS = $(patsubst %.cu,%.o,$(wildcard test/unit/*.cu))
else
UNIT_CUDA_OBJS =
endif

test/unit/%.o: test/unit/%.cu $(wildcard test/unit/*.hpp) $(wildcard cuda/*.cuh) $(CORE_HDRS) $(BUILD_STAMP)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

build/unit_tests: $(UNIT_SRCS) $(wildcard test/unit/*.hpp) $(ENGINE_OBJS) $(UNIT_CUDA_OBJS)
	@mkdir -p build
	$(TEST_CXX) -o $@ $(UNIT_SRCS) $(ENGINE_OBJS) $(UNIT_CUDA_OBJS) $(GTEST_LIBS) $(CUDA_LIBS) -lpthread

unit: build/unit_tests

BENCH_SRCS  = $(wildcard test/bench/*_bench.cpp)
BENCH_BINS  = $(patsubst test/bench/%.cpp,build/%,$(BENCH_SRCS))

# Benchmark-only GPU code (timing hooks, bandwidth-floor kernels): linked into
# the benchmark binaries, never into approx_gpu.so.
ifeq ($(WITH_CUDA),1)
BENCH_CUDA_OBJS = test/bench/gpu_bench_kernels.o
else
BENCH_CUDA_OBJS =
endif

test/bench/%.o: test/bench/%.cu test/bench/gpu_bench.hpp $(wildcard cuda/*.cuh) $(CORE_HDRS) $(BUILD_STAMP)
	$(NVCC) $(NVCCFLAGS) -c -o $@ $<

build/%_bench: test/bench/%_bench.cpp test/bench/gpu_bench.hpp $(ENGINE_OBJS) $(BENCH_CUDA_OBJS)
	@mkdir -p build
	$(TEST_CXX) -O3 -o $@ $< $(ENGINE_OBJS) $(BENCH_CUDA_OBJS) $(CUDA_LIBS) -lpthread

# The SSB data generator (test/bench/ssb_load.sh): plain C++, no engine.
build/ssbgen: test/bench/ssbgen.cpp
	@mkdir -p build
	$(CXX) -std=c++17 -O2 -Wall -Wextra -o $@ $<

bench: $(BENCH_BINS) build/ssbgen

.PHONY: unit bench

# The regress database of installcheck (REGRESS_OPTS above).
.PHONY: regress-database
regress-database:
	bash -c '. test/lib.sh && create_test_db $(CONTRIB_TESTDB) "$(bindir)/psql"'
