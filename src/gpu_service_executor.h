// The GPU service's executor threads (gpu_service_executor.cpp), as its main
// thread (gpu_service_worker.cpp) drives them.
#pragma once

#include <vector>

#include "gpu_service.h"

namespace service_executor {

// Starts n executors (device i each, or the CPU engines when !gpu) over the
// shared slots; answered slots are announced on event_fd. False (and none
// left running) when a thread cannot be started.
bool start(ServiceShared* sh, int n, bool gpu, int event_fd) noexcept;

// A request was queued (the service's latch was set).
void wake();

// Stop taking requests; what runs sees its cancel callback return true.
void stop();

// Every executor has returned.
bool finished();

// At exit: join the executors if they have all returned, else leave them.
void join_or_detach();

// A CUDA error made a GPU's context unusable: the service must restart.
bool context_broken();

// The answered slots whose backends are to be woken (taken from the list).
void take_answered(std::vector<int>& slots);

}  // namespace service_executor
