// Starts the real `strata serve` binary on a free loopback port and stops it.
// Environment (set by ctest): STRATA_BIN, STRATA_E2E_MODEL, STRATA_NODE_MODULES.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const path = require('node:path');

const BIN = process.env.STRATA_BIN;
const MODEL = process.env.STRATA_E2E_MODEL;
const NODE_MODULES = process.env.STRATA_NODE_MODULES ||
  path.join(__dirname, '..', '..', 'tools', 'openai-e2e', 'node_modules');

function requireOpenAI() {
  try {
    return require(path.join(NODE_MODULES, 'openai'));
  } catch (e) {
    throw new Error(`npm package openai not found under ${NODE_MODULES}; ` +
      'run scripts/install-deps.sh (npm ci in tools/openai-e2e)');
  }
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

// Resolves { baseURL, port, proc, log(), stop() } once /health answers 200.
async function startServer(extraArgs = [], env = {}) {
  if (!BIN || !MODEL) throw new Error('STRATA_BIN and STRATA_E2E_MODEL must be set');
  const args = ['serve', MODEL, '--host', '127.0.0.1', '--port', '0',
    '--kv-cache-memory', '64MiB', '--threads', '1', '--shutdown-timeout', '2', ...extraArgs];
  const proc = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (d) => { output += d; });
  proc.stderr.on('data', (d) => { output += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 60000;
  let port = 0;
  while (!port) {
    const m = output.match(/serving .* on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) port = Number(m[1]);
    if (proc.exitCode !== null) throw new Error(`strata serve exited early:\n${output}`);
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`no listen line:\n${output}`); }
    await sleep(20);
  }
  const baseURL = `http://127.0.0.1:${port}`;
  while ((await fetch(`${baseURL}/health`).then((r) => r.status, () => 0)) !== 200) {
    if (Date.now() > deadline) throw new Error('health never became 200');
    await sleep(20);
  }
  return {
    baseURL, port, proc,
    log: () => output,
    // SIGTERM; the server must exit 0 within the grace period.
    async stop() {
      if (proc.exitCode !== null) return { code: proc.exitCode };
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 15000);
      const result = await exited;
      clearTimeout(timer);
      return result;
    },
  };
}

// Prometheus text -> { 'name{labels}': value } using the real Python parser
// (Debian python3-prometheus-client) when present, else a strict line parser.
function parseMetrics(text) {
  try {
    const script = 'import sys,json\n' +
      'from prometheus_client.parser import text_string_to_metric_families as p\n' +
      'out={}\n' +
      'for f in p(sys.stdin.read()):\n' +
      '  for s in f.samples:\n' +
      '    k=s.name+"{"+",".join(f"{a}={b}" for a,b in sorted(s.labels.items()) if a not in ("model_name","engine"))+"}"\n' +
      '    out[k]=s.value\n' +
      '    out["__type__"+f.name]=f.type\n' +
      'print(json.dumps(out))\n';
    return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script], { input: text }).toString());
  } catch (e) {
    if (!String(e.message).includes('No module named')) throw e;
  }
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/);
    if (!m) throw new Error(`bad metrics line: ${line}`);
    const labels = (m[2] || '{}').slice(1, -1).split(',').filter((x) => x &&
      !x.startsWith('model_name=') && !x.startsWith('engine=')).map((x) => x.replace(/"/g, '')).sort();
    out[`${m[1]}{${labels.join(',')}}`] = Number(m[3]);
  }
  return out;
}

async function metrics(baseURL) {
  return parseMetrics(await (await fetch(`${baseURL}/metrics`)).text());
}

module.exports = { startServer, requireOpenAI, metrics, sleep, BIN, MODEL };
