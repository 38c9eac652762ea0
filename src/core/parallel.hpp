// parallel_for: the CPU engines' only source of threads (see exec.hpp).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "exec.hpp"

namespace approx {

// Blocks every signal in the calling thread for its lifetime, restoring the
// old mask after: threads created meanwhile inherit the blocked mask.
class SignalBlock {
public:
    SignalBlock();
    ~SignalBlock();
    SignalBlock(const SignalBlock&) = delete;
    SignalBlock& operator=(const SignalBlock&) = delete;

private:
    unsigned char old_[128];  // sigset_t storage, kept opaque to avoid <signal.h> here
};

template <class Body>
Status parallel_for(const ExecContext& ctx, size_t n_tasks, Body&& body) {
    if (n_tasks == 0) return Status::Ok();
    size_t threads = ctx.cpu_threads < 1 ? 1 : static_cast<size_t>(ctx.cpu_threads);
    if (threads > n_tasks) threads = n_tasks;

    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex first_error_lock;
    Status first_error;

    auto worker = [&](size_t worker_index) {
        for (;;) {
            if (stop.load(std::memory_order_relaxed)) return;
            size_t task = next.fetch_add(1, std::memory_order_relaxed);
            if (task >= n_tasks) return;
            Status st = ctx.cancelled() ? cancelled_status() : guarded([&] { return body(task, worker_index); });
            if (!st.ok()) {
                std::lock_guard<std::mutex> g(first_error_lock);
                if (first_error.ok()) first_error = st;
                stop.store(true);
                return;
            }
        }
    };

    if (threads == 1) {
        worker(0);
        return first_error;
    }
    std::vector<std::thread> pool;
    {
        SignalBlock block;  // created threads inherit the all-blocked mask
        try {
            pool.reserve(threads - 1);
            for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker, t);
        } catch (...) {
            stop.store(true);  // fewer threads: the ones we have finish the work
        }
    }
    worker(0);
    for (auto& th : pool) th.join();
    return first_error;
}

}  // namespace approx
