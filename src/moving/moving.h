// Moving-object grid indexes (src/moving/moving.cpp): settings registered from _PG_init.
#pragma once

// Defines approx_gpu.moving_max_cells.
void moving_init(void);
