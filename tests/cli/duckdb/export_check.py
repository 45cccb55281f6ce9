#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of trace-export's output as DuckDB reads it (query.mjs), against
figures computed here from other sources, never from trace-export:

  export_check.py schema MAN5 RUNDIR
      every table of tracekit-tables(5) is in RUNDIR with the columns and
      DuckDB types the man page gives, in order, and no other table
  export_check.py events DUMP.jsonl RUNDIR
      row counts and per-column sums of the event tables equal those of
      the events trace-dump --json listed
  export_check.py stats STATS.json RUNDIR
  export_check.py all MAN5 DUMP.jsonl STATS.json RUNDIR
      the three, in one run of DuckDB
      per name: count, total, min, max, mean, std and the percentiles
      that SQL computes over the rows (quantile_cont: rank q(n-1), as
      trace-stats interpolates) equal trace-stats --json's figures, and
      so does the summaries table
Prints what differs and exits 1."""
import collections
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def query_all(sqls):
    """The rows of each statement, in one run of DuckDB."""
    out = subprocess.run(['node', os.path.join(HERE, 'query.mjs'), '--all']
                         + sqls, check=True, capture_output=True,
                         text=True).stdout
    sets, cur = [], []
    for line in out.splitlines():
        if line == '--':
            sets.append(cur)
            cur = []
        else:
            cur.append(json.loads(line))
    return sets


def query(sql):
    return query_all([sql])[0]


def pq(rundir, table):
    path = os.path.join(rundir, table + '.parquet').replace("'", "''")
    return f"read_parquet('{path}', hive_partitioning = false)"


def man_tables(man):
    tables, cur = collections.OrderedDict(), None
    for line in open(man, encoding='utf-8'):
        m = re.match(r'\.Ss (\w+)$', line)
        if m:
            cur = m.group(1)
            continue
        m = re.match(r'\.It Li (\w+) Ta Sy (\w+)', line)
        if m and cur:
            tables.setdefault(cur, []).append([m.group(1), m.group(2)])
    tables.pop('Conventions', None)
    tables.pop('Parquet', None)
    return tables


def check_schema(man, rundir):
    want = man_tables(man)
    have = sorted(f[:-len('.parquet')] for f in os.listdir(rundir)
                  if f.endswith('.parquet'))
    bad = []
    if have != sorted(want):
        bad.append(f'tables {have}, the man page has {sorted(want)}')
    sql = ' UNION ALL '.join(
        f"SELECT '{t}', column_name, column_type FROM "
        f"(DESCRIBE SELECT * FROM {pq(rundir, t)})" for t in want)
    got = collections.OrderedDict()
    for t, c, ty in query(sql):
        got.setdefault(t, []).append([c, ty])
    for t, cols in want.items():
        if got.get(t) != cols:
            bad.append(f'{t}: {got.get(t)}, the man page says {cols}')
    return bad, f'{len(want)} tables, {sum(map(len, want.values()))} columns'


# Per table: the kinds of trace-dump events it holds, and per-column
# sums: SQL expression over the table, Python function of a dump event.
EVENTS = {
    'kernels': (('kernel',), [
        ('sum(duration)', lambda e: e['dur']),
        ('sum(start % 1000003)', lambda e: e['ts'] % 1000003),
        ('sum(correlation_id)', lambda e: e.get('correlation', 0)),
        ('sum(grid_x * 7 + grid_y * 3 + grid_z + block_x * 5 + block_y)',
         lambda e: e['grid'][0] * 7 + e['grid'][1] * 3 + e['grid'][2] +
         e['block'][0] * 5 + e['block'][1]),
        ('sum(registers_per_thread + dynamic_shared_memory)',
         lambda e: e.get('registers', 0) + e.get('shared_dynamic', 0)),
        ('sum(stream_id)', lambda e: e.get('stream', 0)),
        ('sum(length(name))', lambda e: len(e['name'])),
        # trace-dump leaves out negative ids (Kineto writes some)
        ('sum(greatest(coalesce(pid, 0), 0))', lambda e: e.get('pid', 0)),
    ]),
    'memops': (('memcpy', 'memset'), [
        ('sum(duration)', lambda e: e['dur']),
        ('sum(bytes)', lambda e: e.get('bytes', 0)),
        ("sum((copy_kind = 'HtoD')::int)", lambda e: e.get('copy_kind') == 'HtoD'),
        ("sum((kind = 'memset')::int)", lambda e: e['kind'] == 'memset'),
        ("sum(async) FILTER (kind = 'memcpy')",
         lambda e: e['kind'] == 'memcpy' and bool(e.get('async'))),
    ]),
    'api': (('api',), [
        ('sum(duration)', lambda e: e['dur']),
        ('sum(correlation_id)', lambda e: e.get('correlation', 0)),
        ('sum(greatest(coalesce(tid, 0), 0))', lambda e: e.get('tid', 0)),
        ('sum(cbid)', lambda e: e.get('cbid', 0)),
        ('sum(length(name))', lambda e: len(e['name'])),
    ]),
    'ranges': (('range', 'async_range', 'mark'), [
        ('sum(duration)', lambda e: e['dur']),
        ('sum(start % 1000003)', lambda e: e['ts'] % 1000003),
        ('sum(length(name))', lambda e: len(e['name'])),
        ("sum((kind = 'mark')::int)", lambda e: e['kind'] == 'mark'),
        ('sum(coalesce(depth, 0) * 10 + (depth IS NULL)::int)',
         lambda e: e['_depth'] * 10 if e['kind'] == 'range' else 1),
    ]),
    'memory': (('memory',), [
        ('sum(bytes)', lambda e: e.get('bytes', 0)),
        ("sum((op = 'free')::int)", lambda e: e.get('op') == 'free'),
    ]),
    'counters': (('counter',), [
        ('sum(start % 1000003)', lambda e: e['ts'] % 1000003),
        ('round(sum(value))', lambda e: e.get('value', 0.0)),
    ]),
}


def add_depths(events):
    """A push/pop range's depth: the ranges of its track (thread, or GPU
    stream for annotations) still open when it begins, in the order the
    trace lists them."""
    open_ends = collections.defaultdict(list)
    for e in events:
        if e['kind'] != 'range':
            continue
        ends = open_ends[(e.get('pid'), e.get('tid'), e.get('device'),
                          e.get('stream'))]
        while ends and ends[-1] <= e['ts']:
            ends.pop()
        e['_depth'] = len(ends)
        ends.append(e['ts'] + e['dur'])


def check_events(dump, rundir):
    events = [json.loads(l) for l in open(dump, encoding='utf-8')]
    add_depths(events)
    bad, rows = [], 0
    results = query_all([
        f"SELECT count(*), {', '.join(s for s, _ in sums)} FROM {pq(rundir, t)}"
        for t, (_, sums) in EVENTS.items()])
    for (table, (kinds, sums)), res in zip(EVENTS.items(), results):
        mine = [e for e in events if e['kind'] in kinds]
        exprs = ['count(*)'] + [s for s, _ in sums]
        got = res[0]
        want = [len(mine)] + [sum(f(e) for e in mine) for _, f in sums]
        for x, g, w in zip(exprs, got, want):
            if x == 'round(sum(value))':
                ok = g is None and w == 0 or abs(float(g or 0) - w) <= 1
            else:
                ok = int(g or 0) == int(w)
            if not ok:
                bad.append(f'{table}: {x} = {g}, the events give {w}')
        rows += len(mine)
    return bad, f'{rows} event rows'


def close(x, y):
    """trace-stats' JSON rounds to whole ns."""
    return abs(float(x) - float(y)) <= 0.5 + 1e-9 * abs(float(y))


