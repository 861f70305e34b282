'use strict';
// The Node.js interop program: the scripts/interop.py cases through @grpc/grpc-js (the
// packages of client/node) against a real server. Usage:
//   node interop.js <googleapis-proto-dir> <target> <tls-target> <ca.pem>
// prints "case<TAB>result" lines. google/rpc/*.proto come from <googleapis-proto-dir> (the
// googleapis-common-protos wheel's copy) to read the status details.
const fs = require('fs');
const path = require('path');
const ROOT = path.resolve(__dirname, '..', '..');
const MODULES = path.join(ROOT, 'client', 'node', 'node_modules');
const grpc = require(path.join(MODULES, '@grpc', 'grpc-js'));
const protoLoader = require(path.join(MODULES, '@grpc', 'proto-loader'));
const protobuf = require(path.join(MODULES, 'protobufjs'));

const [googleapis, target, tlsTarget, caFile] = process.argv.slice(2);
const OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true,
  includeDirs: [path.join(ROOT, 'proto'), path.join(ROOT, 'interop', 'proto')] };
const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(
  ['tokend/v1/tokenizer.proto', 'grpc/health/v1/health.proto'], OPTIONS));

// The Python client's service config: UNAVAILABLE retried, never Train.
const SERVICE = 'tokend.v1.TokenizerService';
const CHANNEL = { 'grpc.service_config': JSON.stringify({ methodConfig: [
  { name: [{ service: SERVICE }], retryPolicy: { maxAttempts: 5, initialBackoff: '0.05s',
    maxBackoff: '2s', backoffMultiplier: 2, retryableStatusCodes: ['UNAVAILABLE'] } },
  { name: [{ service: SERVICE, method: 'Train' }] }] }),
  'grpc.ssl_target_name_override': 'localhost' };

const rpcTypes = new protobuf.Root();
rpcTypes.resolvePath = (origin, file) => (file.startsWith('google/protobuf/')
  ? file : path.join(googleapis, file));
rpcTypes.loadSync(['google/rpc/status.proto', 'google/rpc/error_details.proto']);
const RichStatus = rpcTypes.lookupType('google.rpc.Status');

const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));
const deadline = (ms = 60000) => ({ deadline: new Date(Date.now() + ms) });
const unary = (client, method, request, metadata = new grpc.Metadata(), opts = deadline()) =>
  new Promise((resolve, reject) => {
    const call = client[method](request, metadata, opts, (err, response) =>
      (err ? reject(err) : resolve({ response, call })));
    call.on('status', (status) => { call.trailer = status.metadata; });
  });

async function report(name, body) {
  let result;
  try {
    result = await body();
  } catch (err) {
    result = `ERROR ${CODE_NAMES[err.code] || ''}: ${err.details || err.message}`;
  }
  console.log(`${name}\t${String(result).replace(/\n/g, ' ')}`);
}

async function main() {
  const stub = new pkg.tokend.v1.TokenizerService(target, grpc.credentials.createInsecure(),
    CHANNEL);
  let ids = [];
  await report('count', async () => {
    const { response: r } = await unary(stub, 'CountTokens', { tokenizer: 'gpt-4o',
      texts: ['hello world', 'naïve café — 日本語 🙂'],
      messages: [{ role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in Oslo?', name: 'ann' }] });
    return `counts=${r.counts.join(',')} messages=${r.messages_count} total=${r.total}`;
  });
  await report('encode', async () => {
    const { response: r } = await unary(stub, 'Encode', { tokenizer: 'o200k_base',
      texts: ['hello <|endoftext|> world'], special_tokens: { allowed: ['<|endoftext|>'] } });
    ids = r.results[0].ids;
    return `ids=${ids.join(',')}`;
  });
  await report('decode', async () => {
    const { response: r } = await unary(stub, 'Decode', { tokenizer: 'o200k_base', ids });
    return `text=${Buffer.from(r.text, 'utf8').toString('hex')}`;
  });
  await report('chunk', () => new Promise((resolve, reject) => {
    const counts = [];
    const ends = [];
    const call = stub.Chunk({ tokenizer: 'o200k_base', max_tokens: 16,
      text: 'The quick brown fox jumps over the lazy dog. '.repeat(6) }, deadline());
    call.on('data', (r) => r.chunks.forEach((c) => { counts.push(c.count); ends.push(c.end); }));
    call.on('error', reject);
    call.on('end', () => resolve(`counts=${counts.join(',')} ends=${ends.join(',')}`));
  }));
  await report('encode_stream', () => new Promise((resolve, reject) => {
    // Pieces split 日本 and the two code points of 👍🏽 (one grapheme).
    const streamed = [];
    const call = stub.EncodeStream(deadline());
    call.on('data', (r) => streamed.push(...r.ids));
    call.on('error', reject);
    call.on('end', () => resolve(`ids=${streamed.join(',')}`));
    ['Grüße aus 日', '本', ' 👍', '🏽 and more'].forEach((text, i) =>
      call.write(i === 0 ? { tokenizer: 'o200k_base', text } : { text }));
    call.end();
  }));
  await report('refused', async () => {
    try {
      await unary(stub, 'Encode', { tokenizer: 'o200k_base', texts: ['say <|endoftext|> now'] });
    } catch (err) {
      const [bin] = err.metadata.get('grpc-status-details-bin');
      if (!bin) return 'ERROR no grpc-status-details-bin';
      let field = null;
      let reason = '';
      for (const any of RichStatus.decode(bin).details) {
        const type = rpcTypes.lookupType(any.type_url.split('/').pop());
        const detail = type.decode(any.value);
        if (type.name === 'BadRequest') field = detail.fieldViolations[0].field;
        if (type.name === 'ErrorInfo') ({ reason } = detail);
      }
      if (field === null) return 'ERROR no BadRequest violation';
      return `code=${CODE_NAMES[err.code]} field=${field} reason=${reason}`;
    }
    return 'ERROR the call was not refused';
  });
  await report('deadline', () => new Promise((resolve) => {
    // A bidirectional stream the client never closes: only the deadline can end it.
    const call = stub.EncodeStream(deadline(300));
    call.on('data', () => {});
    call.on('error', (err) => resolve(`code=${CODE_NAMES[err.code]}`));
    call.on('end', () => resolve('ERROR the call ended before its deadline'));
  }));
  await report('request_id', async () => {
    const metadata = new grpc.Metadata();
    metadata.set('x-request-id', 'interop-rid-42');
    const { call } = await unary(stub, 'CountTokens', { tokenizer: 'o200k_base',
      texts: ['hi'] }, metadata);
    await new Promise((resolve) => setImmediate(resolve));
    return `id=${call.trailer ? call.trailer.get('x-request-id')[0] : ''}`;
  });
  await report('health', async () => {
    const health = new pkg.grpc.health.v1.Health(target, grpc.credentials.createInsecure());
    const { response } = await unary(health, 'Check', { service: SERVICE });
    health.close();
    return `status=${response.status}`;
  });
  await report('tls', async () => {
    const creds = grpc.credentials.createSsl(fs.readFileSync(caFile));
    const secure = new pkg.tokend.v1.TokenizerService(tlsTarget, creds, CHANNEL);
    try {
      const { response } = await unary(secure, 'CountTokens', { tokenizer: 'o200k_base',
        texts: ['hello world'] });
      return `total=${response.total}`;
    } finally {
      secure.close();
    }
  });
  stub.close();
}

main().catch((err) => { console.error(err); process.exit(2); });
