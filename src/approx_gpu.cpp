// Module entry point: _PG_init only registers settings, one call per feature.
// CUDA is never touched here (the postmaster may load this library); it is
// initialised lazily by the first GPU call in a backend.
#include "runtime/runtime.h"
#include "aqp/aqp.h"
#include "service/service.h"
#include "closure/closure.h"
#include "moving/moving.h"
#include "readers/relation_reader.h"
#include "synopsis/synopsis.h"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

void _PG_init(void) {
    runtime_define_settings();
    gpu_service_init();
    readers_init();
    closure_init();
    moving_init();
    synopsis_init();
    aqp_init();
    runtime_reserve_prefix();
}
