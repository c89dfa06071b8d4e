// Profiles onnxruntime-node (CPU execution provider) on one model of a
// bench manifest: its time per operator and its slowest nodes, from ORT's
// own profiler, to set beside testing/benchcpu's --nodes for beamml.
//
// Usage: NODE_PATH=out/bench-cpu/node_modules \
//	node scripts/ort_profile.js MANIFEST MODEL BATCH THREADS [RUNS [TOP]]
//
// The session is made as ort_bench.js makes it (graph optimisations all,
// so ORT's nodes are its fused ones, named after the first node they
// took), warmed up with 3 runs, then profiled over RUNS runs (default 20);
// times are per run, from the profile's node events ("kernel_time").
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const { fillData } = require('./bench_fill.js');

async function main() {
  const [manifestPath, name, batch, threads, runs = '20', top = '25'] = process.argv.slice(2);
  const model = JSON.parse(fs.readFileSync(manifestPath, 'utf8')).models.find((m) => m.name === name);
  if (!model) throw new Error(`no model ${JSON.stringify(name)} in ${manifestPath}`);
  const feeds = {};
  for (const spec of model.inputs) {
    const { type, data, dims } = fillData(spec, Number(batch));
    feeds[spec.name] = new ort.Tensor(type, data, dims);
  }
  const file = path.join(path.dirname(manifestPath), model.file);
  const opts = { intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: 'all', executionProviders: ['cpu'] };
  // Warm up without the profiler, then profile a second session: the
  // profiler starts with the session.
  const warm = await ort.InferenceSession.create(file, opts);
  for (let i = 0; i < 3; i++) await warm.run(feeds);
  await warm.release();
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-')), 'p');
  const session = await ort.InferenceSession.create(file, { ...opts, enableProfiling: true, profileFilePrefix: prefix });
  for (let i = 0; i < 3; i++) await session.run(feeds);
  const n = Number(runs);
  for (let i = 0; i < n; i++) await session.run(feeds);
  session.endProfiling();
  await session.release();
  const dir = path.dirname(prefix);
  const json = fs.readdirSync(dir).find((f) => f.endsWith('.json'));
  const events = JSON.parse(fs.readFileSync(path.join(dir, json), 'utf8'));
  // Only the last n runs' node events: each run has the same nodes.
  const nodes = events.filter((e) => e.cat === 'Node' && e.name.endsWith('_kernel_time'));
  const perRun = nodes.length / (n + 3);
  const timed = nodes.slice(nodes.length - perRun * n);
  const byOp = new Map();
  const byNode = new Map();
  let total = 0;
  for (const e of timed) {
    const op = e.args.op_name;
    const node = e.name.replace(/_kernel_time$/, '');
    byOp.set(op, (byOp.get(op) || { us: 0, nodes: new Set() }));
    byOp.get(op).us += e.dur;
    byOp.get(op).nodes.add(node);
    byNode.set(node, { op, us: (byNode.get(node)?.us || 0) + e.dur });
    total += e.dur;
  }
  console.log(`${name} batch ${batch}, ${threads} threads (ORT ${ort.env.versions.node}): ${(total / n / 1e3).toFixed(3)} ms per run in nodes`);
  for (const [op, v] of [...byOp].sort((a, b) => b[1].us - a[1].us)) {
    console.log(`  ${op.padEnd(24)} ${String(v.nodes.size).padStart(4)} nodes ${(v.us / n / 1e3).toFixed(3).padStart(8)} ms ${(100 * v.us / total).toFixed(1).padStart(5)}%`);
  }
  for (const [node, v] of [...byNode].sort((a, b) => b[1].us - a[1].us).slice(0, Number(top))) {
    console.log(`  node ${node.padEnd(40)} ${v.op.padEnd(20)} ${(v.us / n / 1e3).toFixed(3).padStart(8)} ms`);
  }
  fs.rmSync(dir, { recursive: true });
}
main().catch((e) => { console.error(e); process.exit(1); });
