// SPDX-License-Identifier: MIT
// Run SQL statements in DuckDB (an in-memory database) and print the
// rows of the last one, one JSON array per line, every value as text
// (BIGINTs as their decimal digits, nothing rounded through a double),
// null as null.  With --types, print each column's name and DuckDB
// type instead of the rows.
//
// With --all, print the rows of every statement, each statement's rows
// followed by a line '--'.
//
// With --time, print the milliseconds each statement took to stderr
// (for tests/bench/export; DuckDB's start-up not counted).
//
// Usage: node query.mjs [--time] [--types | --all] SQL...
// The package is looked for in $TK_NODE_MODULES, else in node_modules/
// beside this file (npm ci --prefix tests/cli/duckdb).
import path from 'node:path';
import url from 'node:url';

const modules = process.env.TK_NODE_MODULES ||
    path.join(path.dirname(url.fileURLToPath(import.meta.url)), 'node_modules');
const duckdb = await import(url.pathToFileURL(
    path.join(modules, '@duckdb/node-api/lib/index.js')).href);

let args = process.argv.slice(2);
const timed = args[0] === '--time';
if (timed)
  args = args.slice(1);
const types = args[0] === '--types', all = args[0] === '--all';
if (types || all)
  args = args.slice(1);
const instance = await duckdb.DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const text = (row) => JSON.stringify(row.map((v) => v === null ? null : String(v)));
let reader;
const out = [];
for (const sql of args) {
  const t0 = performance.now();
  reader = await conn.runAndReadAll(sql);
  if (timed)
    process.stderr.write(`${(performance.now() - t0).toFixed(1)}\n`);
  if (all) {
    for (const row of reader.getRows())
      out.push(text(row));
    out.push('--');
  }
}
if (types) {
  const names = reader.columnNames(), t = reader.columnTypes();
  for (let i = 0; i < names.length; i++)
    out.push(JSON.stringify([names[i], t[i].toString()]));
} else if (!all) {
  for (const row of reader.getRows())
    out.push(text(row));
}
process.stdout.write(out.length ? out.join('\n') + '\n' : '');
