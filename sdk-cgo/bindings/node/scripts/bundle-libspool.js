'use strict';
// bundle-libspool.js (npm's prepack): copies libspool.so.0 into lib/ of the package, as
// confluent-kafka's packages carry librdkafka, so that an installed `spool` needs neither
// SPOOL_LIBRARY nor pkg-config. The library comes from $SPOOL_LIBRARY, else the repository's
// `make build` output (sdk-cgo/build), else pkg-config's libdir of spool; without any, packing
// fails and says so.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const LIBRARY = 'libspool.so.0';

function find() {
  const env = process.env.SPOOL_LIBRARY;
  if (env) {
    if (!fs.existsSync(env)) throw new Error(`SPOOL_LIBRARY=${env}: no such file`);
    return env;
  }
  const built = path.join(__dirname, '..', '..', '..', 'build', LIBRARY);
  if (fs.existsSync(built)) return built;
  try {
    const dir = execFileSync('pkg-config', ['--variable=libdir', 'spool'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    if (dir && fs.existsSync(path.join(dir, LIBRARY))) return path.join(dir, LIBRARY);
  } catch (_) {
    // no pkg-config entry: nothing to take
  }
  throw new Error('libspool not found to bundle: run `make build` in the repository first (sdk-cgo/build/libspool.so.0), or set SPOOL_LIBRARY to a libspool.so.0');
}

const dest = path.join(__dirname, '..', 'lib', LIBRARY);
fs.mkdirSync(path.dirname(dest), { recursive: true });
fs.copyFileSync(find(), dest);
fs.chmodSync(dest, 0o755);
