// Times onnxruntime-node (CPU execution provider) on the benchmark models
// of a manifest (models.json, written by scripts/export_bench_models.py and
// scripts/export_bench_tabular.py), one cell at a time on request, so that
// testing/benchcpu can time ORT and beamml on the same cell back to back,
// under the same load on the machine.
//
// Usage: node ort_bench.js MANIFEST TIME_MS OUTPUTS
//
// Prints {"ort_version"}, then reads requests, one JSON line each:
// {"model", "batch", "threads"}. For each it fills every input by the
// manifest's rule (bench_fill.js), runs a session with intraOpNumThreads =
// threads, interOpNumThreads 1 and graphOptimizationLevel 'all' (ORT's
// default) once to warm up, then times runs, at least 3 and more while
// they took less than TIME_MS in all, up to 10000 (testing/benchcpu's
// rule), and prints one JSON line: {"model", "batch", "threads", "ms" (the
// median), "runs", "outputs"} or, when the model fails, {"model", "batch",
// "threads", "error"}. "outputs" lists the warm-up run's outputs in the
// session's order, each {"name", "type", "shape", "file"}: a float32 or
// int64 output is written to OUTPUTS/MODEL-bBATCH-K.f32 or .i64 (K its
// index) as raw little-endian values, row-major, the first time the cell's
// model and batch size run, for testing/benchcpu's comparison of outputs;
// an output of another type has no file. The session of the last (model,
// threads) is kept for the next request.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require('onnxruntime-node');
const { fillData } = require('./bench_fill.js');

// fill returns the manifest input spec's tensor at batch size batch.
function fill(spec, batch) {
  const { type, data, dims } = fillData(spec, batch);
  return new ort.Tensor(type, data, dims);
}

// writeRaw writes a Float32Array or a BigInt64Array as raw little-endian
// values.
function writeRaw(file, data) {
  const buf = Buffer.alloc(data.length * data.BYTES_PER_ELEMENT);
  for (let i = 0; i < data.length; i++) {
    if (data instanceof Float32Array) buf.writeFloatLE(data[i], 4 * i);
    else buf.writeBigInt64LE(data[i], 8 * i);
  }
  fs.writeFileSync(file, buf);
}

const extensions = { float32: 'f32', int64: 'i64' };

async function timeRuns(session, feeds, timeMs) {
  const times = [];
  const start = process.hrtime.bigint();
  while (times.length < 3 || (Number(process.hrtime.bigint() - start) / 1e6 < timeMs && times.length < 10000)) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)], runs: times.length };
}

async function main() {
  const [manifestPath, timeMs, outputs] = process.argv.slice(2);
  const dir = path.dirname(manifestPath);
  const models = new Map(JSON.parse(fs.readFileSync(manifestPath, 'utf8')).models.map((m) => [m.name, m]));
  fs.mkdirSync(outputs, { recursive: true });
  const written = new Set();
  let open = null; // { key, session }: the session of the last (model, threads)
  console.log(JSON.stringify({ ort_version: ort.env.versions.node }));
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const { model: name, batch, threads } = JSON.parse(line);
    const cell = { model: name, batch, threads };
    try {
      const model = models.get(name);
      if (!model) throw new Error(`no model ${JSON.stringify(name)} in ${manifestPath}`);
      const key = `${name}/${threads}`;
      if (!open || open.key !== key) {
        if (open) await open.session.release();
        open = null;
        const session = await ort.InferenceSession.create(path.join(dir, model.file), {
          intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionProviders: ['cpu'],
        });
        open = { key, session };
      }
      const feeds = {};
      for (const spec of model.inputs) feeds[spec.name] = fill(spec, batch);
      const results = await open.session.run(feeds);
      const described = open.session.outputNames.map((output, k) => {
        const out = results[output];
        const d = { name: output, type: out.type, shape: out.dims };
        if (extensions[out.type]) {
          d.file = path.join(outputs, `${name}-b${batch}-${k}.${extensions[out.type]}`);
          if (!written.has(d.file)) {
            writeRaw(d.file, out.data);
            written.add(d.file);
          }
        }
        return d;
      });
      Object.assign(cell, await timeRuns(open.session, feeds, Number(timeMs)), { outputs: described });
    } catch (e) {
      cell.error = String(e.message || e);
    }
    console.log(JSON.stringify(cell));
  }
  if (open) await open.session.release();
}
main().catch((e) => { console.error(e); process.exit(1); });
