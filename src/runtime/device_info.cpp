// approx_gpu.device_info(): the GPUs the engine calls can use -- the GPU
// service's when calls go there, else this backend's own -- and the settings
// that choose between them.
#include "runtime/runtime.h"

#include "core/gpu.hpp"
#include "runtime/jsonb_builder.h"

APPROX_FUNCTION(approx_gpu_device_info) {
    char why[256] = {0};
    approx::gpu::DeviceInfo info[16];
    int count = 0, runtime_version = 0, driver_version = 0;
    bool usable;
    const approx::ExecContext settings = engine_settings();
    // With the GPU service, its devices (and no CUDA context in this backend).
    const bool in_service = settings.service != nullptr;
    if (in_service && gpu_service_hooks().devices(info, 16, &count, &runtime_version, &driver_version)) {
        usable = true;
    } else {
        usable = approx::gpu::available(why, sizeof why);
        count = approx::gpu::devices(info, 16);
        approx::gpu::versions(runtime_version, driver_version);
    }

    JsonbBuilder j;
    j.begin_object();
    j.add_bool("compiled_with_cuda", approx::gpu_compiled_in());
    j.add_bool("gpu_available", usable);
    if (!usable) j.add_string("reason", why);
    j.add_string("gpu_calls_run_in", in_service ? "the gpu service" : "this backend");
    j.add_string("device_setting", device_setting_name());
    j.add_int("cpu_threads", settings.cpu_threads);
    if (runtime_version) j.add_int("cuda_runtime_version", runtime_version);
    if (driver_version) j.add_int("cuda_driver_version", driver_version);
    j.add_int("gpu_bytes_in_use", approx::gpu::bytes_in_use());
    j.begin_array("devices");
    for (int i = 0; i < count && i < 16; ++i) {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", info[i].cc_major, info[i].cc_minor);
        j.begin_object();
        j.add_int("index", info[i].index);
        j.add_string("name", info[i].name);
        j.add_string("compute_capability", cc);
        j.add_int("multiprocessors", info[i].multiprocessors);
        j.add_int("total_bytes", info[i].total_bytes);
        j.add_int("free_bytes", info[i].free_bytes);
        j.end_object();
    }
    j.end_array();
    j.end_object();
    PG_RETURN_JSONB_P(j.finish());
}
