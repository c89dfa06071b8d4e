// Times onnxruntime-node (CPU execution provider) on the benchmark models
// of a manifest (scripts/export_bench_models.py's models.json), filling
// every input by the manifest's rule. For each model, thread count T (a
// session with intraOpNumThreads T, interOpNumThreads 1 and
// graphOptimizationLevel 'all', ORT's default) and batch size: one warm-up
// run, then timed runs, at least 3 and more while they took less than
// TIME_MS in all, up to 10000 (testing/benchcpu's rule); it reports their
// median.
//
// Prints JSON lines: first {"ort_version"}, then one per (model, batch,
// threads): {"model", "batch", "threads", "ms", "runs", "output",
// "output_shape", "output_file"} or, when the model fails,
// {"model", "batch", "threads", "error"}. The warm-up run's first output
// (float32) is written, at the first thread count, to
// OUTPUTS/MODEL-bBATCH.f32 as raw little-endian float32, row-major, for
// testing/benchcpu's max |Δ| column.
//
// Usage: node ort_bench.js MANIFEST THREADS BATCHES MODELS TIME_MS OUTPUTS
// (THREADS, BATCHES and MODELS are comma-separated lists).
const fs = require('fs');
const path = require('path');
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

async function time(session, feeds, timeMs) {
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

// bench prints the cells of one model at one thread count; first: write the
// outputs.
async function bench(dir, model, threads, batches, first, timeMs, outputs) {
  const session = await ort.InferenceSession.create(path.join(dir, model.file), {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionProviders: ['cpu'],
  });
  for (const b of batches) {
    const cell = { model: model.name, batch: b, threads };
    try {
      const feeds = {};
      for (const spec of model.inputs) feeds[spec.name] = fill(spec, b);
      const name = session.outputNames[0];
      const out = (await session.run(feeds))[name];
      Object.assign(cell, await time(session, feeds, timeMs), { output: name, output_shape: out.dims });
      if (out.type === 'float32') {
        cell.output_file = path.join(outputs, `${model.name}-b${b}.f32`);
        if (first) writeFloat32LE(cell.output_file, out.data);
      }
    } catch (e) {
      cell.error = String(e.message || e);
    }
    console.log(JSON.stringify(cell));
  }
  await session.release();
}

async function main() {
  const [manifestPath, threadList, batchList, modelList, timeMs, outputs] = process.argv.slice(2);
  const dir = path.dirname(manifestPath);
  const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
  const wanted = modelList.split(',');
  const batches = batchList.split(',').map(Number);
  fs.mkdirSync(outputs, { recursive: true });
  console.log(JSON.stringify({ ort_version: ort.env.versions.node }));
  for (const model of manifest.models.filter((m) => wanted.includes(m.name))) {
    let first = true;
    for (const threads of threadList.split(',').map(Number)) {
      try {
        await bench(dir, model, threads, batches, first, Number(timeMs), outputs);
      } catch (e) {
        for (const batch of batches) {
          console.log(JSON.stringify({ model: model.name, batch, threads, error: String(e.message || e) }));
        }
      }
      first = false;
    }
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
