// Runs the Bluesky reference PDS with an in-memory PLC directory
// (TestNetworkNoAppView from @atproto/dev-env) on 127.0.0.1, for tests.
//
//   APPVIEW_DEVENV_DIR=.cache/devenv-0.3.215 node scripts/devenv/start-network.mjs
//
// APPVIEW_DEVENV_DIR is the directory holding node_modules/ with the pinned
// packages (scripts/lib/devenv.sh installs it). Once both servers listen, ONE
// JSON line is printed on stdout:
//
//   {"pds":"http://127.0.0.1:P","pdsPublicUrl":"http://localhost:P",
//    "pdsDid":"did:web:localhost","plc":"http://127.0.0.1:Q","adminPassword":"..."}
//
// pds and plc are the loopback addresses to connect to. pdsPublicUrl is what
// the PDS announces (the #atproto_pds endpoint in DID documents, its OAuth
// issuer): dev-env hard-codes http://localhost:<port> for it.
//
// Afterwards, each PLC operation token the PDS would e-mail (requested with
// com.atproto.identity.requestPlcOperationSignature) is printed on stdout
// as one more JSON line, so that tests can read it:
//
//   {"mail":"plc_operation","to":"alice@example.test","token":"ABCDE-12345"}
//
// The network runs until stdin reaches end-of-file (the parent closed the
// pipe or died) or SIGTERM / SIGINT arrives; then it is closed and its data
// directory removed. Nothing else is written to stdout: diagnostics go to
// stderr (PDS logs too, with LOG_ENABLED=true).
//
// Invites are not required (dev-env sets inviteRequired: false); accounts are
// created with com.atproto.server.createAccount, handles ending in ".test".

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const HOST = '127.0.0.1';

const log = (...args) => console.error('start-network:', ...args);
const die = (msg) => {
  log(msg);
  process.exit(1);
};

// --- force every TCP server onto 127.0.0.1 ----------------------------------
// The PDS and PLC servers call listen(port) (all interfaces) and have no bind
// option, so listen itself is wrapped. Unix sockets / pipes and listening on
// existing handles are left alone.
const origListen = net.Server.prototype.listen;
const tcpServers = new Set();
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  const cb = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
  let options;
  if (first !== null && typeof first === 'object') {
    if (first.path != null || first.fd != null || first.handle != null || first._handle != null) {
      return origListen.apply(this, cb ? [...args, cb] : args);
    }
    options = { ...first, host: HOST };
  } else if (typeof first === 'string' && !/^\d+$/.test(first)) {
    return origListen.apply(this, cb ? [...args, cb] : args); // pipe / unix socket path
  } else {
    // listen([port[, host[, backlog]]][, callback])
    options = { port: first == null ? 0 : Number(first), host: HOST };
    const backlog = args.slice(1).find((a) => typeof a === 'number');
    if (backlog !== undefined) options.backlog = backlog;
  }
  tcpServers.add(this);
  return origListen.call(this, options, ...(cb ? [cb] : []));
};

// A port free on 127.0.0.1 right now (others could take it before use; the
// window is a few milliseconds).
const freePorts = async (n) => {
  const servers = [];
  try {
    for (let i = 0; i < n; i++) {
      const s = net.createServer();
      servers.push(s);
      await new Promise((resolve, reject) => {
        s.once('error', reject);
        origListen.call(s, { port: 0, host: HOST }, resolve);
      });
    }
    return servers.map((s) => s.address().port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(() => resolve()))));
  }
};

// --- load dev-env from the cache ---------------------------------------------
const devenvDir = process.env.APPVIEW_DEVENV_DIR;
if (!devenvDir) die('APPVIEW_DEVENV_DIR is not set (see scripts/lib/devenv.sh)');
if (!fs.existsSync(path.join(devenvDir, 'node_modules', '@atproto', 'dev-env'))) {
  die(`${devenvDir} has no node_modules/@atproto/dev-env (see scripts/lib/devenv.sh)`);
}
// PDS logs (off unless LOG_ENABLED=true) would go to stdout: keep it for the JSON line.
if (!process.env.LOG_DESTINATION) process.env.LOG_DESTINATION = '/dev/stderr';
// Anything printed with console.log by the libraries goes to stderr too.
const writeStdout = process.stdout.write.bind(process.stdout);
console.log = console.error;
console.info = console.error;

const require = createRequire(path.join(path.resolve(devenvDir), 'package.json'));
const { TestNetworkNoAppView } = require('@atproto/dev-env');
const { ADMIN_PASSWORD } = require('@atproto/dev-env/dist/const');

// --- start -------------------------------------------------------------------
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lexview-devenv-'));
fs.mkdirSync(path.join(dataDir, 'pds'));
// dev-env creates a directory of its own in os.tmpdir() (unused, as the PDS
// is given dataDirectory): keep it inside dataDir too.
process.env.TMPDIR = dataDir;
let network;
let closing;

const shutdown = (why, exitCode = 0) => {
  if (closing) return closing;
  log(`closing (${why})`);
  const timer = setTimeout(() => {
    log('close timed out after 15s; exiting');
    process.exit(1);
  }, 15000);
  timer.unref();
  closing = (async () => {
    let code = exitCode;
    try {
      if (network) await network.close();
    } catch (err) {
      log('close failed:', err);
      code = 1;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(code);
  })();
  return closing;
};

// When the parent dies its end of our stdout/stderr pipes goes too: writing
// then fails with EPIPE, which must not crash the shutdown.
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
process.stdin.on('end', () => shutdown('stdin closed'));
process.stdin.on('error', () => shutdown('stdin error'));
process.stdin.resume();

try {
  const [plcPort, pdsPort] = await freePorts(2);
  network = await TestNetworkNoAppView.create({
    plc: { port: plcPort },
    pds: {
      port: pdsPort,
      didPlcUrl: `http://${HOST}:${plcPort}`,
      dataDirectory: path.join(dataDir, 'pds'),
      blobstoreDiskLocation: path.join(dataDir, 'blobs'),
    },
  });
} catch (err) {
  log('starting the network failed:', err);
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(1);
}
if (closing) await closing; // stdin closed or a signal came while starting

for (const s of tcpServers) {
  const addr = s.address();
  if (addr && addr.address !== HOST) {
    await shutdown(`a server listens on ${addr.address}:${addr.port}, not ${HOST}`, 1);
  }
}

// The PDS's mailer: PLC operation tokens go to stdout (see above).
const mailer = network.pds.ctx.mailer;
mailer.sendPlcOperation = async (params, mailOpts) => {
  writeStdout(JSON.stringify({ mail: 'plc_operation', to: mailOpts.to, token: params.token }) + '\n');
};

writeStdout(
  JSON.stringify({
    pds: `http://${HOST}:${network.pds.port}`,
    pdsPublicUrl: network.pds.ctx.cfg.service.publicUrl,
    pdsDid: network.pds.ctx.cfg.service.did,
    plc: `http://${HOST}:${network.plc.port}`,
    adminPassword: ADMIN_PASSWORD,
  }) + '\n',
);
log(`ready: PDS ${network.pds.port}, PLC ${network.plc.port} on ${HOST} (data: ${dataDir})`);
