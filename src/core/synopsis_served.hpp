// Between evaluate() (synopsis.cpp) and its GPU-service request
// (synopsis_served.cpp). Not part of the engine API.
#pragma once

#include "synopsis.hpp"

namespace approx::synopsis {

// evaluate() in the GPU service: the request's status, for service::try_run.
// The batch has boxes and sane sizes (evaluate() checks that first).
Status evaluate_in_service(const Synopsis& s, const BoxBatch& boxes, const ExecContext& ctx, BoxEstimate* out);

}  // namespace approx::synopsis
