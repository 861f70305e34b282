'use strict';
// A small promise-based Node.js client of the tokend gRPC service.
//
// It loads the contract straight from ../../proto/tokend/v1/tokenizer.proto (no generated code),
// so it proves that the .proto file alone is enough to talk to tokend from another language.

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'proto');
const PROTO_FILE = 'tokend/v1/tokenizer.proto';

// keepCase: field names as written in the .proto; longs as Numbers (token counts fit easily);
// defaults: absent scalars come back as 0 / "" like in every other proto3 runtime.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

function loadService() {
  const definition = protoLoader.loadSync(PROTO_FILE, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition);
  return pkg.tokend.v1.TokenizerService;
}

class TokendClient {
  // target: "host:port"; options.token: bearer token sent as `authorization` metadata;
  // options.timeoutMs: per-call deadline.
  constructor(target, options = {}) {
    const Service = loadService();
    this.stub = new Service(target, grpc.credentials.createInsecure());
    this.token = options.token || null;
    this.timeoutMs = options.timeoutMs || 10000;
  }

  _call(method, request) {
    const metadata = new grpc.Metadata();
    if (this.token) {
      metadata.set('authorization', `Bearer ${this.token}`);
    }
    const deadline = new Date(Date.now() + this.timeoutMs);
    return new Promise((resolve, reject) => {
      this.stub[method](request, metadata, { deadline }, (err, response) => {
        if (err) {
          reject(err);
        } else {
          resolve(response);
        }
      });
    });
  }

  // Returns { tokenizer, results: [{ ids: [...] }, ...] }.
  encode(tokenizer, texts) {
    return this._call('Encode', { tokenizer, texts });
  }

  // Returns { tokenizer, counts, messages_count, total, fits, remaining }.
  countTokens(tokenizer, texts, messages = []) {
    return this._call('CountTokens', { tokenizer, texts, messages });
  }

  // Returns { tokenizer, text, data (Buffer), results }.
  decode(tokenizer, ids) {
    return this._call('Decode', { tokenizer, ids });
  }

  close() {
    this.stub.close();
  }
}

module.exports = { TokendClient, loadService, PROTO_ROOT, PROTO_FILE };
