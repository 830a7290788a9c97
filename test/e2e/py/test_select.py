"""S3 Select end to end: boto3's select_object_content against Facet, every
query's result checked against DuckDB running the equivalent SQL on the
same file (CSV, JSON lines, JSON document, Parquet written by pyarrow).

Each entry of the query tables is (S3 Select SQL, DuckDB SQL). DuckDB reads
CSV with all_varchar, as S3 Select does (CSV fields are strings), so the
DuckDB side spells out the casts that S3 Select does implicitly.
"""

import bz2
import csv
import datetime as dt
import gzip
import io
import json
import math
import random
import uuid

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.exceptions import ClientError, EventStreamError

from conftest import make_client

CITIES = ["paris", "berlin", "new york", "oslo", "lima", "san jose", "kyoto"]
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]
CODES = ["A_1", "B%2", "C_x", "plain", "D\\_3"]


def make_rows(n=300, seed=7):
    rnd = random.Random(seed)
    rows = []
    base = dt.date(2015, 1, 1)
    for i in range(n):
        joined = base + dt.timedelta(days=rnd.randrange(0, 3000))
        start = dt.date(2010 + rnd.randrange(0, 10), rnd.randrange(1, 13), 1)
        rows.append({
            "id": i + 1,
            "name": rnd.choice(NAMES) + ("" if rnd.random() < 0.7 else "  "),
            "age": rnd.randrange(18, 80),
            "city": rnd.choice(CITIES),
            "score": round(rnd.uniform(0, 1000), 2),
            "joined": joined.isoformat(),
            "start": start.isoformat(),
            "code": rnd.choice(CODES),
            "note": rnd.choice(["ok", 'said "hi", left', "a,b", "x"]),
            "email": "" if rnd.random() < 0.2 else f"u{i}@example.com",
        })
    return rows


COLUMNS = ["id", "name", "age", "city", "score", "joined", "start", "code", "note", "email"]


def csv_bytes(rows):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([r[c] for c in COLUMNS])
    return buf.getvalue().encode()


def json_rows(rows):
    out = []
    for r in rows:
        o = {k: r[k] for k in ["id", "name", "age", "city", "score", "joined"]}
        o["addr"] = {"city": r["city"], "zip": 10000 + r["id"] * 37 % 90000}
        o["tags"] = [r["code"], r["city"][:2]]
        o["geo"] = {"pts": [r["age"], r["id"] % 7], "tz": {"name": r["city"]}}
        if r["email"]:
            o["email"] = r["email"]
        if r["id"] % 3 == 0:
            o["nick"] = None
        out.append(o)
    return out


def jsonl_bytes(rows):
    return "".join(json.dumps(o) + "\n" for o in json_rows(rows)).encode()


def parquet_bytes(rows, row_group_size=64):
    t = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.int64()),
        "name": pa.array([r["name"] for r in rows], pa.string()),
        "age": pa.array([r["age"] for r in rows], pa.int32()),
        "city": pa.array([r["city"] for r in rows], pa.string()),
        "score": pa.array([r["score"] for r in rows], pa.float64()),
        "ts": pa.array([dt.datetime.fromisoformat(r["joined"] + "T12:30:00") for r in rows], pa.timestamp("us")),
        "email": pa.array([r["email"] or None for r in rows], pa.string()),
        "active": pa.array([r["id"] % 2 == 0 for r in rows], pa.bool_()),
    })
    buf = io.BytesIO()
    pq.write_table(t, buf, row_group_size=row_group_size)
    return buf.getvalue()


@pytest.fixture(scope="module")
def env(server, tmp_path_factory):
    d = tmp_path_factory.mktemp("select")
    creds = server.create_tenant("sel-" + uuid.uuid4().hex[:8])
    s3 = make_client(server.endpoint, creds)
    bucket = "sel-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=bucket)
    rows = make_rows()
    files = {
        "people.csv": csv_bytes(rows),
        "people.jsonl": jsonl_bytes(rows),
        "people.json": json.dumps({"people": json_rows(rows)}, indent=1).encode(),
        "people.parquet": parquet_bytes(rows),
    }
    files["people.csv.gz"] = gzip.compress(files["people.csv"])
    files["people.jsonl.bz2"] = bz2.compress(files["people.jsonl"])
    for name, data in files.items():
        (d / name).write_bytes(data)
        s3.put_object(Bucket=bucket, Key=name, Body=data)
    db = duckdb.connect()
    db.execute(f"CREATE VIEW c AS SELECT * FROM read_csv('{d / 'people.csv'}', header=true, all_varchar=true, quote='\"', escape='\"')")
    db.execute(f"CREATE VIEW j AS SELECT * FROM read_json('{d / 'people.jsonl'}', format='newline_delimited')")
    db.execute(f"CREATE VIEW p AS SELECT * FROM read_parquet('{d / 'people.parquet'}')")
    return {"s3": s3, "bucket": bucket, "db": db, "files": files, "dir": d, "server": server, "creds": creds}


