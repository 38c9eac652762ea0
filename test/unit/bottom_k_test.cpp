// The parallel scans' merges (core/bottom_k.hpp, sample::census_merge_*):
// appending every participant's offers and cutting back with nth_element
// keeps the same rows as the heap merge it replaced (an offer at a time),
// ties in priority or |value| included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "core/bottom_k.hpp"
#include "core/sample_census.hpp"

using approx::Ranked;
using approx::sample::CensusEntry;

namespace {

// Offers split between `parts` participants, each a bottom-m heap of its own.
struct Parts {
    std::vector<std::vector<uint64_t>> pri, ids;
    std::vector<int64_t> size;
};

Parts scan(std::mt19937_64& rng, int parts, int64_t rows, int64_t m, uint64_t pri_range) {
    Parts p;
    p.pri.assign(parts, std::vector<uint64_t>(std::max<int64_t>(m, 1)));
    p.ids.assign(parts, std::vector<uint64_t>(std::max<int64_t>(m, 1)));
    p.size.assign(parts, 0);
    for (int64_t r = 0; r < rows; ++r) {
        const int w = static_cast<int>(rng() % parts);
        approx::bottom_offer(p.pri[w].data(), p.ids[w].data(), &p.size[w], m, rng() % pri_range,
                             static_cast<uint64_t>(r) * 7919 % 1000003);
    }
    return p;
}

// A random trial's shape: participants, k (the sample's or census' size), rows.
struct Trial {
    int parts;
    int64_t k, rows;
};
Trial draw(std::mt19937_64& rng, int64_t k_below, int64_t rows_below) {
    Trial t;
    t.parts = 1 + static_cast<int>(rng() % 5);
    t.k = static_cast<int64_t>(rng() % k_below);
    t.rows = static_cast<int64_t>(rng() % rows_below);
    return t;
}

std::vector<std::pair<uint64_t, uint64_t>> sorted(const Ranked* a, int64_t n) {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (int64_t i = 0; i < n; ++i) v.emplace_back(a[i].pri, a[i].id);
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST(BottomK, MergeKeepsWhatTheHeapMergeKept) {
    std::mt19937_64 rng(17);
    for (int trial = 0; trial < 300; ++trial) {
        const Trial tr = draw(rng, 60, 400);
        const int parts = tr.parts;
        const int64_t m = tr.k;
        const uint64_t range = trial % 3 == 0 ? 4 : (trial % 3 == 1 ? 50 : ~uint64_t(0));  // ties
        const Parts p = scan(rng, parts, tr.rows, m, range);
        // old: a heap offer at a time
        std::vector<uint64_t> hp(std::max<int64_t>(m, 1)), hi(std::max<int64_t>(m, 1));
        int64_t hn = 0;
        for (int w = 0; w < parts; ++w)
            for (int64_t i = 0; i < p.size[w]; ++i) approx::bottom_offer(hp.data(), hi.data(), &hn, m, p.pri[w][i], p.ids[w][i]);
        std::vector<Ranked> old;
        for (int64_t i = 0; i < hn; ++i) old.push_back(Ranked{hp[i], hi[i]});
        // new: appended, cut back
        int64_t offered = 0;
        for (int w = 0; w < parts; ++w) offered += p.size[w];
        const int64_t cap = std::min(offered, 2 * m);
        std::vector<Ranked> buf(std::max<int64_t>(cap, 1));
        int64_t n = 0;
        for (int w = 0; w < parts; ++w) n = approx::bottom_add(buf.data(), n, m, cap, p.pri[w].data(), p.ids[w].data(), p.size[w]);
        n = approx::bottom_cut(buf.data(), n, m);
        ASSERT_EQ(n, hn) << "trial " << trial;
        EXPECT_EQ(sorted(buf.data(), n), sorted(old.data(), hn)) << "trial " << trial;
    }
}

TEST(BottomK, SmallBufferCutsOftenAndKeepsTheSame) {
    // cap = m + 1: a cut at almost every offer.
    std::mt19937_64 rng(5);
    std::vector<uint64_t> pri(500), ids(500);
    for (size_t i = 0; i < pri.size(); ++i) pri[i] = rng() % 8, ids[i] = i;
    std::vector<Ranked> all;
    for (size_t i = 0; i < pri.size(); ++i) all.push_back(Ranked{pri[i], ids[i]});
    std::sort(all.begin(), all.end(), approx::ranked_before);
    const int64_t m = 37;
    std::vector<Ranked> buf(m + 1);
    int64_t n = approx::bottom_add(buf.data(), 0, m, m + 1, pri.data(), ids.data(), 500);
    n = approx::bottom_cut(buf.data(), n, m);
    ASSERT_EQ(n, m);
    EXPECT_EQ(sorted(buf.data(), n), sorted(all.data(), m));
}

TEST(SampleCensus, MergeKeepsWhatCensusOfferKept) {
    std::mt19937_64 rng(23);
    for (int trial = 0; trial < 300; ++trial) {
        const Trial tr = draw(rng, 40, 300);
        const int parts = tr.parts;
        const int64_t t = tr.k, rows = tr.rows;
        std::vector<std::vector<CensusEntry>> heaps(parts, std::vector<CensusEntry>(std::max<int64_t>(t, 1)));
        std::vector<int64_t> hn(parts, 0);
        for (int64_t r = 0; r < rows; ++r) {
            const int w = static_cast<int>(rng() % parts);
            // |value| in a few levels, either sign (ties); now and then NULL (NaN)
            const double v = rng() % 11 == 0 ? std::nan("") : static_cast<double>(rng() % 7) * (rng() % 2 ? 1 : -1);
            approx::sample::census_offer(heaps[w].data(), hn[w], t, v, static_cast<uint64_t>(r) * 104729 % 1000003, r);
        }
        std::vector<CensusEntry> old(std::max<int64_t>(t, 1));
        int64_t on = 0;
        for (int w = 0; w < parts; ++w)
            for (int64_t i = 0; i < hn[w]; ++i)
                approx::sample::census_offer(old.data(), on, t, heaps[w][i].value, heaps[w][i].key, heaps[w][i].row);
        int64_t offered = 0;
        for (int w = 0; w < parts; ++w) offered += hn[w];
        const int64_t cap = std::min(offered, 2 * t);
        std::vector<CensusEntry> buf(std::max<int64_t>(cap, 1));
        int64_t n = 0;
        for (int w = 0; w < parts; ++w)
            for (int64_t i = 0; i < hn[w]; ++i) n = approx::sample::census_merge_add(buf.data(), n, t, cap, heaps[w][i]);
        n = approx::sample::census_merge_end(buf.data(), n, t);
        ASSERT_EQ(n, on) << "trial " << trial;
        // still census_offer's heap: a further offer keeps what a fed heap keeps
        if (t > 0 && n == t) {
            std::vector<CensusEntry> a(buf.begin(), buf.begin() + n), b(old.begin(), old.begin() + on);
            int64_t an = n, bn = on;
            approx::sample::census_offer(a.data(), an, t, 3.0, 999999999, -1);
            approx::sample::census_offer(b.data(), bn, t, 3.0, 999999999, -1);
            approx::sample::census_sort(a.data(), an);
            approx::sample::census_sort(b.data(), bn);
            for (int64_t i = 0; i < an; ++i) EXPECT_EQ(a[i].row, b[i].row) << "trial " << trial << " at " << i;
        }
        approx::sample::census_sort(buf.data(), n);
        approx::sample::census_sort(old.data(), on);
        for (int64_t i = 0; i < n; ++i) {
            EXPECT_EQ(buf[i].row, old[i].row) << "trial " << trial << " at " << i;
            EXPECT_EQ(buf[i].key, old[i].key);
        }
    }
}