FIG = [('count', 'count(*)', 'count'), ('total_ns', 'sum(duration)', 'total'),
       ('min_ns', 'min(duration)', 'min'), ('max_ns', 'max(duration)', 'max'),
       ('mean_ns', 'avg(duration)', 'mean'),
       ('std_ns', 'coalesce(stddev_samp(duration), 0)', 'std'),
       ('median_ns', 'quantile_cont(duration, 0.5)', 'p50'),
       ('p95_ns', 'quantile_cont(duration, 0.95)', 'p95'),
       ('p99_ns', 'quantile_cont(duration, 0.99)', 'p99')]


def check_stats(stats, rundir):
    js = json.load(open(stats, encoding='utf-8'))
    bad, n = [], 0
    plans = {'kernels': ("'kernel'", "''", "name", pq(rundir, 'kernels'), "true"),
             'api': ("'api'", "''", "name", pq(rundir, 'api'), "true"),
             'ranges': ("kind", "domain", "name", pq(rundir, 'ranges'),
                        "kind <> 'mark'"),
             'memops': None}  # named by kinds: the summaries alone
    sqls = []
    for table, plan in plans.items():
        if plan:
            kind, dom, name, src, where = plan
            cols = ', '.join(f for _, f, _ in FIG)
            sqls.append(f"SELECT {kind}, {dom}, {name}, {cols} FROM {src} "
                        f"WHERE {where} GROUP BY ALL")
        sqls.append(f"SELECT kind, domain, name, "
                    f"{', '.join(s for _, _, s in FIG)} FROM "
                    f"{pq(rundir, 'summaries')} WHERE \"table\" = '{table}'")
    results = iter(query_all(sqls))
    for table, plan in plans.items():
        sqlrows = None
        if plan:
            sqlrows = {(r[0], r[1], r[2]): r[3:] for r in next(results)}
        summ = {(r[0], r[1], r[2]): r[3:] for r in next(results)}
        groups = js.get(table, [])
        if len(groups) != len(summ) or (sqlrows is not None and
                                        len(groups) != len(sqlrows)):
            bad.append(f'{table}: trace-stats has {len(groups)} groups, SQL '
                       f'{len(sqlrows or [])}, summaries {len(summ)}')
        views = [('summaries', summ)] + ([('SQL', sqlrows)] if plan else [])
        for g in groups:
            key = (g['kind'], g.get('domain', ''), g['name'])
            for label, rows in views:
                row = rows.get(key)
                if row is None:
                    bad.append(f'{table}: {key} not in {label}')
                    continue
                for (jk, _, _), v in zip(FIG, row):
                    if not close(v, g[jk]):
                        bad.append(f'{table} {key[2][:60]}: {label} {jk} {v}, '
                                   f'trace-stats {g[jk]}')
            n += 1
    return bad, f'{n} groups'


def main():
    global query_all
    what = sys.argv[1]
    if what == 'all':
        man, dump, stats, rundir = sys.argv[2:6]
        checks = [(check_schema, man), (check_events, dump),
                  (check_stats, stats)]
    else:
        checks = [({'schema': check_schema, 'events': check_events,
                    'stats': check_stats}[what], sys.argv[2])]
        rundir = sys.argv[3]
    # a first pass collects every statement, one DuckDB run answers all,
    # a second pass judges
    wanted, real = [], query_all
    query_all = lambda sqls: (wanted.extend(sqls), [[] for _ in sqls])[1]
    for check, arg in checks:
        try:
            check(arg, rundir)
        except (IndexError, KeyError, TypeError, StopIteration):
            pass
    answers = iter(real(wanted)) if wanted else iter([])
    query_all = lambda sqls: [next(answers) for _ in sqls]
    bad, summary = [], []
    for check, arg in checks:
        b, s = check(arg, rundir)
        bad += b
        summary.append(s)
    summary = ', '.join(summary)
    for line in bad[:20]:
        print(line)
    if bad:
        sys.exit(1)
    print(summary)


main()
