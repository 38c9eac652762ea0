// ssbgen: the Star Schema Benchmark's five tables as PostgreSQL COPY text
// (tab-separated, one row a line) on stdout, fast enough that SF 10 loads in
// minutes with one process per core (test/bench/ssb_load.sh), where the
// plain-SQL generator (test/workloads/ssb_schema.sql, ssb_generate) runs
// serially in one backend (about 9 minutes at SF 1 on 2 cores).
//
//   build/ssbgen --table lineorder|customer|supplier|part|date [--sf 10]
//                [--skew 0] [--seed 42] [--shard I/N]
//
// Same tables, columns (order, types), sizes and value distributions as
// ssb_generate(sf, seed, skew), formula for formula (see the comments there):
// lineorder 6,000,000·SF rows (4 lines per order), date 2,556 days from
// 1992-01-01, customer max(1000, 30,000·SF), supplier max(250, 2,000·SF), part
// max(5000, 200,000·(1 + log2 SF)); customers and suppliers take the 250
// cities in turn; skew > 0: the foreign keys and lo_quantity Zipf(skew) with
// the hot keys scattered by the multiplicative permutation (k-1)·7919 mod n,
// lo_extendedprice times a Pareto factor min(1000, (1-u)^(-skew/2)), capped at
// 2·10^7. Where it deviates (none changes a distribution):
// - the random numbers: splitmix64 of (seed, table, row) instead of random()
//   after setseed(), so any shard of any table is generated on its own, and
//   the same seed gives the same rows whatever the number of shards; the rows
//   are not those ssb_generate writes for the same seed (they cannot be:
//   random() is one sequential stream), only distributed alike;
// - c_address / s_address: 15 random hex digits drawn directly, where the
//   SQL takes the first 15 of md5(random()::text) (both uniform hex);
// - nothing else: even ssb_generate's NULL p_color / p_name (below) are kept;
// - --seed is any string (hashed), so aqp_workloads.sh's SEED=0.42 works.
// test/bench/ssbgen_check.sh compares both generators column by column.
// --shard I/N (0 <= I < N) writes rows [I·rows/N, (I+1)·rows/N) of the table.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// The random stream of one row: splitmix64 started from a hash of (seed,
// table, row); each column's draws come in a fixed order from it.
struct RowRng {
    uint64_t s;
    RowRng(uint64_t seed, uint64_t table, uint64_t row)
        : s(mix64(seed ^ mix64((table << 48) ^ row ^ 0x5851f42d4c957f2dULL))) {}
    uint64_t next() { return mix64(s += 0x9e3779b97f4a7c15ULL); }
    double u() { return (next() >> 11) * 0x1.0p-53; }               // [0, 1)
    int below(int n) { return static_cast<int>(std::floor(u() * n)); }  // floor(random() * n)
};

// ssb_zipf(n, s, u) of ssb_schema.sql, step for step
int zipf(int n, double s, double u) {
    double x = std::fabs(s - 1) < 1e-9 ? std::pow(n + 1.0, u)
                                        : std::pow(std::pow(n + 1.0, 1 - s) * u + (1 - u), 1 / (1 - s));
    int64_t k = static_cast<int64_t>(std::fmin(n, std::fmax(1, std::floor(x))));
    return static_cast<int>((k - 1) * (s == 0 ? 1 : 7919) % n) + 1;
}

// ---- output buffer -----------------------------------------------------------
struct Out {
    char buf[1 << 20];
    size_t n = 0;
    void flush() {
        if (n && fwrite(buf, 1, n, stdout) != n) { perror("ssbgen: write"); std::exit(1); }
        n = 0;
    }
    void room() { if (n > sizeof buf - 4096) flush(); }
    void s(const char *p) { size_t l = strlen(p); memcpy(buf + n, p, l); n += l; }
    void s(const std::string &p) { memcpy(buf + n, p.data(), p.size()); n += p.size(); }
    void c(char ch) { buf[n++] = ch; }
    void i(int64_t v) {
        if (v < 0) { c('-'); v = -v; }
        char t[24]; int l = 0;
        do { t[l++] = char('0' + v % 10); v /= 10; } while (v);
        while (l) buf[n++] = t[--l];
    }
    void pad(int64_t v, int width) {  // zero padded (lpad(v::text, width, '0'))
        char t[24]; int l = 0;
        do { t[l++] = char('0' + v % 10); v /= 10; } while (v);
        while (l < width) t[l++] = '0';
        while (l) buf[n++] = t[--l];
    }
    void tab() { c('\t'); }
    void end() { c('\n'); room(); }
};

