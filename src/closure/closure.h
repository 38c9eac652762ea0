// Transitive closure glue: settings, defined from _PG_init.
#pragma once

// approx_gpu.closure_max_memory and approx_gpu.closure_algorithm
void closure_init(void);
