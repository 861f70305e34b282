#!/usr/bin/env node
'use strict';
// Round-trip texts through a tokend server: Encode, CountTokens and Decode, printed as JSON.
//
//   echo '{"tokenizer": "o200k_base", "texts": ["hello world"]}' | node cli.js --target 127.0.0.1:50051
//   ... | node cli.js --target dns:///tokend-headless.NS.svc:50051 --load-balancing round_robin
//
// Input (stdin, JSON): { tokenizer, texts: [string], messages?: [{role, content, name?}],
//                        add_special_tokens?: bool (Encode and CountTokens of the texts),
//                        count?: {model?, tools?, tool_choice?, max_tokens?},
//                        quote?: {model, tools?, tool_choice?, max_output_tokens?, cache?,
//                                 provider?, vendor?, vendor_body?} (of `messages`),
//                        truncate?: {text, max_tokens, keep?, marker?},
//                        chunk?: {text, max_tokens, overlap?},
//                        train?: {name, vocab_size, model?, wordpiece_score?, special_tokens?,
//                                 corpus},
//                        report?: {tokenizers: [string], texts?: [string], languages?},
//                        lint?: {tokenizer, depth?, list_partial?, max_findings?},
//                        diff?: {a, b, top?},
//                        repeat?: N (then N more CountTokens calls of the texts),
//                        repeat_interval_ms?: pause before each repeated call }.
// With train, the job runs first (needs --token when the server sets one) and is awaited;
// an empty tokenizer then means the version it published.
// Output (stdout, JSON): { tokenizer, ids: [[int]], counts: [int], total, messages_count,
//                          decoded: [string], count?: CountTokensResponse,
//                          quote?: QuoteResponse,
//                          truncate?: TruncateResponse, chunks?: [TextChunk],
//                          train?: TrainJob, report?: ReportResponse,
//                          lint?: LintResponse, diff?: DiffResponse,
//                          repeated?: [total of each repeated call] }.
// On an RPC error: exit status 1 and { error: { code, details } } on stdout.

const { TokendClient } = require('./index');

function parseArgs(argv) {
  const args = { target: '127.0.0.1:50051', token: null, timeoutMs: 10000, loadBalancing: null };
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (flag === '--target') {
      args.target = value;
      i += 1;
    } else if (flag === '--token') {
      args.token = value;
      i += 1;
    } else if (flag === '--load-balancing') {
      args.loadBalancing = value;
      i += 1;
    } else if (flag === '--timeout-ms') {
      args.timeoutMs = Number(value);
      i += 1;
    } else {
      throw new Error(`unknown argument ${JSON.stringify(flag)} (known: --target, --token, --timeout-ms, --load-balancing)`);
    }
  }
  return args;
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on('data', (chunk) => chunks.push(chunk));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const input = JSON.parse(await readStdin());
  const client = new TokendClient(args.target, {
    token: args.token, timeoutMs: args.timeoutMs, loadBalancing: args.loadBalancing,
  });
  try {
    let trained = null;
    if (input.train) {
      const { corpus, ...config } = input.train;
      const queued = await client.train(config, corpus);
      trained = await client.waitTrainJob(queued.job_id);
      if (!input.tokenizer) {
        input.tokenizer = trained.published;
      }
    }
    const framing = { addSpecialTokens: Boolean(input.add_special_tokens) };
    const encoded = await client.encode(input.tokenizer, input.texts, framing);
    const counted = await client.countTokens(input.tokenizer, input.texts, input.messages || [],
      framing);
    const decoded = [];
    for (const result of encoded.results) {
      const reply = await client.decode(input.tokenizer, result.ids);
      decoded.push(reply.text);
    }
    const output = {
      tokenizer: encoded.tokenizer,
      ids: encoded.results.map((r) => r.ids),
      counts: counted.counts,
      messages_count: counted.messages_count,
      total: counted.total,
      decoded,
    };
    if (trained) {
      output.train = trained;
    }
    if (input.count) {
      const c = input.count;
      output.count = await client.countTokens(input.tokenizer, [], input.messages || [], {
        model: c.model, tools: c.tools, toolChoice: c.tool_choice, maxTokens: c.max_tokens,
      });
    }
    if (input.quote) {
      const q = input.quote;
      output.quote = await client.quote(q.model, input.messages || [], {
        tools: q.tools, toolChoice: q.tool_choice, maxOutputTokens: q.max_output_tokens,
        cache: q.cache, provider: q.provider, vendor: q.vendor, vendorBody: q.vendor_body,
      });
    }
    if (input.truncate) {
      const t = input.truncate;
      output.truncate = await client.truncate(input.tokenizer, t.text, t.max_tokens,
        { keep: t.keep, marker: t.marker });
    }
    if (input.chunk) {
      const c = input.chunk;
      output.chunks = await client.chunk(input.tokenizer, c.text, c.max_tokens, { overlap: c.overlap });
    }
    if (input.report) {
      const r = input.report;
      output.report = await client.report(r.tokenizers, { texts: r.texts, languages: r.languages });
    }
    if (input.lint) {
      const l = input.lint;
      output.lint = await client.lint(l.tokenizer, {
        depth: l.depth, listPartial: l.list_partial, maxFindings: l.max_findings,
      });
    }
    if (input.diff) {
      output.diff = await client.diff(input.diff.a, input.diff.b, { top: input.diff.top });
    }
    if (input.repeat) {
      output.repeated = [];
      for (let i = 0; i < input.repeat; i += 1) {
        if (input.repeat_interval_ms) {
          await new Promise((done) => { setTimeout(done, input.repeat_interval_ms); });
        }
        const reply = await client.countTokens(input.tokenizer, input.texts);
        output.repeated.push(reply.total);
      }
    }
    process.stdout.write(`${JSON.stringify(output)}\n`);
    return 0;
  } catch (err) {
    if (err && typeof err.code === 'number') {
      process.stdout.write(`${JSON.stringify({ error: { code: err.code, details: err.details } })}\n`);
      return 1;
    }
    throw err;
  } finally {
    client.close();
  }
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (err) => {
    process.stderr.write(`tokend-node: ${err && err.stack ? err.stack : err}\n`);
    process.exitCode = 2;
  },
);
