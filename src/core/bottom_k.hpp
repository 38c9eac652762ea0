// Bottom-k samples by priority: a row's priority is a hash of its identity,
// and a sample keeps the k smallest (priority, id) pairs, so the kept set is
// a function of the rows alone, whatever order they arrive in and however
// the scan was split between participants. Plain C++, no PostgreSQL: the
// readers' glue (relation_scan.cpp, relation_sample.cpp, relation_strata*)
// holds the arrays in palloc'd or shared memory; nothing here allocates or
// throws.
#pragma once

#include <algorithm>
#include <cstdint>

namespace approx {

struct Ranked {
    uint64_t pri, id;
};
inline bool ranked_before(const Ranked& a, const Ranked& b) { return a.pri < b.pri || (a.pri == b.pri && a.id < b.id); }

// Offers (p, t) to a max-heap of the m smallest (priority, id) pairs held in
// pri/ids (*size in use): one row at a time, O(log m) (a scan's participant).
void bottom_offer(uint64_t* pri, uint64_t* ids, int64_t* size, int64_t m, uint64_t p, uint64_t t);

// Keeps the m first entries under `less` of many offers at once (merging the
// participants' samples): entries are appended to buf (capacity cap > m, e.g.
// 2m, or cap >= the number of entries) by keep_first_add, which cuts buf back to its m first (nth_element,
// linear) when it is full; keep_first then leaves exactly the min(n, m) first,
// in no particular order. The kept set is the one a heap of m fed the same
// entries keeps, when `less` is a strict total order on them.
template <class T, class Less>
int64_t keep_first(T* buf, int64_t n, int64_t m, Less less) {
    if (n <= m) return n;
    std::nth_element(buf, buf + m, buf + n, less);
    return m;
}
template <class T, class Less>
int64_t keep_first_add(T* buf, int64_t n, int64_t m, int64_t cap, const T& e, Less less) {
    if (n >= cap) n = keep_first(buf, n, m, less);
    buf[n] = e;
    return n + 1;
}

// The same for bottom-k (priority, id) offers held as two arrays.
inline int64_t bottom_add(Ranked* buf, int64_t n, int64_t m, int64_t cap, const uint64_t* pri, const uint64_t* ids,
                          int64_t count) {
    if (m <= 0) return n;
    for (int64_t i = 0; i < count; ++i) n = keep_first_add(buf, n, m, cap, Ranked{pri[i], ids[i]}, ranked_before);
    return n;
}
inline int64_t bottom_cut(Ranked* buf, int64_t n, int64_t m) { return keep_first(buf, n, m, ranked_before); }

}  // namespace approx
