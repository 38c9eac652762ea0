// The GPU service's executor threads (service_executor.cpp), as its main
// thread (service_worker.cpp) drives them.
#pragma once

#include "service/service.h"

namespace service_executor {

// Starts n executors (device i each, or the CPU engines when !gpu) over the
// shared slots. False (and none left running) when a thread cannot be started.
bool start(ServiceShared* sh, int n, bool gpu) noexcept;

// Look at the queue now (the backends post the executors' semaphores
// themselves; this is for the service's own reasons).
void wake();

// Stop taking requests; what runs sees its cancel callback return true.
void stop();

// Every executor has returned.
bool finished();

// At exit: join the executors if they have all returned, else leave them.
void join_or_detach();

// A CUDA error made a GPU's context unusable: the service must restart.
bool context_broken();

}  // namespace service_executor
