// SPDX-License-Identifier: MIT
// Load a Chrome Trace Event JSON file (plain or gzip) into the trace
// engine of Chrome DevTools' Performance panel and print, as JSON, what
// it understood: its processes and threads with their names, the
// complete events it read per thread, and how many of them it could put
// into its per-thread call tree.  DevTools drops an event that overlaps
// another on its thread without nesting, so the two counts differ then.
//
// Usage: node devtools-check.mjs TRACE.json[.gz]
// The package is looked for in $TK_NODE_MODULES, else in node_modules/
// beside this file (npm ci --prefix tests/cli/chrome-parser).
import fs from 'node:fs';
import path from 'node:path';
import url from 'node:url';
import zlib from 'node:zlib';

const modules = process.env.TK_NODE_MODULES ||
    path.join(path.dirname(url.fileURLToPath(import.meta.url)), 'node_modules');
const Trace = await import(url.pathToFileURL(
    path.join(modules, '@paulirish/trace_engine/models/trace/trace.js')).href);

// The engine runs in browsers; this is all it needs from one in node.
globalThis.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) {
    Object.assign(this, {x, y, width, height});
  }
};

const file = process.argv[2];
let bytes = fs.readFileSync(file);
if (bytes[0] === 0x1f && bytes[1] === 0x8b)
  bytes = zlib.gunzipSync(bytes);
const json = JSON.parse(bytes.toString('utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(json.traceEvents);
const data = model.parsedTrace().data;

const threads = [];
for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const entries = thread.entries ?? [];
    const inTree = entries.filter(e => data.Renderer.entryToNode.has(e)).length;
    threads.push({pid, tid, name: thread.name ?? null, entries: entries.length,
                  in_tree: inTree,
                  depth: thread.tree ? thread.tree.maxDepth : 0});
  }
}
const processes = {};
for (const [pid, name] of data.Meta.processNames ?? new Map())
  processes[pid] = name?.args?.name ?? null;
console.log(JSON.stringify({threads, processes}));