def select(env, key, sql, inp, out=None, scan=None, progress=False):
    """Runs a select and returns (records bytes, stats dict, events)."""
    kw = {}
    if scan is not None:
        kw["ScanRange"] = scan
    if progress:
        kw["RequestProgress"] = {"Enabled": True}
    resp = env["s3"].select_object_content(
        Bucket=env["bucket"], Key=key, Expression=sql, ExpressionType="SQL",
        InputSerialization=inp, OutputSerialization=out or {"CSV": {}}, **kw)
    data, stats, events = b"", None, []
    for ev in resp["Payload"]:
        events.append(next(iter(ev)))
        if "Records" in ev:
            data += ev["Records"]["Payload"]
        elif "Stats" in ev:
            stats = ev["Stats"]["Details"]
    return data, stats, events


CSV_IN = {"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "NONE"}
JSONL_IN = {"JSON": {"Type": "LINES"}, "CompressionType": "NONE"}
PARQUET_IN = {"Parquet": {}}


def norm_cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def same_cell(a, b):
    if a == b:
        return True
    try:
        fa, fb = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(fa, fb, rel_tol=1e-9, abs_tol=1e-9)


def assert_same(got_rows, want_rows, sql):
    assert len(got_rows) == len(want_rows), f"{sql}: {len(got_rows)} rows, DuckDB {len(want_rows)}\n{got_rows[:3]}\n{want_rows[:3]}"
    for i, (g, w) in enumerate(zip(got_rows, want_rows)):
        w = [norm_cell(x) for x in w]
        if g == [] and w == [""]:
            g = [""]  # csv.reader reads an empty line as no field
        assert len(g) == len(w) and all(same_cell(a, b) for a, b in zip(g, w)), f"{sql}: row {i}: {g} != DuckDB {w}"


def csv_rows(data):
    return list(csv.reader(io.StringIO(data.decode()), lineterminator="\n"))


# (S3 Select over people.csv with FileHeaderInfo USE, DuckDB over view c)
CSV_QUERIES = [
    ("SELECT * FROM S3Object", "SELECT * FROM c"),
    ("SELECT s._1, s._3 FROM S3Object s", "SELECT id, age FROM c"),
    ("SELECT s.name, s.city FROM S3Object s WHERE s.city = 'paris'", "SELECT name, city FROM c WHERE city = 'paris'"),
    ("SELECT name AS n, age AS a FROM S3Object WHERE city != 'oslo'", "SELECT name, age FROM c WHERE city != 'oslo'"),
    ("SELECT id FROM S3Object WHERE city <> 'lima' AND age > 70", "SELECT id FROM c WHERE city <> 'lima' AND CAST(age AS INT) > 70"),
    ("SELECT id FROM S3Object s WHERE CAST(s.age AS INT) < 20", "SELECT id FROM c WHERE CAST(age AS INT) < 20"),
    ("SELECT id FROM S3Object s WHERE CAST(s.age AS INT) <= 19", "SELECT id FROM c WHERE CAST(age AS INT) <= 19"),
    ("SELECT id FROM S3Object s WHERE CAST(s.age AS INT) >= 78", "SELECT id FROM c WHERE CAST(age AS INT) >= 78"),
    ("SELECT id, score FROM S3Object WHERE score > 990", "SELECT id, score FROM c WHERE CAST(score AS DOUBLE) > 990"),
    ("SELECT id FROM S3Object WHERE city = 'kyoto' OR city = 'oslo' AND age < 30",
     "SELECT id FROM c WHERE city = 'kyoto' OR (city = 'oslo' AND CAST(age AS INT) < 30)"),
    ("SELECT id FROM S3Object WHERE (city = 'kyoto' OR city = 'oslo') AND age < 30",
     "SELECT id FROM c WHERE (city = 'kyoto' OR city = 'oslo') AND CAST(age AS INT) < 30"),
    ("SELECT id FROM S3Object WHERE NOT city = 'paris' AND NOT (age > 30)",
     "SELECT id FROM c WHERE NOT city = 'paris' AND NOT (CAST(age AS INT) > 30)"),
    ("SELECT name FROM S3Object WHERE name LIKE 'a%'", "SELECT name FROM c WHERE name LIKE 'a%'"),
    ("SELECT name FROM S3Object WHERE name LIKE '%y'", "SELECT name FROM c WHERE name LIKE '%y'"),
    ("SELECT name FROM S3Object WHERE name LIKE '%ar%'", "SELECT name FROM c WHERE name LIKE '%ar%'"),
    ("SELECT name FROM S3Object WHERE name LIKE '_o%'", "SELECT name FROM c WHERE name LIKE '_o%'"),
    ("SELECT name FROM S3Object WHERE name LIKE 'a_i%e'", "SELECT name FROM c WHERE name LIKE 'a_i%e'"),
    ("SELECT name FROM S3Object WHERE name NOT LIKE '%a%'", "SELECT name FROM c WHERE name NOT LIKE '%a%'"),
    ("SELECT id, code FROM S3Object WHERE code LIKE '%!_%' ESCAPE '!'", "SELECT id, code FROM c WHERE code LIKE '%!_%' ESCAPE '!'"),
    ("SELECT id, code FROM S3Object WHERE code LIKE '_!%_' ESCAPE '!'", "SELECT id, code FROM c WHERE code LIKE '_!%_' ESCAPE '!'"),
    ("SELECT id FROM S3Object WHERE age BETWEEN 30 AND 32", "SELECT id FROM c WHERE CAST(age AS INT) BETWEEN 30 AND 32"),
    ("SELECT id FROM S3Object WHERE age NOT BETWEEN 20 AND 75", "SELECT id FROM c WHERE CAST(age AS INT) NOT BETWEEN 20 AND 75"),
    ("SELECT id FROM S3Object WHERE city IN ('oslo', 'lima')", "SELECT id FROM c WHERE city IN ('oslo', 'lima')"),
    ("SELECT id FROM S3Object WHERE city NOT IN ('oslo', 'lima', 'paris')", "SELECT id FROM c WHERE city NOT IN ('oslo', 'lima', 'paris')"),
    ("SELECT id FROM S3Object WHERE age IN (20, 21, 22)", "SELECT id FROM c WHERE CAST(age AS INT) IN (20, 21, 22)"),
    ("SELECT id, email FROM S3Object WHERE email = ''", "SELECT id, '' FROM c WHERE email IS NULL"),
    ("SELECT id, CAST(age AS INT) * 2 + 1 FROM S3Object", "SELECT id, CAST(age AS INT) * 2 + 1 FROM c"),
    ("SELECT id, CAST(age AS INT) / 7, CAST(age AS INT) % 7 FROM S3Object",
     "SELECT id, CAST(age AS INT) // 7, CAST(age AS INT) % 7 FROM c"),
    ("SELECT id, -CAST(age AS INT), CAST(score AS FLOAT) * 1.5 - 2 FROM S3Object",
     "SELECT id, -CAST(age AS INT), CAST(score AS DOUBLE) * 1.5 - 2 FROM c"),
    ("SELECT CAST(score AS FLOAT) / 4 FROM S3Object WHERE id < '10'", "SELECT CAST(score AS DOUBLE) / 4 FROM c WHERE id < '10'"),
    ("SELECT CAST(id AS STRING) || '-' || city FROM S3Object", "SELECT id || '-' || city FROM c"),
    ("SELECT CAST(CAST(age AS INT) AS STRING), CAST('true' AS BOOL) FROM S3Object LIMIT 3",
     "SELECT CAST(CAST(age AS INT) AS VARCHAR), true FROM c LIMIT 3"),
    ("SELECT LOWER(UPPER(city)), UPPER(name) FROM S3Object", "SELECT lower(upper(city)), upper(name) FROM c"),
    ("SELECT SUBSTRING(city FROM 2 FOR 3) FROM S3Object", "SELECT substring(city, 2, 3) FROM c"),
    ("SELECT SUBSTRING(city, 3) FROM S3Object", "SELECT substring(city, 3) FROM c"),
    ("SELECT SUBSTRING(city, 1, 2) FROM S3Object WHERE SUBSTRING(city, 1, 1) = 'n'",
     "SELECT substring(city, 1, 2) FROM c WHERE substring(city, 1, 1) = 'n'"),
    ("SELECT TRIM(name), CHAR_LENGTH(name), CHARACTER_LENGTH(TRIM(name)) FROM S3Object",
     "SELECT trim(name), length(name), length(trim(name)) FROM c"),
    ("SELECT TRIM(TRAILING FROM name) FROM S3Object", "SELECT rtrim(name) FROM c"),
    ("SELECT TRIM(LEADING 'a' FROM name) FROM S3Object", "SELECT ltrim(name, 'a') FROM c"),
    ("SELECT TRIM(BOTH 'ol' FROM city) FROM S3Object", "SELECT trim(city, 'ol') FROM c"),
    ("SELECT EXTRACT(YEAR FROM TO_TIMESTAMP(joined)), EXTRACT(MONTH FROM TO_TIMESTAMP(joined)), EXTRACT(DAY FROM TO_TIMESTAMP(joined)) FROM S3Object",
     "SELECT year(CAST(joined AS DATE)), month(CAST(joined AS DATE)), day(CAST(joined AS DATE)) FROM c"),
    ("SELECT EXTRACT(HOUR FROM TO_TIMESTAMP('2020-01-02T03:04:05Z')), EXTRACT(MINUTE FROM TO_TIMESTAMP('2020-01-02T03:04:05Z')), EXTRACT(SECOND FROM TO_TIMESTAMP('2020-01-02T03:04:05Z')) FROM S3Object LIMIT 1",
     "SELECT 3, 4, 5"),
    ("SELECT TO_STRING(DATE_ADD(DAY, 10, TO_TIMESTAMP(joined)), 'yyyy-MM-dd') FROM S3Object",
     "SELECT strftime(CAST(joined AS DATE) + INTERVAL 10 DAY, '%Y-%m-%d') FROM c"),
    ("SELECT TO_STRING(DATE_ADD(MONTH, -3, TO_TIMESTAMP(start)), 'yyyy/MM/dd') FROM S3Object",
     "SELECT strftime(CAST(start AS DATE) - INTERVAL 3 MONTH, '%Y/%m/%d') FROM c"),
    ("SELECT TO_STRING(DATE_ADD(YEAR, 2, TO_TIMESTAMP(start)), 'MMMM d, yyyy') FROM S3Object",
     "SELECT strftime(CAST(start AS DATE) + INTERVAL 2 YEAR, '%B %-d, %Y') FROM c"),
    ("SELECT TO_STRING(DATE_ADD(HOUR, 30, TO_TIMESTAMP(joined)), 'yyyy-MM-dd HH:mm') FROM S3Object",
     "SELECT strftime(CAST(joined AS TIMESTAMP) + INTERVAL 30 HOUR, '%Y-%m-%d %H:%M') FROM c"),
    ("SELECT DATE_DIFF(DAY, TO_TIMESTAMP(joined), TO_TIMESTAMP('2024-01-01')) FROM S3Object",
     "SELECT date_diff('day', CAST(joined AS DATE), DATE '2024-01-01') FROM c"),
    ("SELECT DATE_DIFF(MONTH, TO_TIMESTAMP(start), TO_TIMESTAMP('2021-06-01')), DATE_DIFF(YEAR, TO_TIMESTAMP(start), TO_TIMESTAMP('2030-01-01')) FROM S3Object",
     "SELECT date_sub('month', CAST(start AS DATE), DATE '2021-06-01'), date_sub('year', CAST(start AS DATE), DATE '2030-01-01') FROM c"),
    ("SELECT DATE_DIFF(HOUR, TO_TIMESTAMP(joined), TO_TIMESTAMP('2024-01-01T06:00:00Z')) FROM S3Object",
     "SELECT date_sub('hour', CAST(joined AS TIMESTAMP), TIMESTAMP '2024-01-01 06:00:00') FROM c"),
    ("SELECT id FROM S3Object WHERE TO_TIMESTAMP(joined) > TO_TIMESTAMP('2022-06-01')",
     "SELECT id FROM c WHERE CAST(joined AS DATE) > DATE '2022-06-01'"),
    ("SELECT EXTRACT(YEAR FROM UTCNOW()) >= 2024 FROM S3Object LIMIT 1", "SELECT true"),
    ("SELECT COUNT(*) FROM S3Object", "SELECT count(*) FROM c"),
    ("SELECT COUNT(*), COUNT(s.email) FROM S3Object s WHERE s.city = 'oslo'", "SELECT count(*), count(*) FROM c WHERE city = 'oslo'"),
    ("SELECT SUM(CAST(age AS INT)), MIN(CAST(age AS INT)), MAX(CAST(age AS INT)) FROM S3Object",
     "SELECT sum(CAST(age AS INT)), min(CAST(age AS INT)), max(CAST(age AS INT)) FROM c"),
    ("SELECT AVG(CAST(score AS FLOAT)), SUM(CAST(score AS FLOAT)) FROM S3Object WHERE city = 'berlin'",
     "SELECT avg(CAST(score AS DOUBLE)), sum(CAST(score AS DOUBLE)) FROM c WHERE city = 'berlin'"),
    ("SELECT MIN(city), MAX(name) FROM S3Object", "SELECT min(city), max(name) FROM c"),
    ("SELECT SUM(age), AVG(age) FROM S3Object WHERE age > 60", "SELECT sum(CAST(age AS INT)), avg(CAST(age AS INT)) FROM c WHERE CAST(age AS INT) > 60"),
    ("SELECT COUNT(*) FROM S3Object WHERE city = 'atlantis'", "SELECT count(*) FROM c WHERE city = 'atlantis'"),
    ("SELECT * FROM S3Object LIMIT 5", "SELECT * FROM c LIMIT 5"),
    ("SELECT name FROM S3Object WHERE age > 50 LIMIT 7", "SELECT name FROM c WHERE CAST(age AS INT) > 50 LIMIT 7"),
    ("SELECT COALESCE(NULLIF(email, ''), 'none') FROM S3Object", "SELECT coalesce(email, 'none') FROM c"),
    ("SELECT NULLIF(city, 'oslo') FROM S3Object", "SELECT nullif(city, 'oslo') FROM c"),
    ("SELECT note FROM S3Object WHERE note LIKE '%\"%'", "SELECT note FROM c WHERE note LIKE '%\"%'"),
    ("SELECT UPPER(SUBSTRING(TRIM(name), 1, 3)) || '!' FROM S3Object WHERE CHAR_LENGTH(TRIM(name)) > 4",
     "SELECT upper(substring(trim(name), 1, 3)) || '!' FROM c WHERE length(trim(name)) > 4"),
    ("SELECT id FROM S3Object WHERE age > 70 AND score < 500 OR city = 'lima' AND id < '50'",
     "SELECT id FROM c WHERE (CAST(age AS INT) > 70 AND CAST(score AS DOUBLE) < 500) OR (city = 'lima' AND id < '50')"),
    ("SELECT s.id FROM S3Object AS s WHERE s.\"city\" = 'oslo'", "SELECT id FROM c WHERE city = 'oslo'"),
    ("SELECT id, CASE WHEN CAST(age AS INT) >= 65 THEN 'senior' WHEN CAST(age AS INT) < 30 THEN 'young' ELSE 'adult' END FROM S3Object",
     "SELECT id, CASE WHEN CAST(age AS INT) >= 65 THEN 'senior' WHEN CAST(age AS INT) < 30 THEN 'young' ELSE 'adult' END FROM c"),
    ("SELECT CASE city WHEN 'paris' THEN 1 WHEN 'oslo' THEN 2 END, city FROM S3Object",
     "SELECT CASE city WHEN 'paris' THEN 1 WHEN 'oslo' THEN 2 END, city FROM c"),
    ("SELECT SUM(CASE WHEN city = 'oslo' THEN 1 ELSE 0 END), COUNT(*) FROM S3Object",
     "SELECT sum(CASE WHEN city = 'oslo' THEN 1 ELSE 0 END), count(*) FROM c"),
]


@pytest.mark.parametrize("s3sql,duck", CSV_QUERIES, ids=[q[0][:60] for q in CSV_QUERIES])
def test_csv_query_matches_duckdb(env, s3sql, duck):
    data, stats, events = select(env, "people.csv", s3sql, CSV_IN)
    assert events[-1] == "End" and "Stats" in events
    assert_same(csv_rows(data), env["db"].execute(duck).fetchall(), s3sql)


JSON_QUERIES = [
    ("SELECT s.id, s.name FROM S3Object s WHERE s.age > 70", "SELECT id, name FROM j WHERE age > 70"),
    ("SELECT s.addr.city, s.addr.zip FROM S3Object s WHERE s.addr.zip < 12000", "SELECT addr.city, addr.zip FROM j WHERE addr.zip < 12000"),
    ("SELECT s.tags[0], s.tags[1] FROM S3Object s WHERE s.tags[0] = 'A_1'", "SELECT tags[1], tags[2] FROM j WHERE tags[1] = 'A_1'"),
    ("SELECT s.geo.pts[0], s.geo.tz.name FROM S3Object s WHERE s.geo.pts[1] = 3", "SELECT geo.pts[1], geo.tz.name FROM j WHERE geo.pts[2] = 3"),
    ("SELECT s.id FROM S3Object s WHERE s.email IS MISSING", "SELECT id FROM j WHERE email IS NULL"),
    ("SELECT s.id FROM S3Object s WHERE s.nick IS NULL AND s.nick IS NOT MISSING AND s.id < 40", "SELECT id FROM j WHERE id % 3 = 0 AND id < 40"),
    ("SELECT s.id FROM S3Object s WHERE s.nick IS NULL AND s.id < 40", "SELECT id FROM j WHERE nick IS NULL AND id < 40"),
    ("SELECT s.id FROM S3Object s WHERE s.email IS NOT NULL AND s.age < 25", "SELECT id FROM j WHERE email IS NOT NULL AND age < 25"),
    ("SELECT SUM(s.age), AVG(s.score), MIN(s.score), MAX(s.addr.zip), COUNT(s.email) FROM S3Object s",
     "SELECT sum(age), avg(score), min(score), max(addr.zip), count(email) FROM j"),
    ("SELECT s.score * 2, s.age + s.id FROM S3Object s WHERE s.city LIKE 's%'", "SELECT score * 2, age + id FROM j WHERE city LIKE 's%'"),
    ("SELECT UPPER(s.addr.city) AS c FROM S3Object s LIMIT 4", "SELECT upper(addr.city) FROM j LIMIT 4"),
    ("SELECT s.id FROM S3Object s WHERE s.age BETWEEN 40 AND 41 OR s.id IN (1, 2, 3)",
     "SELECT id FROM j WHERE age BETWEEN 40 AND 41 OR id IN (1, 2, 3)"),
]


@pytest.mark.parametrize("s3sql,duck", JSON_QUERIES, ids=[q[0][:60] for q in JSON_QUERIES])
def test_json_lines_query_matches_duckdb(env, s3sql, duck):
    data, _, _ = select(env, "people.jsonl", s3sql, JSONL_IN)
    assert_same(csv_rows(data), env["db"].execute(duck).fetchall(), s3sql)


def test_json_document_from_path(env):
    data, _, _ = select(env, "people.json", "SELECT p.name, p.addr.zip FROM S3Object[*].people[*] p WHERE p.age > 60",
                        {"JSON": {"Type": "DOCUMENT"}})
    assert_same(csv_rows(data), env["db"].execute("SELECT name, addr.zip FROM j WHERE age > 60").fetchall(), "document")


def test_json_output_whole_records(env):
    data, _, _ = select(env, "people.jsonl", "SELECT * FROM S3Object s WHERE s.id <= 20", JSONL_IN, {"JSON": {}})
    got = [json.loads(l) for l in data.decode().splitlines()]
    want = json_rows(make_rows())[:20]
    assert got == want


PARQUET_QUERIES = [
    ("SELECT * FROM S3Object", "SELECT * FROM p"),
    ("SELECT s.id, s.name FROM S3Object s WHERE s.age > 70", "SELECT id, name FROM p WHERE age > 70"),
    ("SELECT id, score FROM S3Object WHERE score BETWEEN 100 AND 120", "SELECT id, score FROM p WHERE score BETWEEN 100 AND 120"),
    ("SELECT COUNT(*), SUM(age), AVG(score), MIN(ts), MAX(name) FROM S3Object",
     "SELECT count(*), sum(age), avg(score), min(ts), max(name) FROM p"),
    ("SELECT id FROM S3Object WHERE email IS NULL", "SELECT id FROM p WHERE email IS NULL"),
    ("SELECT id, active FROM S3Object WHERE active = true AND city LIKE '%o%'", "SELECT id, active FROM p WHERE active AND city LIKE '%o%'"),
    ("SELECT EXTRACT(YEAR FROM ts), EXTRACT(HOUR FROM ts), TO_STRING(ts, 'yyyy-MM-dd HH:mm:ss') FROM S3Object",
     "SELECT year(ts), hour(ts), strftime(ts, '%Y-%m-%d %H:%M:%S') FROM p"),
    ("SELECT id FROM S3Object WHERE ts < TO_TIMESTAMP('2016-01-01T00:00:00Z')", "SELECT id FROM p WHERE ts < TIMESTAMP '2016-01-01'"),
    ("SELECT UPPER(city), CHAR_LENGTH(name) FROM S3Object WHERE id IN (5, 50, 150)", "SELECT upper(city), length(name) FROM p WHERE id IN (5, 50, 150)"),
    ("SELECT id * 10 + age FROM S3Object LIMIT 9", "SELECT id * 10 + age FROM p LIMIT 9"),
]


@pytest.mark.parametrize("s3sql,duck", PARQUET_QUERIES, ids=[q[0][:60] for q in PARQUET_QUERIES])
def test_parquet_query_matches_duckdb(env, s3sql, duck):
    data, stats, _ = select(env, "people.parquet", s3sql, PARQUET_IN)
    assert_same(csv_rows(data), env["db"].execute(duck).fetchall(), s3sql)


def test_parquet_reads_only_projected_columns(env):
    _, one, _ = select(env, "people.parquet", "SELECT s.id FROM S3Object s", PARQUET_IN)
    _, all_, _ = select(env, "people.parquet", "SELECT * FROM S3Object", PARQUET_IN)
    assert one["BytesScanned"] < all_["BytesScanned"] / 2, (one, all_)


def test_compressed_inputs(env):
    q = "SELECT id, name FROM S3Object WHERE age > 50"
    plain, _, _ = select(env, "people.csv", q, CSV_IN)
    gz, stats, _ = select(env, "people.csv.gz", q, {"CSV": {"FileHeaderInfo": "USE"}, "CompressionType": "GZIP"})
    assert gz == plain and plain
    assert stats["BytesScanned"] == len(env["files"]["people.csv.gz"])
    assert stats["BytesProcessed"] == len(env["files"]["people.csv"])
    jq = "SELECT s.id FROM S3Object s WHERE s.age > 50"
    jplain, _, _ = select(env, "people.jsonl", jq, JSONL_IN)
    jbz, _, _ = select(env, "people.jsonl.bz2", jq, {"JSON": {"Type": "LINES"}, "CompressionType": "BZIP2"})
    assert jbz == jplain and jplain


def test_output_options(env):
    out = {"CSV": {"FieldDelimiter": ";", "QuoteFields": "ALWAYS", "RecordDelimiter": "\r\n"}}
    data, _, _ = select(env, "people.csv", "SELECT id, note FROM S3Object LIMIT 20", CSV_IN, out)
    rows = list(csv.reader(io.StringIO(data.decode(), newline=""), delimiter=";", lineterminator="\r\n"))
    want = env["db"].execute("SELECT id, note FROM c LIMIT 20").fetchall()
    assert_same(rows, want, "output options")
    assert data.startswith(b'"1";"')
    jdata, _, _ = select(env, "people.csv", "SELECT id, city AS c FROM S3Object LIMIT 2", CSV_IN, {"JSON": {"RecordDelimiter": ","}})
    assert jdata.count(b",") >= 2 and json.loads("[" + jdata.decode().rstrip(",") + "]")[0].keys() == {"id", "c"}


def test_input_options(env):
    body = "# comment\n1;'a;b';x\n2;'it''s';y\n3;'multi\nline';z\n"
    env["s3"].put_object(Bucket=env["bucket"], Key="opts.csv", Body=body.encode())
    inp = {"CSV": {"FileHeaderInfo": "NONE", "FieldDelimiter": ";", "QuoteCharacter": "'", "Comments": "#",
                   "AllowQuotedRecordDelimiter": True}}
    data, _, _ = select(env, "opts.csv", "SELECT s._2, s._3 FROM S3Object s", inp, {"JSON": {}})
    got = [json.loads(l) for l in data.decode().splitlines()]
    assert got == [{"_2": "a;b", "_3": "x"}, {"_2": "it's", "_3": "y"}, {"_2": "multi\nline", "_3": "z"}]
    data, _, _ = select(env, "people.csv", "SELECT s._2 FROM S3Object s LIMIT 2", {"CSV": {"FileHeaderInfo": "IGNORE"}})
    assert_same(csv_rows(data), env["db"].execute("SELECT name FROM c LIMIT 2").fetchall(), "IGNORE")
    data, _, _ = select(env, "people.csv", "SELECT s._2 FROM S3Object s LIMIT 2", {"CSV": {"FileHeaderInfo": "NONE"}})
    assert csv_rows(data)[0] == ["name"]


@pytest.mark.parametrize("key,inp,sql,split", [
    ("people.csv", CSV_IN, "SELECT * FROM S3Object", 997),
    ("people.csv", CSV_IN, "SELECT id, city FROM S3Object WHERE age > 40", 4096),
    ("people.csv", {"CSV": {"FileHeaderInfo": "NONE"}}, "SELECT s._1 FROM S3Object s", 53),
    ("people.jsonl", JSONL_IN, "SELECT s.id, s.addr.zip FROM S3Object s", 1500),
    ("people.parquet", PARQUET_IN, "SELECT id, name FROM S3Object", 1024),
])
def test_scan_range_splits_add_up(env, key, inp, sql, split):
    whole, _, _ = select(env, key, sql, inp)
    size = len(env["files"][key])
    parts = []
    for start in range(0, size, split):
        data, _, _ = select(env, key, sql, inp, scan={"Start": start, "End": min(start + split, size) - 1})
        parts.append(data)
    assert b"".join(parts) == whole and whole
    if key.endswith(".csv") or key.endswith(".jsonl"):
        assert sum(1 for p in parts if p) > 1
    # End alone is the object's last End bytes.
    last, _, _ = select(env, key, sql, inp, scan={"End": split})
    assert whole.endswith(last)


@pytest.mark.parametrize("sql,code", [
    ("SELECT FROM S3Object", "ParseUnexpectedToken"),
    ("SELECT name FROM S3Object WHERE", "ParseExpectedExpression"),
    ("SELECT s.a.[1] FROM S3Object s", "ParseInvalidPathComponent"),
    ("SELECT s._0 FROM S3Object s", "InvalidColumnIndex"),
    ("SELECT name FROM S3Object WHERE name = 'open", "LexerInvalidLiteral"),
    ("SELECT name FROM S3Object WHERE name # 1", "LexerInvalidChar"),
    ("SELECT BOGUS(name) FROM S3Object", "UnsupportedFunction"),
    ("SELECT * FROM S3Object LIMIT x", "ParseExpectedNumber"),
])
def test_bad_sql_errors(env, sql, code):
    with pytest.raises((ClientError, EventStreamError)) as ei:
        select(env, "people.csv", sql, CSV_IN)
    assert ei.value.response["Error"]["Code"] == code, ei.value.response
    if code.startswith("Parse") or code.startswith("Lexer"):
        assert "line 1, column" in ei.value.response["Error"]["Message"]


def test_bad_input_error_events(env):
    s3, b = env["s3"], env["bucket"]
    s3.put_object(Bucket=b, Key="bad.csv", Body=b'a,b\n1,2\n3,"open\n')
    with pytest.raises(EventStreamError) as ei:
        select(env, "bad.csv", "SELECT * FROM S3Object", CSV_IN)
    assert ei.value.response["Error"]["Code"] == "CSVParsingError"
    s3.put_object(Bucket=b, Key="bad.jsonl", Body=b'{"a":1}\n{"a":\n')
    with pytest.raises(EventStreamError) as ei:
        select(env, "bad.jsonl", "SELECT * FROM S3Object", JSONL_IN)
    assert ei.value.response["Error"]["Code"] == "JSONParsingError"
    with pytest.raises((ClientError, EventStreamError)) as ei:
        select(env, "people.csv", "SELECT * FROM S3Object", {"CSV": {}, "CompressionType": "GZIP"})
    assert ei.value.response["Error"]["Code"] == "InvalidCompressionFormat"
    with pytest.raises((ClientError, EventStreamError)) as ei:
        select(env, "people.csv", "SELECT * FROM S3Object", PARQUET_IN)
    assert ei.value.response["Error"]["Code"] == "ParquetParsingError"
    with pytest.raises((ClientError, EventStreamError)) as ei:
        select(env, "people.csv", "SELECT s.nope FROM S3Object s", CSV_IN)
    assert ei.value.response["Error"]["Code"] == "MissingHeaders"
    with pytest.raises(ClientError) as ei:
        select(env, "people.csv.gz", "SELECT * FROM S3Object", {"CSV": {}, "CompressionType": "GZIP"}, scan={"Start": 0, "End": 10})
    assert ei.value.response["Error"]["Code"] == "UnsupportedScanRangeInput"
    with pytest.raises(ClientError) as ei:
        select(env, "missing.csv", "SELECT * FROM S3Object", CSV_IN)
    assert ei.value.response["Error"]["Code"] == "NoSuchKey"


def test_stats_and_progress(env):
    data, stats, events = select(env, "people.csv", "SELECT id FROM S3Object WHERE city = 'oslo'", CSV_IN, progress=True)
    size = len(env["files"]["people.csv"])
    assert stats == {"BytesScanned": size, "BytesProcessed": size, "BytesReturned": len(data)}
    assert events[-2:] == ["Stats", "End"]


def test_select_on_compressed_and_encrypted_object(env):
    server, s3, b = env["server"], env["s3"], env["bucket"]
    tenant = env["creds"]["tenant"]
    out = json.loads(server.ctl("policy", "add", f"FOR BUCKET {tenant}/{b} WHEN OBJECT_NAME=sealed/* DO SET compression WITH engine=zstd, SET encryption", "-o", "json"))
    try:
        s3.put_object(Bucket=b, Key="sealed/people.csv", Body=env["files"]["people.csv"])
        q = "SELECT id, name FROM S3Object WHERE city = 'kyoto'"
        plain, _, _ = select(env, "people.csv", q, CSV_IN)
        sealed, _, _ = select(env, "sealed/people.csv", q, CSV_IN)
        assert sealed == plain and plain
        split = []
        size = len(env["files"]["people.csv"])
        for start in range(0, size, 3000):
            d, _, _ = select(env, "sealed/people.csv", q, CSV_IN, scan={"Start": start, "End": min(start + 3000, size) - 1})
            split.append(d)
        assert b"".join(split) == plain
    finally:
        for p in out.get("policies", out if isinstance(out, list) else []):
            server.ctl("policy", "delete", p["id"])


def test_select_filter_on_plain_gets(env):
    """A policy sets the select filter on a bucket: plain GETs return only
    the chosen columns and rows (seeds/000 §9.4.1, tenant T2)."""
    server, s3 = env["server"], env["s3"]
    tenant = env["creds"]["tenant"]
    logs = "logs-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=logs)
    s3.put_object(Bucket=logs, Key="people.csv", Body=env["files"]["people.csv"])
    out = json.loads(server.ctl("policy", "add",
                                f"FOR BUCKET {tenant}/{logs} DO SET select WITH columns=\"id name\", where=\"s.city = 'oslo'\"",
                                "-o", "json"))
    ids = [p["id"] for p in out.get("policies", [])] if isinstance(out, dict) else [p["id"] for p in out]
    try:
        resp = s3.get_object(Bucket=logs, Key="people.csv")
        body = resp["Body"].read()
        assert_same(csv_rows(body), env["db"].execute("SELECT id, name FROM c WHERE city = 'oslo'").fetchall(), "select filter")
        assert resp["ResponseMetadata"]["HTTPHeaders"]["x-facet-select"].startswith("SELECT s.id, s.name")
        # Objects in other buckets are untouched.
        whole = s3.get_object(Bucket=env["bucket"], Key="people.csv")["Body"].read()
        assert whole == env["files"]["people.csv"]
    finally:
        for i in ids:
            server.ctl("policy", "delete", i)
    assert s3.get_object(Bucket=logs, Key="people.csv")["Body"].read() == env["files"]["people.csv"]


def test_select_on_multipart_sealed_object(env):
    """A multipart object whose parts were each compressed and encrypted
    is queried as one logical stream, ScanRange splits included."""
    server, s3, b = env["server"], env["s3"], env["bucket"]
    tenant = env["creds"]["tenant"]
    body = env["files"]["people.csv"]
    header, rows = body.split(b"\n", 1)
    big = header + b"\n" + rows * 560  # ~11 MiB: three 5 MiB parts
    path = env["dir"] / "big.csv"
    path.write_bytes(big)
    out = json.loads(server.ctl("policy", "add", f"FOR BUCKET {tenant}/{b} WHEN OBJECT_NAME=mp/* DO SET compression, SET encryption", "-o", "json"))
    ids = [p["id"] for p in out.get("policies", [])] if isinstance(out, dict) else [p["id"] for p in out]
    try:
        from boto3.s3.transfer import TransferConfig
        s3.upload_file(str(path), b, "mp/big.csv", Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
        q = "SELECT COUNT(*), SUM(CAST(age AS INT)) FROM S3Object WHERE city = 'lima'"
        data, stats, _ = select(env, "mp/big.csv", q, CSV_IN)
        want = env["db"].execute(f"SELECT count(*), sum(CAST(age AS INT)) FROM read_csv('{path}', header=true, all_varchar=true) WHERE city = 'lima'").fetchall()
        assert_same(csv_rows(data), want, q)
        assert stats["BytesProcessed"] == len(big)
        q2 = "SELECT id, name FROM S3Object WHERE age > 75"
        whole, _, _ = select(env, "mp/big.csv", q2, CSV_IN)
        parts = [select(env, "mp/big.csv", q2, CSV_IN, scan={"Start": s, "End": min(s + (3 << 20), len(big)) - 1})[0]
                 for s in range(0, len(big), 3 << 20)]
        assert b"".join(parts) == whole and whole
    finally:
        for i in ids:
            server.ctl("policy", "delete", i)
