#!/usr/bin/env node
// S3-compatible server on 127.0.0.1 for the object-store tier's tests and
// benchmark (@20minutes/s3rver 4.x, which verifies SigV4 signatures).
//
//   node --openssl-legacy-provider tools/s3-server/serve.cjs PORT DIR [BUCKET...]
//
// The flag is needed: s3rver encrypts ListObjectsV2 continuation tokens (any
// listing cut short by max-keys) with DES, which OpenSSL 3 only has in its
// legacy provider; without it such a listing answers 500. The script refuses
// to start without it.
//
// PORT 0 picks a free port. Objects are files under DIR (created if absent).
// Each BUCKET is created at startup. Prints "listening <port>" on stdout once
// it accepts connections; exits on SIGTERM/SIGINT or when stdin closes (so a
// test that dies does not leave it running).
//
// STRATA_S3_VERBOSE=1 logs every request and server error on stdout/stderr.
//
// Credentials: access key "STRATA-TEST-KEY", secret "strata-test-secret"
// (exported as ACCESS_KEY / SECRET_KEY for scripts that require this file).
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');

const ACCESS_KEY = 'STRATA-TEST-KEY';
const SECRET_KEY = 'strata-test-secret';

function useFixedCredentials() {
  // Only our key pair is valid: s3rver's built-in S3RVER/S3RVER is revoked.
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(ACCESS_KEY, SECRET_KEY);
}

function hasDes() {
  try {
    crypto.createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8));
    return true;
  } catch {
    return false;
  }
}

async function main(argv) {
  if (argv.length < 2) {
    process.stderr.write('usage: node --openssl-legacy-provider serve.cjs PORT DIR [BUCKET...]\n');
    process.exit(2);
  }
  if (!hasDes()) {
    process.stderr.write(
      'serve.cjs: DES is unavailable, so s3rver would answer truncated listings with 500; ' +
        'run node with --openssl-legacy-provider\n',
    );
    process.exit(2);
  }
  const port = Number(argv[0]);
  const directory = path.resolve(argv[1]);
  fs.mkdirSync(directory, { recursive: true });
  useFixedCredentials();
  const server = new S3rver({
    address: '127.0.0.1',
    port,
    directory,
    silent: !process.env.STRATA_S3_VERBOSE,
    configureBuckets: argv.slice(2).map((name) => ({ name })),
  });
  const { port: bound } = await server.run();
  process.stdout.write(`listening ${bound}\n`);

  // Open keep-alive connections would hold close() up: exit regardless soon after.
  const stop = () => {
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 200).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`serve.cjs: ${err.stack || err}\n`);
    process.exit(1);
  });
}

module.exports = { ACCESS_KEY, SECRET_KEY };
