// Runs @skyware/labeler's LabelerServer on 127.0.0.1 for tests, driven over
// stdin/stdout (appview/internal/reflabeler starts it).
//
//   APPVIEW_LABELER_DIR=.cache/labeler-0.2.0-<hash> LABELER_DID=did:plc:... \
//   LABELER_SIGNING_KEY=<64 hex> LABELER_PORT=41234 LABELER_DB=/tmp/x/labels.db \
//     node scripts/labeler/labeler.mjs
//
//   APPVIEW_LABELER_DIR=... node scripts/labeler/labeler.mjs --check
//
// APPVIEW_LABELER_DIR holds node_modules/ with @skyware/labeler
// (scripts/lib/labeler.sh installs it). LABELER_SIGNING_KEY is the labeler's
// secp256k1 private key in hex; LABELER_DB its SQLite file (kept across runs
// of the same labeler: its label history and sequence numbers).
//
// Once the server listens, ONE JSON line is printed on stdout:
//
//   {"ready":"http://127.0.0.1:41234"}
//
// If the port is taken the script exits with status 75 (EX_TEMPFAIL) so that
// the caller can try another. Each later stdin line is a request, answered by
// one stdout line with the same id:
//
//   {"id":1,"op":"create","label":{"uri":"at://...","val":"spam","cid":"...","neg":true,"cts":"...","exp":"..."}}
//   {"id":1,"label":{"id":3,"src":"did:plc:...","uri":"at://...","val":"spam","neg":true,"cts":"...","exp":"...","ver":1}}
//   {"id":2,"error":"..."}
//
// "create" calls LabelerServer.createLabel, which signs the label, stores it
// and sends it to every com.atproto.label.subscribeLabels subscriber; the
// answer's id is the label's sequence number in that stream. Only uri and val
// are required; cts defaults to now, neg to false.
//
// The server runs until stdin reaches end-of-file (the parent closed the pipe
// or died) or SIGTERM / SIGINT arrives. Nothing else is written to stdout.
//
// --check loads the packages, signs and stores one label in a temporary
// database (which loads libsql's native binding), prints nothing and exits 0.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const HOST = '127.0.0.1';
const EX_TEMPFAIL = 75;

const log = (...args) => console.error('labeler:', ...args);
const die = (msg, code = 1) => {
  log(msg);
  process.exit(code);
};

const dir = process.env.APPVIEW_LABELER_DIR;
if (!dir) die('APPVIEW_LABELER_DIR is not set (see scripts/lib/labeler.sh)');
if (!fs.existsSync(path.join(dir, 'node_modules', '@skyware', 'labeler'))) {
  die(`${dir} has no node_modules/@skyware/labeler (see scripts/lib/labeler.sh)`);
}
const writeStdout = process.stdout.write.bind(process.stdout);
console.log = console.error; // keep stdout for the protocol
console.info = console.error;
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

const require = createRequire(path.join(path.resolve(dir), 'package.json'));
const { LabelerServer } = await import(pathToFileURL(require.resolve('@skyware/labeler')).href);

if (process.argv.includes('--check')) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lexview-labeler-check-'));
  try {
    const server = new LabelerServer({
      did: 'did:plc:aaaaaaaaaaaaaaaaaaaaaaaa',
      signingKey: crypto.randomBytes(32).toString('hex'),
      dbPath: path.join(tmp, 'labels.db'),
    });
    const saved = await server.createLabel({ uri: 'did:plc:bbbbbbbbbbbbbbbbbbbbbbbb', val: 'check' });
    if (saved.id !== 1 || saved.sig.byteLength !== 64) throw new Error(`unexpected label ${JSON.stringify(saved)}`);
    await new Promise((resolve) => server.close(resolve));
    server.db.close();
  } catch (err) {
    die(`check failed: ${err?.stack ?? err}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(0);
}

const env = (name) => process.env[name] || die(`${name} is not set`);
const did = env('LABELER_DID');
const port = Number(env('LABELER_PORT'));
const server = new LabelerServer({ did, signingKey: env('LABELER_SIGNING_KEY'), dbPath: env('LABELER_DB') });

let closing;
const shutdown = (why, code = 0) => {
  if (closing) return closing;
  log(`closing (${why})`);
  setTimeout(() => die('close timed out after 10s'), 10000).unref();
  closing = new Promise((resolve) => server.close(resolve)).then(() => {
    server.db.close();
    process.exit(code);
  });
  return closing;
};
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

const url = await new Promise((resolve) => {
  server.start({ port, host: HOST }, (err, address) => {
    if (err?.code === 'EADDRINUSE') die(`port ${port} is taken`, EX_TEMPFAIL);
    if (err) die(`listen: ${err.stack ?? err}`);
    resolve(address);
  });
});

// The label as it is answered: the stored label with its sequence number
// (id); the signature stays out (subscribers get it from the stream).
const answer = (saved) => {
  const { sig: _sig, ...rest } = saved;
  return rest;
};

const handle = async (req) => {
  switch (req.op) {
    case 'create': {
      const { uri, val, cid, neg, cts, exp } = req.label ?? {};
      if (typeof uri !== 'string' || typeof val !== 'string') throw new Error('label needs uri and val');
      return { label: answer(await server.createLabel({ uri, val, cid, neg, cts, exp })) };
    }
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
};

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', async (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    log(`bad request line ${JSON.stringify(line)}: ${err}`);
    return;
  }
  let out;
  try {
    out = { id: req.id, ...(await handle(req)) };
  } catch (err) {
    out = { id: req.id, error: String(err?.message ?? err) };
  }
  writeStdout(JSON.stringify(out) + '\n');
});
lines.on('close', () => shutdown('stdin closed'));

writeStdout(JSON.stringify({ ready: url }) + '\n');
log(`ready: ${url} as ${did}`);