// ---- calendar (proleptic Gregorian, days since 1970-01-01) --------------------
struct Ymd { int y, m, d; };
Ymd civil(int64_t z) {  // H. Hinnant's civil_from_days
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = unsigned(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int y = int(yoe + era * 400);
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned d = doy - (153 * mp + 2) / 5 + 1;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return {y + (m <= 2), int(m), int(d)};
}
const int64_t kFirstDay = 8035;  // 1992-01-01
int datekey(int64_t day) { Ymd t = civil(day); return t.y * 10000 + t.m * 100 + t.d; }
bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

const char *kMonths[] = {"January", "February", "March", "April", "May", "June", "July",
                         "August", "September", "October", "November", "December"};
const char *kDays[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
const char *kNations[] = {"ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE",
                          "GERMANY", "INDIA", "INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA",
                          "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA", "ROMANIA", "SAUDI ARABIA", "VIETNAM",
                          "RUSSIA", "UNITED KINGDOM", "UNITED STATES"};
const char *kRegions[] = {"AFRICA", "AMERICA", "AMERICA", "AMERICA", "MIDDLE EAST", "AFRICA", "EUROPE",
                          "EUROPE", "ASIA", "ASIA", "MIDDLE EAST", "MIDDLE EAST", "ASIA", "MIDDLE EAST",
                          "AFRICA", "AFRICA", "AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST", "ASIA",
                          "EUROPE", "EUROPE", "AMERICA"};
const char *kSegments[] = {"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"};
const char *kColors[] = {
    "almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue", "blush",
    "brown", "burlywood", "chartreuse", "chiffon", "chocolate", "coral", "cornflower", "cream", "cyan",
    "dark", "deep", "dim", "dodger", "drab", "firebrick", "forest", "frosted", "gainsboro", "ghost",
    "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace", "lavender",
    "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium", "metallic", "midnight",
    "mint", "misty", "moccasin", "navajo", "navy", "olive", "orange", "orchid", "pale", "papaya",
    "peach", "peru", "pink", "plum", "powder", "puff", "purple", "red", "rose", "rosy", "royal",
    "saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring",
    "steel", "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow"};
const char *kColors2[] = {"red", "green", "blue", "white", "black", "ivory", "navy", "olive", "plum", "tan"};
const char *kType1[] = {"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"};
const char *kType2[] = {"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"};
const char *kType3[] = {"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"};
const char *kCont1[] = {"SM", "LG", "MED", "JUMBO", "WRAP"};
const char *kCont2[] = {"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"};
const char *kPriorities[] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"};
const char *kShipModes[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
// ssb_generate draws 1 + floor(random() * 92) from this list of 89 words, so
// 3 of 92 parts get a NULL p_color and p_name; kept so that both generators
// give the same data (no SSB query reads either column).
static_assert(sizeof kColors / sizeof *kColors == 89, "89 colours, as ssb_generate");

enum Table : uint64_t { kLineorder = 1, kCustomer, kSupplier, kPart, kDate };

struct Sizes { int64_t lo; int c, s, p; };
Sizes sizes(double sf) {  // ssb_generate's, with PostgreSQL's round (rint) and floor
    return {std::max<int64_t>(1, int64_t(std::rint(6000000 * sf))),
            int(std::fmax(1000, std::rint(30000 * sf))), int(std::fmax(250, std::rint(2000 * sf))),
            int(std::fmax(5000, std::floor(200000 * (1 + std::log(sf) / std::log(2.0)))))};
}

// city: the nation's first 9 characters space padded, and a digit
void city(Out &o, int k) {
    char t[10];
    snprintf(t, sizeof t, "%-9.9s", kNations[(k - 1) % 25]);
    o.s(t);
    o.c(char('0' + (k - 1) / 25 % 10));
}
void address(Out &o, RowRng &r) {
    uint64_t b = r.next();
    for (int j = 0; j < 15; j++, b >>= 4) o.c("0123456789abcdef"[b & 15]);
}
void phone(Out &o, int k, RowRng &r) {
    o.i(10 + (k - 1) % 25); o.c('-'); o.i(100 + r.below(900)); o.c('-');
    o.i(100 + r.below(900)); o.c('-'); o.i(1000 + r.below(9000));
}

void date_row(Out &o, int64_t i) {
    int64_t day = kFirstDay + i;
    Ymd t = civil(day);
    int isodow = int((day + 3) % 7) + 1;  // 1970-01-01 was a Thursday
    static const int cum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int doy = cum[t.m - 1] + t.d + (t.m > 2 && leap(t.y));
    bool lastday = civil(day + 1).m != t.m;
    int mmdd = t.m * 100 + t.d;
    const char *season = t.m == 12 ? "Christmas" : (t.m >= 6 && t.m <= 8) ? "Summer"
                       : t.m <= 2 ? "Winter" : t.m <= 5 ? "Spring" : "Fall";
    o.i(datekey(day)); o.tab();
    o.s(kMonths[t.m - 1]); o.c(' '); o.i(t.d); o.s(", "); o.i(t.y); o.tab();
    o.s(kDays[isodow - 1]); o.tab(); o.s(kMonths[t.m - 1]); o.tab(); o.i(t.y); o.tab();
    o.i(t.y * 100 + t.m); o.tab();
    o.buf[o.n++] = kMonths[t.m - 1][0]; o.buf[o.n++] = kMonths[t.m - 1][1]; o.buf[o.n++] = kMonths[t.m - 1][2];
    o.i(t.y); o.tab();
    o.i(isodow); o.tab(); o.i(t.d); o.tab(); o.i(doy); o.tab(); o.i(t.m); o.tab(); o.i((doy - 1) / 7 + 1); o.tab();
    o.s(season); o.tab();
    o.c(isodow == 7 ? 't' : 'f'); o.tab(); o.c(lastday ? 't' : 'f'); o.tab();
    o.c(mmdd == 101 || mmdd == 704 || mmdd == 1225 || mmdd == 1231 ? 't' : 'f'); o.tab();
    o.c(isodow < 6 ? 't' : 'f');
    o.end();
}

void customer_row(Out &o, int k, RowRng &r, bool supplier) {
    o.i(k); o.tab(); o.s(supplier ? "Supplier#" : "Customer#"); o.pad(k, 9); o.tab();
    address(o, r); o.tab(); city(o, k); o.tab();
    o.s(kNations[(k - 1) % 25]); o.tab(); o.s(kRegions[(k - 1) % 25]); o.tab();
    phone(o, k, r);
    if (!supplier) { o.tab(); o.s(kSegments[r.below(5)]); }
    o.end();
}

void part_row(Out &o, int k, RowRng &r) {
    int m = 1 + r.below(5), cat = 1 + r.below(5), b = 1 + r.below(40);
    int ci = r.below(92);
    const char *c1 = ci < 89 ? kColors[ci] : nullptr, *c2 = kColors2[r.below(10)];
    const char *t1 = kType1[r.below(6)], *t2 = kType2[r.below(5)], *t3 = kType3[r.below(5)];
    int size = 1 + r.below(50);
    const char *ct1 = kCont1[r.below(5)], *ct2 = kCont2[r.below(8)];
    o.i(k); o.tab();
    if (c1) { o.c(char(c1[0] - 'a' + 'A')); o.s(c1 + 1); o.c(' '); o.s(c2); }  // initcap(c1) || ' ' || c2
    else o.s("\\N");
    o.tab();
    o.s("MFGR#"); o.i(m); o.tab(); o.s("MFGR#"); o.i(m); o.i(cat); o.tab();
    o.s("MFGR#"); o.i(m); o.i(cat); o.i(b); o.tab(); o.s(c1 ? c1 : "\\N"); o.tab();
    o.s(t1); o.c(' '); o.s(t2); o.c(' '); o.s(t3); o.tab(); o.i(size); o.tab();
    o.s(ct1); o.c(' '); o.s(ct2);
    o.end();
}

void lineorder_row(Out &o, int64_t g, RowRng &r, const Sizes &n, double skew) {
    int ck = zipf(n.c, skew, r.u()), pk = zipf(n.p, skew, r.u()), sk = zipf(n.s, skew, r.u());
    int64_t od = kFirstDay + r.below(2405);
    int q = zipf(50, skew, r.u());
    int disc = r.below(11);
    double pareto = skew > 0 ? std::fmin(1000, std::pow(1 - r.u(), -skew / 2)) : 1;
    int rp = (90000 + (pk / 10) % 20001 + 100 * (pk % 1000)) / 100;
    int ep = int(std::rint(std::fmin(20000000, double(q) * rp * pareto)));  // float8 -> int4 rounds (rint)
    o.i((g - 1) / 4 + 1); o.tab(); o.i((g - 1) % 4 + 1); o.tab();
    o.i(ck); o.tab(); o.i(pk); o.tab(); o.i(sk); o.tab(); o.i(datekey(od)); o.tab();
    o.s(kPriorities[r.below(5)]); o.tab(); o.c('0'); o.tab();
    o.i(q); o.tab(); o.i(ep); o.tab(); o.i(std::min<int64_t>(2000000000, int64_t(ep) * 4)); o.tab();
    o.i(disc); o.tab(); o.i(int64_t(ep) * (100 - disc) / 100); o.tab(); o.i(6 * rp / 10); o.tab();
    o.i(r.below(9)); o.tab();
    o.i(datekey(od + 30 + r.below(61))); o.tab();
    o.s(kShipModes[r.below(7)]);
    o.end();
}

[[noreturn]] void usage(const char *why) {
    fprintf(stderr, "ssbgen: %s\nusage: ssbgen --table lineorder|customer|supplier|part|date [--sf SF] "
                    "[--skew S] [--seed STR] [--shard I/N]\n", why);
    std::exit(2);
}

}  // namespace

int main(int argc, char **argv) {
    double sf = 10, skew = 0;
    std::string table, seed = "42";
    long shard = 0, shards = 1;
    for (int a = 1; a < argc; a++) {
        std::string k = argv[a];
        if (a + 1 >= argc) usage(("missing value of " + k).c_str());
        const char *v = argv[++a];
        char *e = nullptr;
        if (k == "--table") table = v;
        else if (k == "--sf") { sf = strtod(v, &e); if (*e || !(sf > 0)) usage("--sf must be > 0"); }
        else if (k == "--skew") { skew = strtod(v, &e); if (*e || !(skew >= 0)) usage("--skew must be >= 0"); }
        else if (k == "--seed") seed = v;
        else if (k == "--shard") {
            if (sscanf(v, "%ld/%ld", &shard, &shards) != 2 || shards < 1 || shard < 0 || shard >= shards)
                usage("--shard must be I/N with 0 <= I < N");
        } else usage(("unknown option " + k).c_str());
    }
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the seed string
    for (char ch : seed) h = (h ^ uint8_t(ch)) * 0x100000001b3ULL;
    Sizes n = sizes(sf);
    Table t;
    int64_t rows;
    if (table == "lineorder") { t = kLineorder; rows = n.lo; }
    else if (table == "customer") { t = kCustomer; rows = n.c; }
    else if (table == "supplier") { t = kSupplier; rows = n.s; }
    else if (table == "part") { t = kPart; rows = n.p; }
    else if (table == "date") { t = kDate; rows = 2556; }
    else usage("--table must be one of lineorder, customer, supplier, part, date");
    int64_t from = rows * shard / shards, to = rows * (shard + 1) / shards;
    static Out o;
    for (int64_t i = from; i < to; i++) {  // row i + 1 (keys start at 1)
        RowRng r(h, t, uint64_t(i));
        switch (t) {
        case kLineorder: lineorder_row(o, i + 1, r, n, skew); break;
        case kCustomer: customer_row(o, int(i + 1), r, false); break;
        case kSupplier: customer_row(o, int(i + 1), r, true); break;
        case kPart: part_row(o, int(i + 1), r); break;
        case kDate: date_row(o, i); break;
        }
    }
    o.flush();
    if (fflush(stdout) != 0) { perror("ssbgen: write"); return 1; }
    return 0;
}
