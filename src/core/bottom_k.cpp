// Bottom-k samples by priority (see bottom_k.hpp).
#include "core/bottom_k.hpp"

namespace approx {

// A max-heap on (priority, id): the root is the first to go.
void bottom_offer(uint64_t* pri, uint64_t* ids, int64_t* size, int64_t m, uint64_t p, uint64_t t) {
    const Ranked e{p, t};
    int64_t i;
    if (*size < m) {  // sift up
        i = (*size)++;
        while (i > 0) {
            int64_t parent = (i - 1) / 2;
            if (!ranked_before(Ranked{pri[parent], ids[parent]}, e)) break;
            pri[i] = pri[parent];
            ids[i] = ids[parent];
            i = parent;
        }
    } else {
        if (m == 0 || !ranked_before(e, Ranked{pri[0], ids[0]})) return;
        i = 0;  // replace the root, sift down
        for (;;) {
            int64_t child = 2 * i + 1;
            if (child >= m) break;
            if (child + 1 < m && ranked_before(Ranked{pri[child], ids[child]}, Ranked{pri[child + 1], ids[child + 1]}))
                ++child;
            if (!ranked_before(e, Ranked{pri[child], ids[child]})) break;
            pri[i] = pri[child];
            ids[i] = ids[child];
            i = child;
        }
    }
    pri[i] = p;
    ids[i] = t;
}

}  // namespace approx
