// The GPU service's settings (service.cpp defines them), read by the
// worker and the client.
#pragma once

enum ServiceEngine { SERVICE_ENGINE_GPU = 0, SERVICE_ENGINE_CPU = 1 };
enum ServiceTestFault { SERVICE_FAULT_NONE = 0, SERVICE_FAULT_ERROR = 1, SERVICE_FAULT_TRAP = 2 };

extern bool service_use;              // approx_gpu.use_service
extern int service_engine;            // approx_gpu.service_engine
extern int service_memory_limit_mb;   // approx_gpu.service_memory_limit
extern int service_cache_size_mb;     // approx_gpu.service_cache_size
extern int service_staging_size_mb;   // approx_gpu.service_staging_size
extern int service_queue_size;        // approx_gpu.service_queue_size
extern int service_queue_timeout_ms;  // approx_gpu.gpu_queue_timeout
extern int service_test_delay_ms;     // approx_gpu.service_test_delay
extern int service_request_limit_ms;  // approx_gpu.service_request_limit (0 = none)
extern int service_test_fault;        // approx_gpu.service_test_fault
