// The readers' entry point (files listed in relation_reader.h): their
// settings, defined from _PG_init.
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"

extern "C" {
#include "utils/guc.h"
}

int relscan::read_workers = -1;

void readers_init(void) {
    DefineCustomIntVariable(
        "approx_gpu.read_workers", "Parallel workers that read a table for a function given a relation (-1 = auto).",
        "auto: the table's parallel_workers option, else one worker from 8 x min_parallel_table_scan_size and one "
        "more for every tripling of the table, capped by max_parallel_workers_per_gather; 0 reads in the backend "
        "alone. Workers come from max_parallel_workers; fewer may start, and the backend reads what they do not.",
        &relscan::read_workers, -1, -1, 1024, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "approx_gpu.upload_while_reading", "Upload a table's columns to the GPU while the reader reads them.",
        "When the engine call will run on the GPU, the relation reader hands the rows to device buffers as they "
        "arrive, so the copies overlap the reading; off: the engine uploads after the read (less GPU memory held "
        "during the read).",
        &relscan::upload_while_reading, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

