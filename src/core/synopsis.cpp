// KDE synopses: names, random numbers and sampling (reservoirs, merged
// samples, the congressional allocation). See synopsis.hpp; building and
// validation are in synopsis_finalize.cpp, the CPU box engine in
// synopsis_box_sums.cpp and synopsis_evaluate.cpp, evaluate()'s request to
// the GPU service in synopsis_served.cpp.
#include "synopsis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "synopsis_internal.hpp"

namespace approx::synopsis {

namespace {

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

const char* bandwidth_name(Bandwidth b) {
    switch (b) {
        case Bandwidth::Cdf: return "cdf";
        case Bandwidth::Plugin: return "plugin";
        case Bandwidth::Lscv: return "lscv";
        case Bandwidth::Scott: return "scott";
    }
    return "?";
}

const char* mode_name(Mode m) {
    switch (m) {
        case Mode::Exact: return "exact";
        case Mode::Kde: return "kde";
        case Mode::LogKde: return "log_kde";
    }
    return "?";
}

const char* smoothing_name(Smoothing s) {
    switch (s) {
        case Smoothing::Auto: return "auto";
        case Smoothing::Always: return "always";
        case Smoothing::Never: return "never";
    }
    return "?";
}

// ---- random numbers and sampling ------------------------------------------------------

void Rng::seed(uint64_t seed) {
    uint64_t x = seed;
    for (auto& w : s) w = splitmix64(x);
    if ((s[0] | s[1] | s[2] | s[3]) == 0) s[0] = 1;
}

uint64_t Rng::next() {
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t bound) {
    // Lemire's multiply-shift with rejection: exactly uniform.
    unsigned __int128 prod = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(prod);
    if (low < bound) {
        uint64_t threshold = (0 - bound) % bound;
        while (low < threshold) {
            prod = static_cast<unsigned __int128>(next()) * bound;
            low = static_cast<uint64_t>(prod);
        }
    }
    return static_cast<uint64_t>(prod >> 64);
}

void reservoir_init(Reservoir& r, int64_t capacity, uint64_t seed) {
    r = Reservoir();
    r.capacity = capacity;
    r.rng.seed(seed);
}

int64_t reservoir_slot(Reservoir& r) {
    int64_t row = r.seen++;
    if (r.size < r.capacity) return r.size++;
    // Algorithm R: row number `row` replaces a uniform slot with probability k / (row + 1).
    uint64_t j = r.rng.below(static_cast<uint64_t>(row) + 1);
    return j < static_cast<uint64_t>(r.capacity) ? static_cast<int64_t>(j) : -1;
}

int64_t hypergeometric(Rng& rng, int64_t population, int64_t successes, int64_t draws) {
    int64_t found = 0;
    int64_t left = population, good = successes;
    for (int64_t i = 0; i < draws && good > 0; ++i) {
        if (good == left) return found + (draws - i);  // only successes remain
        if (static_cast<int64_t>(rng.below(static_cast<uint64_t>(left))) < good) {
            ++found;
            --good;
        }
        --left;
    }
    return found;
}

int64_t merged_size(int64_t k1, int64_t n1, int64_t k2, int64_t n2) { return std::min(std::min(k1, k2), n1 + n2); }

Status merge_samples(const double* a, int64_t m1, int64_t n1, int64_t k1, const double* b, int64_t m2, int64_t n2,
                     int64_t k2, int d, Rng& rng, double* out, int64_t& m_out) {
    return guarded([&]() -> Status {
        if (d < 1 || m1 < 0 || m2 < 0 || n1 < m1 || n2 < m2 || m1 != std::min(k1, n1) || m2 != std::min(k2, n2))
            return Status::Error(StatusCode::InvalidArgument, "inconsistent sample sizes to merge");
        int64_t target = merged_size(k1, n1, k2, n2);
        int64_t from_a = hypergeometric(rng, n1 + n2, n1, target);
        int64_t from_b = target - from_a;
        if (from_a > m1 || from_b > m2)
            return Status::Error(StatusCode::Internal, "merge draws %lld + %lld rows from samples of %lld and %lld",
                                 static_cast<long long>(from_a), static_cast<long long>(from_b),
                                 static_cast<long long>(m1), static_cast<long long>(m2));
        int64_t written = 0;
        auto take = [&](const double* src, int64_t m, int64_t count) {
            // Partial Fisher-Yates: `count` distinct rows, uniformly.
            std::vector<int64_t> idx(static_cast<size_t>(m));
            std::iota(idx.begin(), idx.end(), int64_t{0});
            for (int64_t i = 0; i < count; ++i) {
                int64_t j = i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(m - i)));
                std::swap(idx[i], idx[j]);
                std::copy(src + idx[i] * d, src + idx[i] * d + d, out + written * d);
                ++written;
            }
        };
        take(a, m1, from_a);
        take(b, m2, from_b);
        m_out = written;
        return Status::Ok();
    });
}

