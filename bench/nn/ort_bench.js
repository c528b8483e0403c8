// ONNX Runtime side of bench/nn: times one model with onnxruntime-node (CPU execution
// provider) the way `facefuse bench nn` times it -- same input values, warm-up, then
// the median and minimum of N timed runs -- and reports the process RSS growth from
// before the session was created to after the timed runs (ORT's peak memory proxy).
// Prints one JSON object. Usage:
//   node ort_bench.js MODEL [--threads N] [--runs N] [--warmup N]
// NODE_PATH (or a node_modules beside this file) must provide onnxruntime-node.
'use strict';
const ort = require('onnxruntime-node');
const fs = require('fs');

function rssBytes() {
  // VmRSS of this process; process.memoryUsage().rss is the same number, but reading
  // /proc also gives VmHWM, the high-water mark, which catches transient peaks.
  const s = fs.readFileSync('/proc/self/status', 'utf8');
  const get = (k) => Number((s.match(new RegExp(k + ':\\s+(\\d+) kB')) || [0, 0])[1]) * 1024;
  return { rss: get('VmRSS'), hwm: get('VmHWM') };
}

async function main() {
  const args = process.argv.slice(2);
  const model = args[0];
  const opt = (name, def) => {
    const i = args.indexOf('--' + name);
    return i >= 0 ? Number(args[i + 1]) : def;
  };
  const threads = opt('threads', 1), runs = opt('runs', 200), warmup = opt('warmup', 20);
  const before = rssBytes();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  });
  const feeds = {};
  const meta = session.inputMetadata || [];
  session.inputNames.forEach((name, k) => {
    const m = meta[k] || {};
    const dims = (m.shape || []).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    // the same fill as the facefuse bench: ((i * 2654435761) mod 2^32 mod 1000) / 1000
    for (let i = 0; i < n; i++) data[i] = Number((BigInt(i) * 2654435761n) % 4294967296n % 1000n) / 1000;
    feeds[name] = new ort.Tensor('float32', data, dims);
  });
  for (let i = 0; i < warmup; i++) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  const after = rssBytes();
  console.log(JSON.stringify({
    model, threads, runs,
    median_ms: ms[Math.floor(ms.length / 2)], min_ms: ms[0],
    rss_delta_bytes: after.hwm - before.rss,
  }));
}

main().catch((e) => { console.error('ort_bench: ' + e.message); process.exit(1); });
