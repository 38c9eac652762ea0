// What the readers share (files listed in relation_reader.h): their settings,
// defined from _PG_init, and what a read reports to last_run().
#include "readers/relation_reader.h"

#include "readers/relation_scan.h"

extern "C" {
#include "utils/guc.h"
}

int relscan::read_workers = -1;

void readers_init(void) {
    DefineCustomIntVariable(
        "approx_gpu.read_workers", "Parallel workers that read a table for a function given a relation (-1 = auto).",
        "auto: the table's parallel_workers option, else none under 8 x min_parallel_table_scan_size and above it "
        "one worker for every 4 x min_parallel_table_scan_size (at least PostgreSQL's parallel scan rule), capped "
        "by max_parallel_workers_per_gather; 0 reads in the backend alone. Workers come from max_parallel_workers; fewer may start, and the backend reads what they do not.",
        &relscan::read_workers, -1, -1, 1024, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "approx_gpu.upload_while_reading", "Upload a table's columns to the GPU while the reader reads them.",
        "When the engine call will run on the GPU, the relation reader hands the rows to device buffers as they "
        "arrive, so the copies overlap the reading; off: the engine uploads after the read (less GPU memory held "
        "during the read).",
        &relscan::upload_while_reading, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
}

void record_read(const QueryColumns* const* inputs, int n) {
    int64 rows = 0, worker_rows = 0, waits = 0;
    double ms = 0;
    int most = 0;  // the input read by the most workers names the path
    for (int i = 0; i < n; ++i) {
        rows += (inputs[i]->rows_seen > 0 ? inputs[i]->rows_seen : inputs[i]->rows) + inputs[i]->rows_skipped;
        worker_rows += inputs[i]->worker_rows;
        waits += inputs[i]->chunk_waits;
        ms += inputs[i]->ms_read;
        if (inputs[i]->read_workers > inputs[most]->read_workers) most = i;
    }
    if (n == 0) return;
    approx::RunStats& s = last_run_stats();
    s.add("read_workers", inputs[most]->read_workers);
    s.add("read_workers_planned", inputs[most]->read_workers_planned);
    s.add("rows_read_by_workers", static_cast<double>(worker_rows));
    s.add("read_chunk_waits", static_cast<double>(waits));
    if (ms > 0) s.add("rows_read_per_s", rows / (ms / 1000.0));
    // Uploads during the read: the backend's time handing rows over, and
    // the wait at the end for what the read did not hide.
    double stage = 0, wait = 0;
    int staged = 0;
    for (int i = 0; i < n; ++i)
        if (inputs[i]->staged) {
            ++staged;
            stage += relscan::stage_ms(inputs[i]->staged);
            wait += relscan::stage_wait_ms(inputs[i]->staged);
        }
    if (staged > 0) {
        s.add("inputs_uploaded_while_read", staged);
        s.add("ms_upload_handover", stage);
        s.add("ms_upload_wait", wait);
    }
    last_run_set_read(inputs[most]->read_path);
}
