// Between join_count() (hashjoin.cpp) and its GPU-service request
// (hashjoin_served.cpp). Not part of the engine API.
#pragma once

#include "hashjoin.hpp"

namespace approx::hashjoin {

// join_count() in the GPU service: the request's status, for service::try_run.
// Both sides have keys and at least one row.
Status join_count_in_service(const JoinSide& build, const JoinSide& probe, const ExecContext& ctx, JoinInfo& info,
                             const JoinOptions& options);

}  // namespace approx::hashjoin
