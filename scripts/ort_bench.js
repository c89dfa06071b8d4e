// Times onnxruntime-node (CPU execution provider) on the benchmark models
// of a manifest (scripts/export_bench_models.py's models.json), one cell
// at a time on request, so that testing/benchcpu can time ORT and beamml
// on the same cell back to back, under the same load on the machine.
//
// Usage: node ort_bench.js MANIFEST TIME_MS OUTPUTS
//
// Prints {"ort_version"}, then reads requests, one JSON line each:
// {"model", "batch", "threads"}. For each it fills every input by the
// manifest's rule, runs a session with intraOpNumThreads = threads,
// interOpNumThreads 1 and graphOptimizationLevel 'all' (ORT's default)
// once to warm up, then times runs, at least 3 and more while they took
// less than TIME_MS in all, up to 10000 (testing/benchcpu's rule), and
// prints one JSON line: {"model", "batch", "threads", "ms" (the median),
// "runs", "output", "output_shape", "output_file"} or, when the model
// fails, {"model", "batch", "threads", "error"}. The warm-up run's first
// output (float32) is written to OUTPUTS/MODEL-bBATCH.f32 as raw
// little-endian float32, row-major, the first time the cell's model and
// batch size run, for testing/benchcpu's max |Δ| column. The session of
// the last (model, threads) is kept for the next request.
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require('onnxruntime-node');

// fill returns the manifest input spec's tensor at batch size batch; the
// rules are those of export_bench_models.py's docstring.
function fill(spec, batch) {
  const dims = spec.shape.map((d) => (d === -1 ? batch : d));
  const n = dims.reduce((a, b) => a * b, 1);
  if (spec.fill === 'sin') {
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = Math.sin(i) * 0.5 + 0.5;
    return new ort.Tensor('float32', data, dims);
  }
  const data = new BigInt64Array(n);
  const last = dims[dims.length - 1];
  for (let i = 0; i < n; i++) {
    switch (spec.fill) {
      case 'ids': data[i] = BigInt((i * 7919 + 13) % spec.vocab); break;
      case 'mask': data[i] = i % last >= last - Math.floor(last / 4) ? 0n : 1n; break;
      default: throw new Error(`input ${spec.name}: unknown fill ${JSON.stringify(spec.fill)}`);
    }
  }
  return new ort.Tensor('int64', data, dims);
}

function writeFloat32LE(file, data) {
  const buf = Buffer.alloc(data.length * 4);
  for (let i = 0; i < data.length; i++) buf.writeFloatLE(data[i], 4 * i);
  fs.writeFileSync(file, buf);
}

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
      const output = open.session.outputNames[0];
      const out = (await open.session.run(feeds))[output];
      Object.assign(cell, await timeRuns(open.session, feeds, Number(timeMs)), { output, output_shape: out.dims });
      if (out.type === 'float32') {
        cell.output_file = path.join(outputs, `${name}-b${batch}.f32`);
        if (!written.has(cell.output_file)) {
          writeFloat32LE(cell.output_file, out.data);
          written.add(cell.output_file);
        }
      }
    } catch (e) {
      cell.error = String(e.message || e);
    }
    console.log(JSON.stringify(cell));
  }
  if (open) await open.session.release();
}
main().catch((e) => { console.error(e); process.exit(1); });
