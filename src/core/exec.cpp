// Dispatcher, RunStats and thread plumbing shared by the engines.
#include "exec.hpp"

#include <signal.h>
#include <pthread.h>

#include "gpu.hpp"

namespace approx {

static_assert(sizeof(sigset_t) <= 128, "SignalBlock storage too small");

SignalBlock::SignalBlock() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, reinterpret_cast<sigset_t*>(old_));
}

SignalBlock::~SignalBlock() { pthread_sigmask(SIG_SETMASK, reinterpret_cast<sigset_t*>(old_), nullptr); }

const char* device_name(Device d) { return d == Device::Gpu ? "gpu" : "cpu"; }

void RunStats::reset(const char* op_name) {
    *this = RunStats();
    std::snprintf(op, sizeof op, "%s", op_name);
}

double RunStats::get(const char* key, double missing) const {
    for (int i = 0; i < n_extra; ++i)
        if (std::strcmp(extra[i].key, key) == 0) return extra[i].value;
    return missing;
}

void RunStats::add(const char* key, double value) {
    for (int i = 0; i < n_extra; ++i)
        if (std::strcmp(extra[i].key, key) == 0) {
            extra[i].value = value;
            return;
        }
    if (n_extra == kMaxExtra) return;
    std::snprintf(extra[n_extra].key, sizeof extra[n_extra].key, "%s", key);
    extra[n_extra].value = value;
    ++n_extra;
}

Status cancelled_status() { return Status::Error(StatusCode::Cancelled, "canceling statement due to user request"); }

bool gpu_compiled_in() {
#ifdef APPROX_WITH_CUDA
    return true;
#else
    return false;
#endif
}

Status choose_device(const ExecContext& ctx, int64_t rows, Device& out) {
    out = Device::Cpu;
    if (ctx.mode == DeviceMode::Cpu) return Status::Ok();
    if (ctx.mode == DeviceMode::Auto && rows < ctx.gpu_min_rows) return Status::Ok();
    char why[256];
    if (gpu::available(why, sizeof why)) {
        out = Device::Gpu;
        return Status::Ok();
    }
    if (ctx.mode == DeviceMode::Gpu)
        return Status::Error(StatusCode::NoGpu, "approx_gpu.device is 'gpu' but no GPU is usable: %s", why);
    return Status::Ok();  // auto without a GPU: quietly the CPU
}

bool will_run_on_gpu(const ExecContext& ctx, int64_t rows) noexcept {
    Device device = Device::Cpu;
    Status st = guarded([&] { return choose_device(ctx, rows, device); });
    return st.ok() && device == Device::Gpu;
}

}  // namespace approx
