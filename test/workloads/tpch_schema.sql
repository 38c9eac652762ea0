-- TPC-H (TPC Benchmark H, rev. 3) tables that Q1, Q3, Q5, Q6, Q10, Q12, Q14
-- and Q19 read, with the spec's columns, and tpch_generate(sf, seed) that
-- fills them in plain SQL (generate_series, random() after setseed(seed)):
-- the same rows for the same arguments. Sizes and domains follow dbgen
-- approximately: supplier 10,000 * SF, customer 150,000 * SF (a third of
-- them without orders), part 200,000 * SF, orders 1,500,000 * SF (dense keys)
-- with 1..7 lines each (lineitem ~6,000,000 * SF); o_orderdate uniform over
-- 1992-01-01 .. 1998-08-02, ship / commit / receipt dates, l_returnflag,
-- l_linestatus and o_orderstatus from the dates as dbgen sets them
-- (current date 1995-06-17), prices from dbgen's retail-price formula,
-- p_type, p_brand, p_container, l_shipmode, l_shipinstruct, c_mktsegment,
-- o_orderpriority from the spec's word lists. Comments are random words, not
-- dbgen's grammar. The tables and functions go into the first schema of the
-- search_path (the generator keeps it). Needs no extension.
DROP TABLE IF EXISTS lineitem, orders, customer, part, supplier, nation, region;
CREATE TABLE region (r_regionkey int PRIMARY KEY, r_name char(25), r_comment varchar(152));
CREATE TABLE nation (n_nationkey int PRIMARY KEY, n_name char(25), n_regionkey int, n_comment varchar(152));
CREATE TABLE supplier (s_suppkey int PRIMARY KEY, s_name char(25), s_address varchar(40), s_nationkey int,
                       s_phone char(15), s_acctbal numeric(15, 2), s_comment varchar(101));
CREATE TABLE customer (c_custkey int PRIMARY KEY, c_name varchar(25), c_address varchar(40), c_nationkey int,
                       c_phone char(15), c_acctbal numeric(15, 2), c_mktsegment char(10), c_comment varchar(117));
CREATE TABLE part (p_partkey int PRIMARY KEY, p_name varchar(55), p_mfgr char(25), p_brand char(10),
                   p_type varchar(25), p_size int, p_container char(10), p_retailprice numeric(15, 2),
                   p_comment varchar(60));
CREATE TABLE orders (o_orderkey bigint PRIMARY KEY, o_custkey int, o_orderstatus char(1), o_totalprice numeric(15, 2),
                     o_orderdate date, o_orderpriority char(15), o_clerk char(15), o_shippriority int,
                     o_comment varchar(79));
CREATE TABLE lineitem (l_orderkey bigint, l_partkey int, l_suppkey int, l_linenumber int, l_quantity numeric(15, 2),
                       l_extendedprice numeric(15, 2), l_discount numeric(15, 2), l_tax numeric(15, 2),
                       l_returnflag char(1), l_linestatus char(1), l_shipdate date, l_commitdate date,
                       l_receiptdate date, l_shipinstruct char(25), l_shipmode char(10), l_comment varchar(80),
                       PRIMARY KEY (l_orderkey, l_linenumber));

CREATE OR REPLACE FUNCTION tpch_words(n int) RETURNS text LANGUAGE sql VOLATILE AS $$
SELECT string_agg((ARRAY['furiously','quickly','carefully','blithely','slyly','ironic','final','pending',
                         'regular','express','special','bold','deposits','packages','requests','accounts',
                         'instructions','theodolites','foxes','pinto','beans','sleep','haggle','nag'])
                  [1 + floor(random() * 24)::int], ' ') FROM generate_series(1, n) $$;

CREATE OR REPLACE FUNCTION tpch_generate(sf float8, seed float8) RETURNS text
SET search_path FROM CURRENT
LANGUAGE plpgsql AS $$
DECLARE
    n_s int := greatest(10, round(10000 * sf))::int;
    n_c int := greatest(150, round(150000 * sf))::int;
    n_p int := greatest(200, round(200000 * sf))::int;
    n_o int := greatest(1500, round(1500000 * sf))::int;
    today date := date '1995-06-17';
    n_l bigint;