Status congressional_allocation(const int64_t* group_rows, int64_t groups, int64_t sample_size, int64_t floor,
                                int64_t* m_out) {
    // Every group keeps f_g = min(rows_g, floor); above that, the groups share
    // sample_size in proportion to their sizes: m_g = min(rows_g, max(f_g,
    // lambda rows_g)) with the one lambda in [0, 1) that makes the total
    // sample_size (the total is piecewise linear and nondecreasing in lambda),
    // then rounded to integers by largest remainders so that the total is
    // exactly sample_size. The floors alone at or above sample_size: m_g = f_g;
    // every row within sample_size: m_g = rows_g.
    if (group_rows == nullptr || m_out == nullptr || groups < 1)
        return Status::Error(StatusCode::InvalidArgument, "congressional allocation needs at least one group");
    if (sample_size < 1) return Status::Error(StatusCode::InvalidArgument, "sample size must be positive");
    if (floor < 1) return Status::Error(StatusCode::InvalidArgument, "the floor must be at least 1");
    return guarded([&]() -> Status {
        int64_t floors = 0, rows = 0;
        for (int64_t g = 0; g < groups; ++g) {
            if (group_rows[g] < 1)
                return Status::Error(StatusCode::InvalidArgument, "group %lld has %lld rows", static_cast<long long>(g),
                                     static_cast<long long>(group_rows[g]));
            const int64_t f = std::min(group_rows[g], floor);
            floors = floors > INT64_MAX - f ? INT64_MAX : floors + f;
            rows = rows > INT64_MAX - group_rows[g] ? INT64_MAX : rows + group_rows[g];
        }
        if (floors >= sample_size || rows <= sample_size) {
            for (int64_t g = 0; g < groups; ++g)
                m_out[g] = rows <= sample_size ? group_rows[g] : std::min(group_rows[g], floor);
            return Status::Ok();
        }
        // lambda: groups sorted by t_g = f_g / rows_g, where their allocation
        // leaves the floor; total(lambda) = sum_{t_g > lambda} f_g + lambda
        // sum_{t_g <= lambda} rows_g (lambda < 1: no group reaches its rows).
        std::vector<int64_t> order(static_cast<size_t>(groups));
        std::iota(order.begin(), order.end(), int64_t{0});
        auto t_of = [&](int64_t g) {
            return static_cast<double>(std::min(group_rows[g], floor)) / static_cast<double>(group_rows[g]);
        };
        std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t_of(a) < t_of(b); });
        const double target = static_cast<double>(sample_size);
        double fixed = static_cast<double>(floors), prop = 0, lambda = 0;
        for (int64_t i = 0; i < groups; ++i) {
            const int64_t g = order[i];
            // groups order[0..i-1] proportional: lambda solving fixed + lambda prop = target
            // is valid when it does not pass the next breakpoint t_g.
            if (prop > 0) {
                lambda = (target - fixed) / prop;
                if (lambda <= t_of(g)) break;
            }
            fixed -= static_cast<double>(std::min(group_rows[g], floor));
            prop += static_cast<double>(group_rows[g]);
            lambda = (target - fixed) / prop;
        }
        lambda = std::min(lambda, 1.0);
        std::vector<double> frac(static_cast<size_t>(groups));
        int64_t total = 0;
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t f = std::min(group_rows[g], floor);
            const double x = std::max(static_cast<double>(f), lambda * static_cast<double>(group_rows[g]));
            int64_t v = static_cast<int64_t>(std::floor(x));
            v = std::max(f, std::min(group_rows[g], v));
            frac[g] = x - static_cast<double>(v);
            m_out[g] = v;
            total += v;
        }
        // Largest remainders first (ties: the lower group), within [f_g, rows_g].
        std::vector<int64_t> by_frac(order);
        std::sort(by_frac.begin(), by_frac.end(),
                  [&](int64_t a, int64_t b) { return frac[a] != frac[b] ? frac[a] > frac[b] : a < b; });
        for (int pass = 0; pass < 2 && total != sample_size; ++pass)
            for (int64_t i = 0; i < groups && total != sample_size; ++i) {
                if (total < sample_size) {
                    const int64_t g = by_frac[i];
                    if (m_out[g] < group_rows[g]) ++m_out[g], ++total;
                } else {
                    const int64_t g = by_frac[groups - 1 - i];
                    if (m_out[g] > std::min(group_rows[g], floor)) --m_out[g], --total;
                }
            }
        return Status::Ok();
    });
}

}  // namespace approx::synopsis
