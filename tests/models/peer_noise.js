// How far ONNX Runtime disagrees with itself, and facefuse with it, under several
// choices of the relative-error floor -- the study behind FLOOR_FRAC / FLOOR_ABS in
// tests/models/test_models.c (docs/EVAL.md, "Model outputs vs ONNX Runtime and
// TensorFlow.js"). Not a test: it prints a table.
//
//   FFU_GOLDEN_KEEP=/tmp/gk build/tests/models/test_models_golden   # keeps every
//       model's input, the peer's outputs and facefuse's outputs under /tmp/gk
//   NODE_PATH=~/.cache/facefuse/npm-peers/node_modules node tests/models/peer_noise.js /tmp/gk
//
// For every ONNX model it reruns ORT on the kept input with graph optimisations
// disabled and compares with the kept ORT outputs (optimisations "all"); facefuse's
// kept ref/cpu outputs are compared with the peer's. Per floor choice, the worst
// max-relative error over all outputs, with the output that gave it. Then one row per
// output: the max relative error with the strict floor 1e-3 * max|peer| (no absolute
// part), and the smallest floor fraction f at which max rel <= 1e-4 would hold
// (floor = f * max|peer|), for ORT against itself, facefuse ref and facefuse cpu.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const FLOORS = [ // [fraction of the output's max |value|, absolute]
  [1e-3, 0], [1e-2, 0], [1e-1, 0], [1, 0], [1e-3, 1e-2], [1e-2, 1e-2], [1e-1, 1e-2],
];

function readF32(p) {
  const b = fs.readFileSync(p);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}
function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * Math.pow(2, -24);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * Math.pow(2, e - 15);
}
function maxRel(a, b) {
  let mx = 0;
  for (const v of b) mx = Math.max(mx, Math.abs(v));
  return FLOORS.map(([frac, abs]) => {
    const floor = Math.max(frac * mx, abs, 1e-30);
    let r = 0;
    for (let i = 0; i < b.length; i++) r = Math.max(r, Math.abs(a[i] - b[i]) / Math.max(Math.abs(b[i]), floor));
    return r;
  });
}

const TOL = 1e-4;
const STRICT = 1e-3;
// max_i |a_i - b_i| / max(|b_i|, STRICT * max|b|), and the smallest f with
// max_i |a_i - b_i| / max(|b_i|, f * max|b|) <= TOL
function strictStats(a, b) {
  let mx = 0;
  for (const v of b) mx = Math.max(mx, Math.abs(v));
  const floor = Math.max(STRICT * mx, 1e-30);
  let rel = 0, need = 0;
  for (let i = 0; i < b.length; i++) {
    const d = Math.abs(a[i] - b[i]), y = Math.abs(b[i]);
    if (!(d === d)) return [Infinity, Infinity];
    rel = Math.max(rel, d / Math.max(y, floor));
    if (d / TOL > y) need = Math.max(need, d / TOL);
  }
  return [rel, mx > 0 ? need / mx : need > 0 ? Infinity : 0];
}

async function main() {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: node peer_noise.js KEEPDIR');
  const worst = {};
  const perOut = {}; // "model\toutput" -> {max, ort, ref, cpu: [strict rel, floor fraction]}
  const row = (m, name, b) => {
    const k = `${m}\t${name}`;
    if (!perOut[k]) {
      let mx = 0;
      for (const v of b) mx = Math.max(mx, Math.abs(v));
      perOut[k] = { max: mx };
    }
    return perOut[k];
  };
  const note = (key, what, rels) => {
    worst[key] = worst[key] || FLOORS.map(() => [0, '']);
    rels.forEach((r, i) => { if (r > worst[key][i][0]) worst[key][i] = [r, what]; });
  };
  for (const m of fs.readdirSync(dir).sort()) {
    const d = path.join(dir, m);
    if (!fs.existsSync(path.join(d, 'run.tsv')) || !fs.existsSync(path.join(d, 'facefuse.tsv'))) continue;
    const [peer, model, spec] = fs.readFileSync(path.join(d, 'run.tsv'), 'utf8').trim().split('\t');
    const outs = {};
    for (const l of fs.readFileSync(path.join(d, 'out', 'outputs.tsv'), 'utf8').trim().split('\n')) {
      const [name, , , file] = l.split('\t');
      outs[name] = readF32(path.join(d, 'out', file));
    }
    for (const l of fs.readFileSync(path.join(d, 'facefuse.tsv'), 'utf8').trim().split('\n')) {
      const [name, file, peerName] = l.split('\t');
      const a = readF32(path.join(d, file));
      note(`facefuse ${file.slice(0, 3)} vs ${peer}`, `${m}:${name}`, maxRel(a, outs[peerName]));
      row(m, name, outs[peerName])[file.slice(0, 3)] = strictStats(a, outs[peerName]);
    }
    if (peer !== 'ort') continue;
    const eq = spec.indexOf('=');
    const [dtype, dims] = spec.slice(eq + 1).split(':');
    const buf = fs.readFileSync(path.join(d, 'input.bin'));
    const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
    const s = await ort.InferenceSession.create(model, {
      graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, logSeverityLevel: 3,
    });
    const x = new ort.Tensor(dtype === 'f16' ? 'float16' : 'float32',
      dtype === 'f16' ? new Uint16Array(ab) : new Float32Array(ab), dims.split('x').map(Number));
    const r = await s.run({ [spec.slice(0, eq)]: x });
    for (const name of Object.keys(outs)) {
      let a = r[name].data;
      if (a instanceof Uint16Array) a = Float32Array.from(a, halfToFloat);
      note('ORT disabled vs ORT all', `${m}:${name}`, maxRel(a, outs[name]));
      row(m, name, outs[name]).ort = strictStats(a, outs[name]);
    }
  }
  const head = FLOORS.map(([f, a]) => (a ? `max(${f}*max,${a})` : `${f}*max`));
  console.log('| comparison | ' + head.join(' | ') + ' |');
  console.log('| --- |' + head.map(() => ' ---: |').join(''));
  for (const [k, v] of Object.entries(worst))
    console.log(`| ${k} | ` + v.map(([r]) => r.toExponential(1)).join(' | ') + ' |');
  console.log('\nworst output per column:');
  for (const [k, v] of Object.entries(worst)) console.log(`  ${k}: ` + v.map(([, w]) => w).join(', '));
  const e = (x) => (x === undefined ? '-' : x[0] === 0 ? '0' : x[0].toExponential(1));
  const f = (x) => (x === undefined ? '-' : x[1] === 0 ? '0' : x[1].toExponential(1));
  console.log(`\nper output: max rel with floor ${STRICT} x max|peer|; f = smallest floor fraction ` +
    `of max|peer| that passes ${TOL}`);
  console.log('| model | output | max abs peer | ORT self rel | ref rel | cpu rel | ORT self f | ref f | cpu f |');
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [k, v] of Object.entries(perOut)) {
    const [m, name] = k.split('\t');
    console.log(`| ${m} | ${name} | ${v.max.toPrecision(3)} | ${e(v.ort)} | ${e(v.ref)} | ${e(v.cpu)} | ` +
      `${f(v.ort)} | ${f(v.ref)} | ${f(v.cpu)} |`);
  }
}

main().catch((e) => { console.error(String((e && e.stack) || e)); process.exit(1); });
