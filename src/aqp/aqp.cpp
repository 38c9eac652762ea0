// The aqp feature's entry point (files listed in aqp.h): its settings, the
// planner hook and the CustomScan methods, registered from _PG_init.
#include "runtime/runtime.h"
#include "aqp/aqp.h"
#include "aqp/sample/internal.h"

extern "C" {
#include "optimizer/planner.h"
}

void aqp_init(void) {
    aqp_define_settings();
    aqp_scan_register();
    aqp_prev_upper_paths_hook = create_upper_paths_hook;
    create_upper_paths_hook = aqp_upper_paths;
    aqp_sample_init();
}