BEGIN
    IF sf IS NULL OR sf <= 0 OR seed IS NULL OR seed < -1 OR seed > 1 THEN
        RAISE EXCEPTION 'tpch_generate: sf must be > 0, seed in [-1, 1]';
    END IF;
    TRUNCATE lineitem, orders, customer, part, supplier, nation, region;
    PERFORM setseed(seed);
    INSERT INTO region VALUES (0, 'AFRICA', 'r0'), (1, 'AMERICA', 'r1'), (2, 'ASIA', 'r2'), (3, 'EUROPE', 'r3'),
                              (4, 'MIDDLE EAST', 'r4');
    INSERT INTO nation
    SELECT i, n, r, 'n' || i FROM unnest(
        ARRAY['ALGERIA','ARGENTINA','BRAZIL','CANADA','EGYPT','ETHIOPIA','FRANCE','GERMANY','INDIA','INDONESIA',
              'IRAN','IRAQ','JAPAN','JORDAN','KENYA','MOROCCO','MOZAMBIQUE','PERU','CHINA','ROMANIA',
              'SAUDI ARABIA','VIETNAM','RUSSIA','UNITED KINGDOM','UNITED STATES'],
        ARRAY[0,1,1,1,4,0,3,3,2,2,4,4,2,4,0,0,0,1,2,3,4,2,3,3,1]) WITH ORDINALITY AS x(n, r, o),
        LATERAL (SELECT (o - 1)::int AS i) k;
    INSERT INTO supplier
    SELECT k, 'Supplier#' || lpad(k::text, 9, '0'), md5(random()::text), nk,
           (10 + nk) || '-' || (100 + floor(random() * 900)) || '-' || (100 + floor(random() * 900)) || '-' || (1000 + floor(random() * 9000)),
           round((-999.99 + random() * 10999.98)::numeric, 2), tpch_words(5)
      FROM generate_series(1, n_s) k, LATERAL (SELECT floor(random() * 25)::int AS nk WHERE k > 0) r;
    INSERT INTO customer
    SELECT k, 'Customer#' || lpad(k::text, 9, '0'), md5(random()::text), nk,
           (10 + nk) || '-' || (100 + floor(random() * 900)) || '-' || (100 + floor(random() * 900)) || '-' || (1000 + floor(random() * 9000)),
           round((-999.99 + random() * 10999.98)::numeric, 2),
           (ARRAY['AUTOMOBILE','BUILDING','FURNITURE','MACHINERY','HOUSEHOLD'])[1 + floor(random() * 5)::int], tpch_words(6)
      FROM generate_series(1, n_c) k, LATERAL (SELECT floor(random() * 25)::int AS nk WHERE k > 0) r;
    INSERT INTO part
    SELECT k, c1 || ' ' || c2 || ' ' || c3, 'Manufacturer#' || m, 'Brand#' || m || (1 + floor(random() * 5)::int),
           (ARRAY['STANDARD','SMALL','MEDIUM','LARGE','ECONOMY','PROMO'])[1 + floor(random() * 6)::int] || ' ' ||
           (ARRAY['ANODIZED','BURNISHED','PLATED','POLISHED','BRUSHED'])[1 + floor(random() * 5)::int] || ' ' ||
           (ARRAY['TIN','NICKEL','BRASS','STEEL','COPPER'])[1 + floor(random() * 5)::int],
           1 + floor(random() * 50)::int,
           (ARRAY['SM','LG','MED','JUMBO','WRAP'])[1 + floor(random() * 5)::int] || ' ' ||
           (ARRAY['CASE','BOX','BAG','JAR','PKG','PACK','CAN','DRUM'])[1 + floor(random() * 8)::int],
           (90000 + (k / 10) % 20001 + 100 * (k % 1000)) / 100.0, tpch_words(2)
      FROM generate_series(1, n_p) k,
           LATERAL (SELECT 1 + floor(random() * 5)::int AS m,
                           (ARRAY['almond','antique','azure','beige','black','blue','brown','coral','cyan','green',
                                  'ivory','khaki','lace','lemon','linen','navy','olive','orange','pink','plum'])[1 + floor(random() * 20)::int] AS c1,
                           (ARRAY['red','rose','royal','salmon','sienna','sky','slate','snow','tan','white'])[1 + floor(random() * 10)::int] AS c2,
                           (ARRAY['dark','deep','dim','hot','light','pale','powder','puff','spring','steel'])[1 + floor(random() * 10)::int] AS c3
                    WHERE k > 0) r;
    -- Orders and their line counts first (a temporary table read in key order
    -- below, so the lines' random draws come in a fixed order).
    CREATE TEMP TABLE tpch_o ON COMMIT DROP AS
    SELECT k::bigint AS ok, date '1992-01-01' + floor(random() * 2406)::int AS od, 1 + floor(random() * 7)::int AS nl
      FROM generate_series(1, n_o) k;
    INSERT INTO lineitem
    SELECT o.ok, pk, 1 + floor(random() * n_s)::int, ln, q, q * rp, disc, tax,
           CASE WHEN rd <= today THEN (ARRAY['R','A'])[1 + floor(random() * 2)::int] ELSE 'N' END,
           CASE WHEN sd > today THEN 'O' ELSE 'F' END, sd, cd, rd,
           (ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[1 + floor(random() * 4)::int],
           (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + floor(random() * 7)::int], tpch_words(3)
      FROM (SELECT * FROM tpch_o ORDER BY ok) o, generate_series(1, o.nl) ln,
           LATERAL (SELECT 1 + floor(random() * n_p)::int AS pk, (1 + floor(random() * 50))::numeric AS q,
                           floor(random() * 11) / 100.0 AS disc, floor(random() * 9) / 100.0 AS tax,
                           o.od + 1 + floor(random() * 121)::int AS sd, o.od + 30 + floor(random() * 61)::int AS cd
                    WHERE ln > 0) r,
           LATERAL (SELECT sd + 1 + floor(random() * 30)::int AS rd,
                           (90000 + (pk / 10) % 20001 + 100 * (pk % 1000)) / 100.0 AS rp) r2;
    GET DIAGNOSTICS n_l = ROW_COUNT;
    -- o_custkey skips every third customer (dbgen: a third have no orders);
    -- status and total from the order's lines.
    INSERT INTO orders
    SELECT o.ok, ck - CASE WHEN ck % 3 = 0 THEN 1 ELSE 0 END,
           CASE WHEN l.n_f = l.n THEN 'F' WHEN l.n_f = 0 THEN 'O' ELSE 'P' END, l.total, o.od,
           (ARRAY['1-URGENT','2-HIGH','3-MEDIUM','4-NOT SPECIFIED','5-LOW'])[1 + floor(random() * 5)::int],
           'Clerk#' || lpad((1 + floor(random() * greatest(1, 1000 * sf)))::text, 9, '0'), 0, tpch_words(4)
      FROM (SELECT * FROM tpch_o ORDER BY ok) o
      JOIN LATERAL (SELECT 1 + floor(random() * n_c)::int AS ck WHERE o.ok > 0) c ON true
      JOIN (SELECT l_orderkey, count(*) AS n, count(*) FILTER (WHERE l_linestatus = 'F') AS n_f,
                   sum(l_extendedprice * (1 + l_tax) * (1 - l_discount)) AS total
              FROM lineitem GROUP BY l_orderkey) l ON l.l_orderkey = o.ok;
    DROP TABLE tpch_o;
    ANALYZE region; ANALYZE nation; ANALYZE supplier; ANALYZE customer; ANALYZE part; ANALYZE orders; ANALYZE lineitem;
    RETURN format('lineitem %s, orders %s, customer %s, part %s, supplier %s, nation 25, region 5', n_l, n_o, n_c, n_p, n_s);
END $$;
