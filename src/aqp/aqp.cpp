// The aqp feature's entry point (aqp.h): the shared settings, then each
// path's settings, hook and CustomScan methods (aqp/box.h, aqp/sample.h),
// the star-join path of the sample plan (src/starjoin/), then the planner
// hook that chooses between them, and the ExecutorStart hook that plans a
// session's first statement again through it (aqp_first_statement.cpp),
// registered from _PG_init.
#include "runtime/runtime.h"
#include "aqp/aqp.h"
#include "aqp/box.h"
#include "aqp/sample.h"
#include "starjoin/starjoin_glue.h"

void aqp_init(void) {
    aqp_define_settings();
    aqp_box_init();
    aqp_sample_init();
    starjoin_init();  // the sample plan's star-join path (src/starjoin/)
    aqp_planner_init();
    aqp_first_statement_init();  // a session's first statement, planned past the hook
}
