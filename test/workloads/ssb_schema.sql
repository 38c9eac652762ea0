-- Star Schema Benchmark (O'Neil, O'Neil, Chen, Revilak: "Star Schema
-- Benchmark", rev. 3, 2009): the five tables with the spec's columns and
-- value domains, and ssb_generate(sf, seed[, skew]) that fills them in plain
-- SQL (generate_series, random() after setseed(seed)): the same rows for the
-- same arguments. Sizes: lineorder 6,000,000 * SF (4 lines per order),
-- date 2,556 days from 1992-01-01, customer 30,000 * SF, supplier 2,000 * SF,
-- part 200,000 * (1 + log2 SF). Below SF 1 the dimensions are floored
-- (customer 1,000, supplier 250, part 5,000) and customers and suppliers
-- take the 250 cities in turn, so that every city the queries name exists at
-- SF 0.01 (dbgen draws them at random). skew = 0 (default): uniform as
-- dbgen; skew > 0: the foreign keys and lo_quantity drawn Zipf(skew) (hot
-- keys scattered over the key range) and lo_extendedprice multiplied by a
-- Pareto factor of index 2 / skew (capped at 1,000, and lo_extendedprice
-- at 2 * 10^7 so that lo_extendedprice * lo_discount stays an int4), so
-- lo_revenue is heavy-tailed. The tables and functions go into the first schema of the
-- search_path (the generator keeps it). Needs no extension.
DROP TABLE IF EXISTS lineorder, date, customer, supplier, part;
CREATE TABLE date (
    d_datekey int PRIMARY KEY, d_date varchar(18), d_dayofweek varchar(9), d_month varchar(9),
    d_year int, d_yearmonthnum int, d_yearmonth varchar(7), d_daynuminweek int, d_daynuminmonth int,
    d_daynuminyear int, d_monthnuminyear int, d_weeknuminyear int, d_sellingseason varchar(12),
    d_lastdayinweekfl boolean, d_lastdayinmonthfl boolean, d_holidayfl boolean, d_weekdayfl boolean);
CREATE TABLE customer (
    c_custkey int PRIMARY KEY, c_name varchar(25), c_address varchar(25), c_city varchar(10),
    c_nation varchar(15), c_region varchar(12), c_phone varchar(15), c_mktsegment varchar(10));
CREATE TABLE supplier (
    s_suppkey int PRIMARY KEY, s_name varchar(25), s_address varchar(25), s_city varchar(10),
    s_nation varchar(15), s_region varchar(12), s_phone varchar(15));
CREATE TABLE part (
    p_partkey int PRIMARY KEY, p_name varchar(22), p_mfgr varchar(6), p_category varchar(7),
    p_brand1 varchar(9), p_color varchar(11), p_type varchar(25), p_size int, p_container varchar(10));
CREATE TABLE lineorder (
    lo_orderkey bigint, lo_linenumber int, lo_custkey int, lo_partkey int, lo_suppkey int,
    lo_orderdate int, lo_orderpriority varchar(15), lo_shippriority varchar(1), lo_quantity int,
    lo_extendedprice int, lo_ordtotalprice int, lo_discount int, lo_revenue int, lo_supplycost int,
    lo_tax int, lo_commitdate int, lo_shipmode varchar(10));

-- A key in 1..n drawn from a continuous power law of exponent s (s = 0:
-- uniform) by inverting its CDF at u in [0, 1); the hot keys are scattered by
-- a multiplicative permutation (7919 is prime).
CREATE OR REPLACE FUNCTION ssb_zipf(n int, s float8, u float8) RETURNS int
LANGUAGE sql IMMUTABLE AS $$
SELECT (((least(n, greatest(1, floor(CASE WHEN abs(s - 1) < 1e-9 THEN power(n + 1.0, u)
             ELSE power(power(n + 1.0, 1 - s) * u + (1 - u), 1 / (1 - s)) END)::int)) - 1)::bigint
          * CASE WHEN s = 0 THEN 1 ELSE 7919 END % n) + 1)::int $$;

-- The 25 nations of TPC-H / SSB with their regions; a city is the nation's
-- first 9 characters, space padded, and a digit ('UNITED KI1').
CREATE OR REPLACE FUNCTION ssb_nation(i int) RETURNS TABLE (nation text, region text)
LANGUAGE sql IMMUTABLE AS $$
SELECT (ARRAY['ALGERIA','ARGENTINA','BRAZIL','CANADA','EGYPT','ETHIOPIA','FRANCE','GERMANY','INDIA',
              'INDONESIA','IRAN','IRAQ','JAPAN','JORDAN','KENYA','MOROCCO','MOZAMBIQUE','PERU','CHINA',
              'ROMANIA','SAUDI ARABIA','VIETNAM','RUSSIA','UNITED KINGDOM','UNITED STATES'])[i % 25 + 1],
       (ARRAY['AFRICA','AMERICA','AMERICA','AMERICA','MIDDLE EAST','AFRICA','EUROPE','EUROPE','ASIA',
              'ASIA','MIDDLE EAST','MIDDLE EAST','ASIA','MIDDLE EAST','AFRICA','AFRICA','AFRICA',
              'AMERICA','ASIA','EUROPE','MIDDLE EAST','ASIA','EUROPE','EUROPE','AMERICA'])[i % 25 + 1] $$;

CREATE OR REPLACE FUNCTION ssb_generate(sf float8, seed float8, skew float8 DEFAULT 0) RETURNS text
SET search_path FROM CURRENT
LANGUAGE plpgsql AS $$
DECLARE
    n_lo bigint := greatest(1, round(6000000 * sf));
    n_c int := greatest(1000, round(30000 * sf))::int;
    n_s int := greatest(250, round(2000 * sf))::int;
    n_p int := greatest(5000, floor(200000 * (1 + ln(sf) / ln(2))))::int;
    first_day date := date '1992-01-01';
BEGIN
    IF sf IS NULL OR sf <= 0 OR seed IS NULL OR seed < -1 OR seed > 1 OR skew IS NULL OR skew < 0 THEN
        RAISE EXCEPTION 'ssb_generate: sf must be > 0, seed in [-1, 1], skew >= 0';
    END IF;
    TRUNCATE lineorder, date, customer, supplier, part;
    PERFORM setseed(seed);
    INSERT INTO date
    SELECT to_char(d, 'YYYYMMDD')::int, trim(to_char(d, 'FMMonth')) || ' ' || extract(day FROM d) || ', ' || extract(year FROM d),
           trim(to_char(d, 'Day')), trim(to_char(d, 'Month')), extract(year FROM d)::int,
           to_char(d, 'YYYYMM')::int, to_char(d, 'Mon') || extract(year FROM d), extract(isodow FROM d)::int,
           extract(day FROM d)::int, extract(doy FROM d)::int, extract(month FROM d)::int,
           (extract(doy FROM d)::int - 1) / 7 + 1,
           CASE WHEN extract(month FROM d) = 12 THEN 'Christmas' WHEN extract(month FROM d) IN (6, 7, 8) THEN 'Summer'
                WHEN extract(month FROM d) IN (1, 2) THEN 'Winter' WHEN extract(month FROM d) IN (3, 4, 5) THEN 'Spring'
                ELSE 'Fall' END,
           extract(isodow FROM d) = 7, extract(month FROM d + 1) <> extract(month FROM d),
           to_char(d, 'MMDD') IN ('0101', '0704', '1225', '1231'), extract(isodow FROM d) < 6
      FROM generate_series(0, 2555) i, LATERAL (SELECT first_day + i AS d) x;
    INSERT INTO customer
    SELECT k, 'Customer#' || lpad(k::text, 9, '0'), md5(random()::text)::varchar(15),
           rpad(substr(n.nation, 1, 9), 9) || ((k - 1) / 25 % 10), n.nation, n.region,
           lpad((10 + (k - 1) % 25)::text, 2, '0') || '-' || (100 + floor(random() * 900)) || '-' || (100 + floor(random() * 900)) || '-' || (1000 + floor(random() * 9000)),
           (ARRAY['AUTOMOBILE','BUILDING','FURNITURE','MACHINERY','HOUSEHOLD'])[1 + floor(random() * 5)::int]
      FROM generate_series(1, n_c) k, LATERAL ssb_nation((k - 1) % 25) n;
    INSERT INTO supplier
    SELECT k, 'Supplier#' || lpad(k::text, 9, '0'), md5(random()::text)::varchar(15),
           rpad(substr(n.nation, 1, 9), 9) || ((k - 1) / 25 % 10), n.nation, n.region,
           lpad((10 + (k - 1) % 25)::text, 2, '0') || '-' || (100 + floor(random() * 900)) || '-' || (100 + floor(random() * 900)) || '-' || (1000 + floor(random() * 9000))
      FROM generate_series(1, n_s) k, LATERAL ssb_nation((k - 1) % 25) n;
    INSERT INTO part
    SELECT k, initcap(c1) || ' ' || c2, 'MFGR#' || m, 'MFGR#' || m || cat, 'MFGR#' || m || cat || b, c1,
           t1 || ' ' || t2 || ' ' || t3, 1 + floor(random() * 50)::int, ct1 || ' ' || ct2
      FROM generate_series(1, n_p) k,
           LATERAL (SELECT 1 + floor(random() * 5)::int AS m, 1 + floor(random() * 5)::int AS cat,
                           1 + floor(random() * 40)::int AS b,
                           (ARRAY['almond','antique','aquamarine','azure','beige','bisque','black','blanched','blue','blush',
                                  'brown','burlywood','chartreuse','chiffon','chocolate','coral','cornflower','cream','cyan',
                                  'dark','deep','dim','dodger','drab','firebrick','forest','frosted','gainsboro','ghost',
                                  'goldenrod','green','grey','honeydew','hot','indian','ivory','khaki','lace','lavender',
                                  'lawn','lemon','light','lime','linen','magenta','maroon','medium','metallic','midnight',
                                  'mint','misty','moccasin','navajo','navy','olive','orange','orchid','pale','papaya',
                                  'peach','peru','pink','plum','powder','puff','purple','red','rose','rosy','royal',
                                  'saddle','salmon','sandy','seashell','sienna','sky','slate','smoke','snow','spring',
                                  'steel','tan','thistle','tomato','turquoise','violet','wheat','white','yellow'])[1 + floor(random() * 92)::int] AS c1,
                           (ARRAY['red','green','blue','white','black','ivory','navy','olive','plum','tan'])[1 + floor(random() * 10)::int] AS c2,
                           (ARRAY['STANDARD','SMALL','MEDIUM','LARGE','ECONOMY','PROMO'])[1 + floor(random() * 6)::int] AS t1,
                           (ARRAY['ANODIZED','BURNISHED','PLATED','POLISHED','BRUSHED'])[1 + floor(random() * 5)::int] AS t2,
                           (ARRAY['TIN','NICKEL','BRASS','STEEL','COPPER'])[1 + floor(random() * 5)::int] AS t3,
                           (ARRAY['SM','LG','MED','JUMBO','WRAP'])[1 + floor(random() * 5)::int] AS ct1,
                           (ARRAY['CASE','BOX','BAG','JAR','PKG','PACK','CAN','DRUM'])[1 + floor(random() * 8)::int] AS ct2
                    WHERE k > 0) r;
    -- lineorder: 4 lines per order; orderdate uniform over the days dbgen
    -- uses (1992-01-01 .. 1998-08-02), commitdate 30..90 days later; prices
    -- from the part key as dbgen's retail price, revenue after the discount.
    INSERT INTO lineorder
    SELECT (g - 1) / 4 + 1, (g - 1) % 4 + 1, ck, pk, sk, to_char(od, 'YYYYMMDD')::int,
           (ARRAY['1-URGENT','2-HIGH','3-MEDIUM','4-NOT SPECI','5-LOW'])[1 + floor(random() * 5)::int], '0',
           q, ep, least(2000000000, ep::bigint * 4)::int, disc, (ep::bigint * (100 - disc) / 100)::int, (6 * rp / 10)::int, floor(random() * 9)::int,
           to_char(od + 30 + floor(random() * 61)::int, 'YYYYMMDD')::int,
           (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + floor(random() * 7)::int]
      FROM generate_series(1, n_lo) g,
           LATERAL (SELECT ssb_zipf(n_c, skew, random()) AS ck, ssb_zipf(n_p, skew, random()) AS pk,
                           ssb_zipf(n_s, skew, random()) AS sk, first_day + floor(random() * 2405)::int AS od,
                           ssb_zipf(50, skew, random()) AS q, floor(random() * 11)::int AS disc,
                           CASE WHEN skew > 0 THEN least(1000, power(1 - random(), -skew / 2)) ELSE 1 END AS pareto
                    WHERE g > 0) r,
           LATERAL (SELECT (90000 + (pk / 10) % 20001 + 100 * (pk % 1000)) / 100 AS rp) p,
           LATERAL (SELECT least(20000000, q * rp * pareto)::int AS ep) e;
    ANALYZE date; ANALYZE customer; ANALYZE supplier; ANALYZE part; ANALYZE lineorder;
    RETURN format('lineorder %s, date 2556, customer %s, supplier %s, part %s', n_lo, n_c, n_s, n_p);
END $$;
